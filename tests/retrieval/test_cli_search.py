"""search and evaluate through the command line: a folder that is not a run, a query that is not
text, a run whose evaluation was edited, a split evaluated twice; anything printed from the user's
data is escaped."""

from __future__ import annotations

import json

import pytest

from labs.retrieval.cli import _shown
from labs.retrieval.contract import verify_contract
from tests.retrieval.conftest import cli, one_line


def test_an_empty_query_is_refused(capsys, tmp_path):
    code, _, err = cli(capsys, "search", str(tmp_path), "  ")
    assert code == 2 and "query must be a non-empty string" in one_line(err)


def test_search_and_evaluate_refuse_a_folder_that_is_not_a_run(capsys, tmp_path, data_dir):
    for argv in (["search", str(tmp_path), "cancel"], ["evaluate", str(tmp_path), "--data", str(data_dir)]):
        code, _, err = cli(capsys, *argv)
        assert code == 2 and "index_contract.json" in one_line(err)


@pytest.mark.parametrize("query", ["cancel \udcff my plan", "\udcc3\udca9t\udce9"], ids=["one-byte", "latin-1"])
def test_a_query_with_bytes_that_are_not_utf8_is_one_line(capsys, sealed, query):
    """What a shell passes for such bytes (surrogate escapes) is refused before the model loads."""
    code, _, err = cli(capsys, "search", str(sealed), query)
    line = one_line(err)
    assert code == 2 and "query holds '\\udc" in line and "not UTF-8" in line


def test_search_prints_ids_on_one_line_each(capsys, sealed):
    code, out, _ = cli(capsys, "search", str(sealed), "cancel my plan", "--k", "3")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 3 and all(line.split()[0] == f"{i}." for i, line in enumerate(lines, 1))


@pytest.mark.parametrize("text, shown", [
    ("evil\n 1. 0.999  fake-doc", "evil\\n 1. 0.999  fake-doc"), ("a\tb\x1b[2Jc", "a\\tb\\x1b[2Jc"),
    ("caf\u00e9 \u202e", "caf\u00e9 \\u202e"), ("bytes \udcff", "bytes \\udcff"), ("plain", "plain"),
])
def test_text_from_the_user_is_printed_escaped(text, shown):
    assert _shown(text) == shown and "\n" not in _shown(text)


def test_an_edited_evaluation_is_refused_and_a_split_is_evaluated_once(capsys, run, data_dir):
    code, out, err = run_cli(capsys, "evaluate", run, "--data", data_dir)
    assert code == 0 and out.startswith("system") and err == ""
    contract = verify_contract(run)
    assert set(contract["evaluations"]) == {"val_metrics.json", "val_rankings.json"}
    code, _, err = run_cli(capsys, "evaluate", run, "--data", data_dir)
    assert code == 2 and "the val split was evaluated already" in one_line(err)
    original = (run / "val_metrics.json").read_text()
    edited = json.loads(original)
    edited["mrr@5"] = 1.0
    (run / "val_metrics.json").write_text(json.dumps(edited, indent=1) + "\n")
    for argv in (["search", run, "cancel my plan"], ["evaluate", run, "--data", data_dir, "--split", "test"]):
        code, _, err = run_cli(capsys, *argv)
        assert code == 2 and "val_metrics.json does not match its SHA-256 in index_contract.json (field " \
                             "'evaluations')" in one_line(err)
    (run / "val_metrics.json").unlink()  # deleting it does not reopen the split either
    code, _, err = run_cli(capsys, "evaluate", run, "--data", data_dir)
    assert code == 2 and "val_metrics.json is listed in index_contract.json but missing" in one_line(err)
    (run / "val_metrics.json").write_text(original)
    assert run_cli(capsys, "evaluate", run, "--data", data_dir, "--split", "test")[0] == 0
    assert set(verify_contract(run)["evaluations"]) == {f"{s}_{k}.json" for s in ("val", "test")
                                                         for k in ("metrics", "rankings")}


def test_an_evaluation_killed_before_it_was_recorded_is_named_and_evaluate_replaces_it(capsys, run, data_dir,
                                                                                         monkeypatch):
    (run / "val_rankings.json").write_text("{}")  # what a kill between the two moves would leave
    code, _, err = run_cli(capsys, "search", run, "cancel my plan")
    assert code == 2 and "run evaluate --split val again to replace it" in one_line(err)
    monkeypatch.chdir(run)  # from inside the run: its lock and staging folder still go beside it
    assert run_cli(capsys, "evaluate", ".", "--data", data_dir)[0] == 0
    assert json.loads((run / "val_rankings.json").read_text()) and run_cli(capsys, "search", ".", "cancel")[0] == 0
    assert sorted(p.name for p in run.parent.iterdir()) == ["run"]


def run_cli(capsys, *argv):
    return cli(capsys, *(str(a) for a in argv))
