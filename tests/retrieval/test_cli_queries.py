"""Many queries at once: ``search --queries FILE --out FILE`` ranks a 1,000-query file in batches
and writes one line per query, whole or not at all; every bad line is refused before the model loads,
naming the file and line."""

from __future__ import annotations

import errno
import json
import os

import pytest

from tests.retrieval.conftest import cli, left_in, one_line
from tests.retrieval.fielded import PRIVATE_ID, PRIVATE_TEXT, fielded_data, fielded_run  # noqa: F401


def write_rows(path, rows) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(path)


def test_a_thousand_queries_are_ranked_and_written_one_line_each(capsys, fielded_run, tmp_path):
    rows = [{"id": f"q{i}", "text": PRIVATE_TEXT if i % 10 == 0 else f"How do I cancel plan number {i}?"}
            for i in range(1000)]
    for row in rows[::20]:
        row["where"] = ["access=public"]
    queries = write_rows(tmp_path / "ask.jsonl", rows)
    out = tmp_path / "results" / "answers.jsonl"  # a missing folder is made
    code, printed, err = cli(capsys, "search", str(fielded_run), "--queries", queries, "--out", str(out), "--k", "3")
    assert code == 0 and printed == f"wrote 1000 result lines to {out}\n", err
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["id"] for x in lines] == [r["id"] for r in rows]
    assert all(len(x["results"]) == 3 and x["ranking"] == "dense" for x in lines)
    for row, line in zip(rows, lines):
        assert line["where"] == row.get("where", [])
        if row["text"] == PRIVATE_TEXT:  # the exact nearest neighbour unless the filter removes it
            assert (line["results"][0]["doc_id"] == PRIVATE_ID) == (not row.get("where"))
    assert sorted(p.name for p in out.parent.iterdir()) == ["answers.jsonl"]


def test_the_commands_where_applies_to_every_query_and_hybrid_works(capsys, fielded_run, tmp_path):
    queries = write_rows(tmp_path / "q.jsonl", [{"id": "a", "text": PRIVATE_TEXT},
                                                {"query_id": "b", "text": "cancel", "where": ["product=Iris"]}])
    out = tmp_path / "out.jsonl"
    code, _, err = cli(capsys, "search", str(fielded_run), "--queries", queries, "--out", str(out), "--where",
                       "access=public", "--ranker", "hybrid", "--k", "60")
    assert code == 0, err
    a, b = (json.loads(x) for x in out.read_text().splitlines())
    assert a["where"] == ["access=public"] and PRIVATE_ID not in {r["doc_id"] for r in a["results"]}
    assert b["where"] == ["access=public", "product=Iris"] and {r["doc_id"].split("-")[0] for r in b["results"]} == {"iris"}
    assert a["ranking"] == "hybrid (rrf, k=60)"


@pytest.mark.parametrize("rows, message", [
    (['{"id": "a", "text": "x"', ], "ask.jsonl line 1: malformed JSON"),
    ([{"id": "a", "text": "x"}, {"text": "y"}], "ask.jsonl line 2: each query needs an 'id'"),
    ([{"id": "a", "text": "x"}, {"id": "a", "text": "y"}], "ask.jsonl line 2: duplicate id 'a' (first on line 1)"),
    ([{"id": "a", "text": " "}], "ask.jsonl line 1: field 'text' must be a non-empty string"),
    ([{"id": "a\nb", "text": "x"}], "ask.jsonl line 1: each query needs an 'id': a non-empty printable string"),
    ([{"id": "a", "text": "Instruct: find\nQuery: x"}], "ask.jsonl line 1: query already starts with 'Instruct:'"),
    ([{"id": "a", "text": "x", "where": "access=public"}], "ask.jsonl line 1: field 'where' must be a list"),
    ([{"id": "a", "text": "x", "where": ["access"]}], "ask.jsonl line 1: field 'where' takes KEY=VALUE"),
    ([{"id": "a", "text": "x"}, {"id": "b", "text": "x", "where": ["colour=red"]}],
     "ask.jsonl line 2: field 'where' 'colour=red': the index has no field 'colour'"),
    ([{"id": "a", "text": "x", "where": ["year=soon"]}], "ask.jsonl line 1: field 'where' 'year=soon': field 'year' "
                                                          "holds numbers"),
    ([], "ask.jsonl: the file has no queries"),
])
def test_a_bad_line_is_one_line_naming_the_file_and_line(capsys, fielded_run, tmp_path, rows, message):
    queries = write_rows(tmp_path / "ask.jsonl", rows)
    code, out, err = cli(capsys, "search", str(fielded_run), "--queries", queries, "--out", str(tmp_path / "o.jsonl"))
    assert code == 2 and out == "" and message in one_line(err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ask.jsonl"]


@pytest.mark.parametrize("argv, message", [
    (["cancel", "--queries", "Q"], "give either QUERY or --queries FILE, not both"),
    (["--queries", "Q"], "--queries needs --out FILE.jsonl"),
    (["cancel", "--out", "O"], "--out applies to --queries FILE"),
    ([], "give a QUERY, or --queries FILE.jsonl --out FILE.jsonl"),
    (["--queries", "missing.jsonl", "--out", "O"], "missing.jsonl: file not found"),
    (["--queries", "Q", "--out", "O", "--where", "access"], "--where takes KEY=VALUE"),
    (["--queries", "Q", "--out", "O", "--where", "colour=red"], "--where 'colour=red': the index has no field"),
    (["--queries", "Q", "--out", "O", "--batch-size", "0"], "--batch-size must be an integer >= 1"),
])
def test_a_bad_combination_of_flags_is_one_line(capsys, fielded_run, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    write_rows(tmp_path / "Q", [{"id": "a", "text": "cancel"}])
    code, out, err = cli(capsys, "search", str(fielded_run), *argv)
    assert code == 2 and out == "" and message in one_line(err), err
    assert not (tmp_path / "O").exists()


def test_an_existing_output_is_never_overwritten(capsys, fielded_run, tmp_path):
    queries = write_rows(tmp_path / "q.jsonl", [{"id": "a", "text": "cancel"}])
    (tmp_path / "o.jsonl").write_text("mine\n")
    code, _, err = cli(capsys, "search", str(fielded_run), "--queries", queries, "--out", str(tmp_path / "o.jsonl"))
    assert code == 2 and "o.jsonl" in one_line(err) and (tmp_path / "o.jsonl").read_text() == "mine\n"


def test_a_failed_write_leaves_nothing(capsys, fielded_run, tmp_path, monkeypatch):
    queries = write_rows(tmp_path / "q.jsonl", [{"id": "a", "text": "cancel"}])
    out = tmp_path / "new" / "o.jsonl"

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    code, _, err = cli(capsys, "search", str(fielded_run), "--queries", queries, "--out", str(out))
    assert code == 1 and "No space left on device" in one_line(err) and "nothing was left half-written" in err
    assert left_in(tmp_path) == [str(tmp_path / "q.jsonl")]
