"""The data files through the command line: a file that is not what it should be is refused in one
line naming the file and line (exit 2) and saying what the format is; ids that would be printed are
refused at load if they hold control characters; make-data writes a data set the other commands accept.
The checks themselves are tested in test_data.py."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.retrieval.conftest import cli, one_line


def test_missing_or_undecodable_data_is_one_line(capsys, tmp_path, data_dir):
    code, _, err = cli(capsys, "baseline", "--data", str(tmp_path / "nowhere"))
    assert code == 2 and "nowhere" in one_line(err)
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in ("corpus.jsonl", "queries.jsonl", "train_pairs.jsonl"):
        (bad / name).write_bytes((data_dir / name).read_bytes())
    (bad / "queries.jsonl").write_bytes(b'{"query_id": "\xff"}\n' + (data_dir / "queries.jsonl").read_bytes())
    code, _, err = cli(capsys, "baseline", "--data", str(bad))
    assert code == 2 and "queries.jsonl" in one_line(err)


def test_make_data_from_docs_builds_a_data_set_the_other_commands_accept(capsys, tmp_path):
    from labs.retrieval.data import load_dataset

    out = tmp_path / "docs"
    code, stdout, _ = cli(capsys, "make-data", "--from-docs", "--out", str(out), "--max-per-library", "6",
                          "--splits", "numpy=train,scipy=val,torch=test")
    assert code == 0 and '"val": {"scipy": ' in stdout and "versions:" in stdout
    data = load_dataset(out)
    assert {q["split"] for q in data.queries} == {"train", "val", "test"} and len(data.train_pairs) > 0
    assert json.loads((out / "metadata.json").read_text())["splits"]["torch"] == "test"


@pytest.mark.parametrize("argv, message", [
    (["--from-docs", "--splits", "numpy"], "--splits takes LIB=SPLIT pairs"),
    (["--from-docs", "--splits", "numpy=train,numpy=val"], "names 'numpy' twice"),
    (["--from-docs", "--splits", "numpy=train,scipy=val,not_a_library_here=test"], "not_a_library_here"),
    (["--from-docs", "--max-per-library", "1"], "--max-per-library"),
    (["--splits", "numpy=train"], "only apply with --from-docs"),
])
def test_make_data_from_docs_bad_input_is_one_line(capsys, tmp_path, argv, message):
    code, _, err = cli(capsys, "make-data", "--out", str(tmp_path / "d"), *argv)
    assert code == 2 and message in one_line(err) and not (tmp_path / "d").exists()


def _copy(data_dir: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(data_dir, tmp_path / "data"))


@pytest.mark.parametrize("command", ["baseline", "train"])
def test_a_corpus_written_as_one_json_array_says_the_format(capsys, tmp_path, data_dir, command):
    data = _copy(data_dir, tmp_path)
    rows = [json.loads(line) for line in (data / "corpus.jsonl").read_text().splitlines()]
    (data / "corpus.jsonl").write_text(json.dumps(rows, indent=2))
    argv = ["baseline", "--data", str(data)] if command == "baseline" else \
        ["train", "--data", str(data), "--out", str(tmp_path / "r"), "--epochs", "0"]
    code, _, err = cli(capsys, *argv)
    line = one_line(err)
    assert code == 2 and line.startswith("error: corpus.jsonl line 1: malformed JSON")
    assert "looks like one JSON array: each line of a .jsonl file must be one whole JSON object (JSON Lines)" in line
    assert not (tmp_path / "r").exists()


def test_cr_only_line_ends_say_the_format(capsys, tmp_path, data_dir):
    data = _copy(data_dir, tmp_path)
    (data / "queries.jsonl").write_bytes((data / "queries.jsonl").read_bytes().replace(b"\n", b"\r"))
    code, _, err = cli(capsys, "baseline", "--data", str(data))
    assert code == 2 and "queries.jsonl line 1: malformed JSON" in one_line(err) and "CR only" in err


def test_a_data_file_that_is_a_folder_is_named_as_a_folder(capsys, tmp_path, data_dir):
    data = _copy(data_dir, tmp_path)
    (data / "corpus.jsonl").unlink()
    (data / "corpus.jsonl").mkdir()
    code, _, err = cli(capsys, "baseline", "--data", str(data))
    assert code == 2 and "corpus.jsonl" in one_line(err) and "is a folder, not a file" in err


def test_a_doc_id_with_a_newline_is_refused_when_loaded(capsys, tmp_path, data_dir):
    """Otherwise search would print it raw and its output could be forged ('evil\\n 1. 0.999  fake-doc')."""
    data = _copy(data_dir, tmp_path)
    rows = [json.loads(line) for line in (data / "corpus.jsonl").read_text().splitlines()]
    rows[5]["doc_id"] = "evil\n 1. 0.999  fake-doc"
    (data / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for argv in (["baseline", "--data", str(data)],
                 ["train", "--data", str(data), "--out", str(tmp_path / "r"), "--epochs", "0"]):
        code, _, err = cli(capsys, *argv)
        line = one_line(err)
        assert code == 2 and "corpus.jsonl line 6: field 'doc_id' holds 'evil\\n 1. 0.999  fake-doc'" in line
    assert not (tmp_path / "r").exists()


def test_a_data_folder_given_as_a_file_or_a_missing_one(capsys, tmp_path, data_dir):
    code, _, err = cli(capsys, "baseline", "--data", str(data_dir / "corpus.jsonl"))
    assert code == 2 and "is not a folder" in one_line(err)


@pytest.mark.parametrize("kwargs, message", [
    ({"max_per_library": 2.5}, "max_per_library (--max-per-library) must be an integer >= 2, got 2.5"),
    ({"max_per_library": True}, "must be an integer >= 2, got True"),
    ({"splits": "numpy=train"}, "splits must map each library to a split"),
    ({"splits": {"numpy": "train", "scipy": "val", "torch": "bogus"}}, "split of 'torch' must be one of"),
])
def test_build_docs_dataset_refuses_bad_arguments_before_collecting(tmp_path, monkeypatch, kwargs, message):
    import labs.retrieval.docs_corpus as docs_corpus

    monkeypatch.setattr(docs_corpus, "collect_pairs", lambda *_: pytest.fail("collected before checking"))
    with pytest.raises(ValueError, match=re.escape(message)):
        docs_corpus.build_docs_dataset(tmp_path / "d", **kwargs)
    assert list(tmp_path.iterdir()) == []
