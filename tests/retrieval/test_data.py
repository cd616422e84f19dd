"""The help-desk fixture and the JSONL checks: shapes of the fixture, round trip, every error names file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labs.retrieval.data import (
    DataError, FILES, load_dataset, read_jsonl, write_dataset,
)
from labs.retrieval.helpdesk import KINDS, make_helpdesk, PRODUCTS, TEST_QUESTIONS
from tests.retrieval.conftest import rows_of, write_rows


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


def test_fixture_test_questions_are_worded_apart():
    """The split rule: no test question is a training or validation question with another product's
    name; the test templates share no template with the others, and each kind has three."""
    data = make_helpdesk()

    def template(q):
        return min((q["text"].replace(p, "{p}") for p in PRODUCTS if p in q["text"]), key=len)

    seen = {template(q) for q in data.queries if q["split"] != "test"}
    test = [template(q) for q in data.split_queries("test")]
    assert not seen & set(test) and len(set(test)) == 18
    assert set(TEST_QUESTIONS) == set(KINDS) and all(len(t) == 3 for t in TEST_QUESTIONS.values())
    assert not {t for k in KINDS.values() for t in k[3]} & {t for ts in TEST_QUESTIONS.values() for t in ts}


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


# ---- bad bytes, repeated or leaking texts, instructions: one line naming file and line --------------


def data_refused(folder: Path, message: str) -> None:
    with pytest.raises(DataError, match=message) as info:
        load_dataset(folder)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("raw, column", [(b"\xff", 10), (b"\xc3(", 10), (b"\xe2\x82", 10)],
                         ids=["ff", "bad-continuation", "truncated"])
def test_a_byte_that_is_not_utf8_names_file_line_and_offset(data, raw, column):
    lines = (data / "queries.jsonl").read_bytes().split(b"\n")
    offset = sum(len(line) + 1 for line in lines[:4]) + column - 1
    lines[4] = lines[4][:column - 1] + raw + lines[4][column - 1:]
    (data / "queries.jsonl").write_bytes(b"\n".join(lines))
    data_refused(data, f"queries.jsonl line 5: byte 0x{raw[0]:02x} at byte offset {offset} of the file "
                       f"\\(column {column} of the line\\) is not valid UTF-8")


def test_latin1_text_is_refused_and_a_byte_order_mark_is_accepted(data):
    (data / "corpus.jsonl").write_bytes(b"\xef\xbb\xbf" + (data / "corpus.jsonl").read_bytes())
    load_dataset(data)
    text = (data / "train_pairs.jsonl").read_text().replace("Aster", "Åster")
    (data / "train_pairs.jsonl").write_bytes(text.encode("latin-1"))
    data_refused(data, "train_pairs.jsonl line 1: byte 0xc5 at byte offset")


@pytest.mark.parametrize("name, field, index", [
    ("train_pairs.jsonl", "query", 2), ("queries.jsonl", "text", 110), ("queries.jsonl", "text", 0),
    ("queries.jsonl", "text", 179)], ids=["pair", "val-query", "train-query", "test-query"])
@pytest.mark.parametrize("prefix", ["Instruct: find the article\nQuery:", "  Instruct:x ", "instruct: "])
def test_a_query_that_already_carries_the_instruction_is_refused_at_load(data, name, field, index, prefix):
    rows = rows_of(data, name)
    rows[index][field] = prefix + rows[index][field]
    write_rows(data, name, rows)
    data_refused(data, f"{name} line {index + 1}: field '{field}' already starts with 'Instruct:'")


def test_the_same_query_text_in_two_splits_names_both_places(data):
    queries = rows_of(data, "queries.jsonl")
    val = next(i for i, q in enumerate(queries) if q["split"] == "val")
    test = next(i for i, q in enumerate(queries) if q["split"] == "test")
    queries[test]["text"] = "  " + queries[val]["text"].upper()  # case and spacing do not hide it
    write_rows(data, "queries.jsonl", queries)
    data_refused(data, f"queries.jsonl line {test + 1}: the same text is in split 'test' here and in split "
                       f"'val' at queries.jsonl line {val + 1}")


def test_a_training_pair_query_that_is_also_a_held_out_query_is_refused(data):
    queries, pairs = rows_of(data, "queries.jsonl"), rows_of(data, "train_pairs.jsonl")
    val = next(i for i, q in enumerate(queries) if q["split"] == "val")
    pairs[7]["query"] = queries[val]["text"]
    write_rows(data, "train_pairs.jsonl", pairs)
    data_refused(data, f"train_pairs.jsonl line 8: the same text is in split 'train' here and in split 'val' at "
                       f"queries.jsonl line {val + 1}")


def test_the_same_document_text_in_two_splits_is_refused(data):
    corpus = rows_of(data, "corpus.jsonl")
    test = next(i for i, d in enumerate(corpus) if d["split"] == "test")
    corpus[test]["text"] = corpus[0]["text"]
    write_rows(data, "corpus.jsonl", corpus)
    data_refused(data, f"corpus.jsonl line {test + 1}: the same text is in split 'test' here and in split 'train' "
                       "at corpus.jsonl line 1")


def test_the_same_query_text_twice_in_one_split_is_allowed(data):
    queries = rows_of(data, "queries.jsonl")
    queries[1]["text"] = queries[0]["text"]
    write_rows(data, "queries.jsonl", queries)
    load_dataset(data)


def test_a_key_twice_in_one_object_and_a_repeated_relevant_id_are_refused(data, tmp_path):
    lines = (data / "corpus.jsonl").read_text().splitlines()
    lines[2] = lines[2][:-1] + ', "text": "another text"}'
    (data / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    data_refused(data, "corpus.jsonl line 3: field 'text' appears twice in one object")
    other = write_dataset(make_helpdesk(), tmp_path / "other")
    queries = rows_of(other, "queries.jsonl")
    queries[5]["relevant_doc_ids"] *= 2
    write_rows(other, "queries.jsonl", queries)
    data_refused(other, "queries.jsonl line 6: relevant_doc_ids lists 'aster-reset' twice")


def test_deep_nesting_and_unpaired_surrogates_are_named(data, tmp_path):
    lines = (data / "corpus.jsonl").read_text().splitlines()
    lines[3] = "[" * 100_000
    (data / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    data_refused(data, "corpus.jsonl line 4: (JSON nested too deeply|malformed JSON)")
    other = write_dataset(make_helpdesk(), tmp_path / "other")
    lines = (other / "queries.jsonl").read_text().splitlines()
    lines[2] = lines[2].replace('"text": "', '"text": "\\ud800')
    (other / "queries.jsonl").write_text("\n".join(lines) + "\n")
    data_refused(other, "queries.jsonl line 3: field 'text' holds an unpaired surrogate")


def test_a_data_path_that_is_a_file(data):
    with pytest.raises(ValueError, match="is not a folder"):
        load_dataset(data / "corpus.jsonl")


# ---- the file's format: one JSON object per line, ids that can be printed ------------------------


def _array_file(folder: Path) -> None:
    (folder / "corpus.jsonl").write_text(json.dumps(rows_of(folder, "corpus.jsonl"), indent=2))


def _pretty_object(folder: Path) -> None:
    rows = rows_of(folder, "corpus.jsonl")
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r, indent=2) + "\n" for r in rows))


def _cr_only(folder: Path) -> None:
    (folder / "queries.jsonl").write_bytes((folder / "queries.jsonl").read_bytes().replace(b"\n", b"\r"))


@pytest.mark.parametrize("break_it, message", [
    (_array_file, "corpus.jsonl line 1: malformed JSON .*; the file looks like one JSON array: each line of a "
                  ".jsonl file must be one whole JSON object \\(JSON Lines\\)"),
    (_pretty_object, "corpus.jsonl line 1: malformed JSON .*spread over several lines \\(pretty-printed\\)"),
    (_cr_only, "queries.jsonl line 1: malformed JSON .*lines end in CR only"),
], ids=["json-array", "pretty-printed", "cr-only"])
def test_a_file_in_another_json_format_says_the_format_is_one_object_per_line(data, break_it, message):
    break_it(data)
    data_refused(data, message)


def test_crlf_line_ends_are_accepted(data):
    for name in ("corpus.jsonl", "queries.jsonl", "train_pairs.jsonl"):
        (data / name).write_bytes((data / name).read_bytes().replace(b"\n", b"\r\n"))
    assert len(load_dataset(data).corpus) == 60


def test_a_data_file_that_is_a_folder_says_so(data):
    (data / "corpus.jsonl").unlink()
    (data / "corpus.jsonl").mkdir()
    data_refused(data, "corpus.jsonl: '.*corpus.jsonl' is a folder, not a file")


@pytest.mark.parametrize("name, field, value", [
    ("corpus.jsonl", "doc_id", "evil\n 1. 0.999  fake-doc"), ("corpus.jsonl", "doc_id", "tab\there"),
    ("corpus.jsonl", "group", "Aster\x1b[31m"), ("queries.jsonl", "query_id", "q\u202e1"),
    ("corpus.jsonl", "split", "train\r"),
], ids=["newline", "tab", "escape", "bidi-override", "carriage-return"])
def test_ids_and_labels_with_control_characters_are_refused_at_load(data, name, field, value):
    rows = rows_of(data, name)
    rows[3][field] = value
    write_rows(data, name, rows)
    data_refused(data, f"{name} line 4: field '{field}' holds .* with the unprintable character")


def test_a_relevant_doc_id_with_a_newline_is_refused(data):
    rows = rows_of(data, "queries.jsonl")
    rows[0]["relevant_doc_ids"] = ["aster\nreset"]
    write_rows(data, "queries.jsonl", rows)
    data_refused(data, "queries.jsonl line 1: field 'relevant_doc_ids' holds 'aster\\\\nreset'")


def test_texts_may_hold_newlines_and_tabs(data):
    rows = rows_of(data, "corpus.jsonl")
    rows[40]["text"] = "First line.\n\tSecond line."
    write_rows(data, "corpus.jsonl", rows)
    assert load_dataset(data).corpus[40]["text"] == "First line.\n\tSecond line."
