"""The help-desk fixture and the JSONL checks: shapes of the fixture, round trip, every error names file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labs.retrieval.data import (
    DataError, FILES, load_dataset, read_jsonl, write_dataset,
)
from labs.retrieval.helpdesk import KINDS, make_helpdesk, PRODUCTS


@pytest.fixture()
def data_dir(tmp_path) -> Path:
    return write_dataset(make_helpdesk(), tmp_path / "data")


def rows(folder: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (folder / name).read_text().splitlines() if line.strip()]


def rewrite(folder: Path, name: str, new_rows: list) -> None:
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in new_rows))


# ---- the fixture ---------------------------------------------------------------


def test_fixture_sizes_and_splits():
    data = make_helpdesk()
    assert len(data.corpus) == 60 and len(data.queries) == 180
    assert len(data.train_pairs) == 108
    assert len({p["doc_id"] for p in data.train_pairs}) == 36
    assert len(PRODUCTS) == 10 and len(KINDS) == 6
    groups = {split: {d["group"] for d in data.corpus if d["split"] == split} for split in ("train", "val", "test")}
    assert [len(groups[s]) for s in ("train", "val", "test")] == [6, 2, 2]
    assert len(data.split_queries("val")) == 36 and len(data.split_queries("test")) == 36
    assert all(q["text"].count(d["group"]) >= 1 for q in data.queries for d in data.corpus
               if d["doc_id"] in q["relevant_doc_ids"])  # every question names its product
    text = {d["doc_id"]: d["text"] for d in data.corpus}
    assert all(p["positive"] == text[p["doc_id"]] for p in data.train_pairs)


def test_fixture_is_deterministic_and_round_trips(data_dir, tmp_path):
    again = write_dataset(make_helpdesk(), tmp_path / "again")
    assert load_dataset(data_dir).sha256 == load_dataset(again).sha256
    loaded = load_dataset(data_dir)
    assert loaded.corpus == make_helpdesk().corpus
    assert loaded.qrels("val")["iris-cancel-q1"] == {"iris-cancel"}


def test_write_refuses_a_non_empty_folder(data_dir):
    before = load_dataset(data_dir).sha256
    with pytest.raises(ValueError, match="not empty"):
        write_dataset(make_helpdesk(), data_dir)
    assert load_dataset(data_dir).sha256 == before


def test_blank_lines_are_skipped_and_line_numbers_kept(tmp_path):
    folder = write_dataset(make_helpdesk(), tmp_path / "d")
    assert read_jsonl(folder / "corpus.jsonl")[0][0] == 1
    blank = (folder / "queries.jsonl").read_text() + "\n\n"
    (folder / "queries.jsonl").write_text(blank)  # trailing blank lines are fine
    load_dataset(folder)


# ---- every validation error ----------------------------------------------------


def _dup_doc(f):
    c = rows(f, "corpus.jsonl")
    rewrite(f, "corpus.jsonl", c + [c[0]])


def _dup_query(f):
    q = rows(f, "queries.jsonl")
    rewrite(f, "queries.jsonl", q[:3] + [q[0]] + q[3:])


def _missing_field(f):
    c = rows(f, "corpus.jsonl")
    del c[4]["text"]
    rewrite(f, "corpus.jsonl", c)


def _wrong_type(f):
    q = rows(f, "queries.jsonl")
    q[1]["relevant_doc_ids"] = "aster-password"
    rewrite(f, "queries.jsonl", q)


def _wrong_item_type(f):
    q = rows(f, "queries.jsonl")
    q[1]["relevant_doc_ids"] = [7]
    rewrite(f, "queries.jsonl", q)


def _empty_relevant(f):
    q = rows(f, "queries.jsonl")
    q[2]["relevant_doc_ids"] = []
    rewrite(f, "queries.jsonl", q)


def _malformed(f):
    lines = (f / "train_pairs.jsonl").read_text().splitlines()
    lines[5] = lines[5][:-1]
    (f / "train_pairs.jsonl").write_text("\n".join(lines) + "\n")


def _not_object(f):
    lines = (f / "corpus.jsonl").read_text().splitlines()
    lines[1] = "[1, 2]"
    (f / "corpus.jsonl").write_text("\n".join(lines) + "\n")


def _unknown_relevant(f):
    q = rows(f, "queries.jsonl")
    q[6]["relevant_doc_ids"] = ["no-such-doc"]
    rewrite(f, "queries.jsonl", q)


def _cross_split_relevant(f):
    q = rows(f, "queries.jsonl")
    q[0]["relevant_doc_ids"] = ["iris-cancel"]  # a train query judged by a val document
    rewrite(f, "queries.jsonl", q)


def _positive_differs(f):
    p = rows(f, "train_pairs.jsonl")
    p[3]["positive"] = p[3]["positive"] + " "
    rewrite(f, "train_pairs.jsonl", p)


def _non_train_pair(f):
    c = {d["doc_id"]: d for d in rows(f, "corpus.jsonl")}
    p = rows(f, "train_pairs.jsonl")
    p[2] = {"query": "stop renewals", "positive": c["iris-cancel"]["text"], "doc_id": "iris-cancel", "group": "Iris"}
    rewrite(f, "train_pairs.jsonl", p)


def _pair_group(f):
    p = rows(f, "train_pairs.jsonl")
    p[0]["group"] = "Astra"
    rewrite(f, "train_pairs.jsonl", p)


def _group_spans(f):
    c = rows(f, "corpus.jsonl")
    c[1]["split"] = "val"
    rewrite(f, "corpus.jsonl", c)


def _bad_split(f):
    c = rows(f, "corpus.jsonl")
    c[0]["split"] = "dev"
    rewrite(f, "corpus.jsonl", c)


def _empty_split(f):
    c = [d for d in rows(f, "corpus.jsonl") if d["split"] != "test"]
    q = [x for x in rows(f, "queries.jsonl") if x["split"] != "test"]
    rewrite(f, "corpus.jsonl", c)
    rewrite(f, "queries.jsonl", q)


def _empty_query_split(f):
    rewrite(f, "queries.jsonl", [x for x in rows(f, "queries.jsonl") if x["split"] != "val"])


def _one_positive(f):
    rewrite(f, "train_pairs.jsonl", [p for p in rows(f, "train_pairs.jsonl") if p["doc_id"] == "aster-password"])


def _missing_file(f):
    (f / "train_pairs.jsonl").unlink()


def _empty_text(f):
    c = rows(f, "corpus.jsonl")
    c[3]["text"] = "   "
    rewrite(f, "corpus.jsonl", c)


CASES = [
    (_dup_doc, "corpus.jsonl line 61: duplicate doc_id 'aster-password' (first on line 1)"),
    (_dup_query, "queries.jsonl line 4: duplicate query_id 'aster-password-q0' (first on line 1)"),
    (_missing_field, "corpus.jsonl line 5: missing field 'text'"),
    (_wrong_type, "queries.jsonl line 2: field 'relevant_doc_ids' must be list, got str"),
    (_wrong_item_type, "queries.jsonl line 2: relevant_doc_ids must be a non-empty list"),
    (_empty_relevant, "queries.jsonl line 3: relevant_doc_ids must be a non-empty list"),
    (_malformed, "train_pairs.jsonl line 6: malformed JSON"),
    (_not_object, "corpus.jsonl line 2: expected a JSON object, got list"),
    (_unknown_relevant, "queries.jsonl line 7: relevant doc_id 'no-such-doc' is not in corpus.jsonl"),
    (_cross_split_relevant, "queries.jsonl line 1: query split 'train' but relevant document 'iris-cancel'"),
    (_positive_differs, "train_pairs.jsonl line 4: positive text differs from corpus.jsonl line"),
    (_non_train_pair, "train_pairs.jsonl line 3: doc_id 'iris-cancel' is a 'val' document"),
    (_pair_group, "train_pairs.jsonl line 1: group 'Astra' but document 'aster-password' belongs to group 'Aster'"),
    (_group_spans, "corpus.jsonl line 2: group 'Aster' spans splits"),
    (_bad_split, "corpus.jsonl line 1: split must be one of"),
    (_empty_split, "corpus.jsonl: split 'test' is empty"),
    (_empty_query_split, "queries.jsonl: split 'val' is empty"),
    (_one_positive, "train_pairs.jsonl: fewer than two distinct positives"),
    (_missing_file, "train_pairs.jsonl: file not found"),
    (_empty_text, "corpus.jsonl line 4: field 'text' is empty"),
]


@pytest.mark.parametrize("break_it, message", CASES, ids=[c[0].__name__.strip("_") for c in CASES])
def test_every_data_error_names_file_and_line(data_dir, break_it, message):
    break_it(data_dir)
    with pytest.raises(DataError) as info:
        load_dataset(data_dir)
    assert str(info.value).startswith(message), str(info.value)
    assert isinstance(info.value, ValueError)


def test_missing_folder():
    with pytest.raises(ValueError, match="does not exist"):
        load_dataset("/nonexistent/folder")


def test_files_constant():
    assert FILES == ("corpus.jsonl", "queries.jsonl", "train_pairs.jsonl")
