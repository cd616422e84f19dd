"""Data a real export can produce that used to be taken silently or to hang: ids equal after Unicode
normalisation or trimming, texts that leak between splits behind an invisible character, a text of
invisible characters only, and rows so large that a quadratic check never ends. Each case is refused in
one line naming file and line, or loads, in time linear in its size. Generated cases (hypothesis) put odd
Unicode into every id and text field."""

from __future__ import annotations

import time
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from labs.retrieval.data import DataError, load_dataset, write_dataset
from labs.retrieval.helpdesk import make_helpdesk
from tests.retrieval.conftest import cli, one_line, rows_of, write_rows


def same_id(value: str) -> str:
    return unicodedata.normalize("NFC", value).strip()


def refused(folder: Path, message: str) -> str:
    with pytest.raises(DataError, match=message) as info:
        load_dataset(folder)
    assert "\n" not in str(info.value)
    return str(info.value)


# ---- ids compared as NFC with spaces trimmed --------------------------------------------------


@pytest.mark.parametrize("first, second", [("caf\u00e9", "cafe\u0301"), ("doc-7", "doc-7 "), ("doc-7", " doc-7")],
                         ids=["nfc-nfd", "trailing-space", "leading-space"])
def test_two_doc_ids_equal_after_normalisation_are_one_id_refused(data, first, second):
    corpus = rows_of(data, "corpus.jsonl")
    corpus[3]["doc_id"], corpus[4]["doc_id"] = first, second
    write_rows(data, "corpus.jsonl", corpus)
    line = refused(data, f"corpus.jsonl line 5: duplicate doc_id {second!r} \\(first on line 4")
    assert "Unicode normalisation (NFC) and trimming spaces" in line


def test_two_query_ids_equal_after_normalisation_are_refused(data):
    queries = rows_of(data, "queries.jsonl")
    queries[1]["query_id"] = unicodedata.normalize("NFD", "q-\u00e9")
    queries[0]["query_id"] = "q-\u00e9"
    write_rows(data, "queries.jsonl", queries)
    refused(data, "queries.jsonl line 2: duplicate query_id")


def test_a_relevant_id_written_otherwise_than_in_the_corpus_names_both(data):
    corpus, queries = rows_of(data, "corpus.jsonl"), rows_of(data, "queries.jsonl")
    target = next(d for d in corpus if d["doc_id"] == queries[40]["relevant_doc_ids"][0])
    queries[40]["relevant_doc_ids"][0] = target["doc_id"] + " "
    write_rows(data, "queries.jsonl", queries)
    line = refused(data, "queries.jsonl line 41: relevant doc_id")
    assert f"the corpus has {target['doc_id']!r}, equal only after Unicode normalisation" in line


def test_a_repeated_relevant_id_written_two_ways_is_refused(data):
    queries = rows_of(data, "queries.jsonl")
    queries[5]["relevant_doc_ids"] = [queries[5]["relevant_doc_ids"][0], queries[5]["relevant_doc_ids"][0] + " "]
    write_rows(data, "queries.jsonl", queries)
    refused(data, "queries.jsonl line 6: relevant_doc_ids lists .* twice")


def test_a_group_written_two_ways_across_splits_is_one_group(data):
    corpus = rows_of(data, "corpus.jsonl")
    test = next(i for i, d in enumerate(corpus) if d["split"] == "test")
    corpus[test]["group"] = corpus[0]["group"] + " "
    write_rows(data, "corpus.jsonl", corpus)
    refused(data, f"corpus.jsonl line {test + 1}: group .* spans splits")


# ---- leakage after normalisation; invisible-only text ------------------------------------------


@pytest.mark.parametrize("disguise", [lambda t: t.replace(" ", " \u200b", 1), lambda t: "\u200b" + t,
                                      lambda t: unicodedata.normalize("NFD", t.replace("a", "\u00e1")),
                                      lambda t: t.replace("a", "a\u00ad", 1)],
                         ids=["zero-width-space", "leading-zwsp", "nfd", "soft-hyphen"])
def test_the_same_document_text_in_two_splits_behind_an_invisible_difference_is_refused(data, disguise):
    corpus = rows_of(data, "corpus.jsonl")
    test = next(i for i, d in enumerate(corpus) if d["split"] == "test")
    if "\u0301" in disguise("a"):  # the NFD case: the train copy is the NFC form of the same accented text
        corpus[0]["text"] = corpus[0]["text"].replace("a", "\u00e1")
        write_rows(data, "train_pairs.jsonl", [dict(p, positive=corpus[0]["text"]) if p["doc_id"] == corpus[0]["doc_id"]
                                           else p for p in rows_of(data, "train_pairs.jsonl")])
    corpus[test]["text"] = disguise(corpus[0]["text"])
    assert corpus[test]["text"] != corpus[0]["text"]
    write_rows(data, "corpus.jsonl", corpus)
    refused(data, f"corpus.jsonl line {test + 1}: the same text is in split 'test' here and in split 'train'")


def test_a_query_text_in_two_splits_behind_a_zero_width_space_is_refused(data):
    queries = rows_of(data, "queries.jsonl")
    val = next(i for i, q in enumerate(queries) if q["split"] == "val")
    test = next(i for i, q in enumerate(queries) if q["split"] == "test")
    queries[test]["text"] = queries[val]["text"].replace(" ", "\u200b ", 2)
    write_rows(data, "queries.jsonl", queries)
    refused(data, f"queries.jsonl line {test + 1}: the same text is in split 'test'")


@pytest.mark.parametrize("name, field, index", [("corpus.jsonl", "text", 2), ("queries.jsonl", "text", 7),
                                                ("train_pairs.jsonl", "query", 3)])
@pytest.mark.parametrize("invisible", ["\u200b", "\u200b\u200c\u200d", "\ufeff \u2060", "\u00ad"])
def test_a_text_of_invisible_characters_only_is_refused(data, name, field, index, invisible):
    rows = rows_of(data, name)
    rows[index][field] = invisible
    write_rows(data, name, rows)
    refused(data, f"{name} line {index + 1}: field '{field}' holds only invisible characters")


def test_invisible_only_text_is_refused_through_the_command_line(capsys, data):
    corpus = rows_of(data, "corpus.jsonl")
    corpus[9]["text"] = "\u200b\u200b"
    write_rows(data, "corpus.jsonl", corpus)
    code, _, err = cli(capsys, "baseline", "--data", str(data))
    assert code == 2 and "corpus.jsonl line 10: field 'text' holds only invisible characters" in one_line(err)


# ---- sizes a real export can reach: linear checks -----------------------------------------------


def _loads_in_time(folder: Path, seconds: float = 20.0):
    """Load ``folder``; the bound only catches a check that does not scale (it took minutes before)."""
    start = time.perf_counter()
    try:
        return load_dataset(folder)
    finally:
        assert time.perf_counter() - start < seconds


def test_a_row_with_150000_extra_keys_loads_in_linear_time(data):
    lines = (data / "corpus.jsonl").read_text().splitlines()
    extra = ", ".join(f'"k{i}": {i}' for i in range(150_000))
    lines[0] = lines[0][:-1] + ", " + extra + "}"
    (data / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    _loads_in_time(data)
    lines[0] = lines[0][:-1] + ', "k149999": 0}'  # ... and a key repeated at the very end is still found
    (data / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match="corpus.jsonl line 1: field 'k149999' appears twice"):
        _loads_in_time(data)


def test_a_query_with_40000_relevant_ids_is_checked_in_linear_time(data):
    corpus, queries = rows_of(data, "corpus.jsonl"), rows_of(data, "queries.jsonl")
    val = next(i for i, q in enumerate(queries) if q["split"] == "val")
    group = next(d["group"] for d in corpus if d["doc_id"] == queries[val]["relevant_doc_ids"][0])
    extra = [{"doc_id": f"bulk-{i}", "text": f"bulk article number {i}", "group": group, "split": "val"}
             for i in range(40_000)]
    write_rows(data, "corpus.jsonl", corpus + extra)
    queries[val]["relevant_doc_ids"] = [d["doc_id"] for d in extra]
    write_rows(data, "queries.jsonl", queries)
    assert len(_loads_in_time(data).qrels("val")[queries[val]["query_id"]]) == 40_000
    queries[val]["relevant_doc_ids"].append("bulk-39999")
    write_rows(data, "queries.jsonl", queries)
    with pytest.raises(DataError, match=f"queries.jsonl line {val + 1}: relevant_doc_ids lists 'bulk-39999' twice"):
        _loads_in_time(data)


# ---- generated: odd Unicode in every id and text field --------------------------------------------

_ODD = st.text(st.characters(codec="utf-8", categories=("L", "M", "N", "P", "S", "Z", "Cf")), min_size=0, max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_ODD, where=st.sampled_from([("corpus.jsonl", "doc_id", 4), ("corpus.jsonl", "text", 4),
                                          ("queries.jsonl", "query_id", 50), ("queries.jsonl", "text", 50),
                                          ("train_pairs.jsonl", "query", 6), ("corpus.jsonl", "group", 4)]))
def test_odd_unicode_in_any_field_loads_or_is_refused_in_one_line(tmp_path_factory, value, where):
    """Whatever the value: either a DataError in one line naming the file and line, or a data set whose
    ids stay distinct after `same_id` and whose splits share no text after normalisation."""
    folder = write_dataset(make_helpdesk(), tmp_path_factory.mktemp("odd") / "data")
    name, field, index = where
    rows = rows_of(folder, name)
    rows[index][field] = value
    write_rows(folder, name, rows)
    try:
        data = load_dataset(folder)
    except DataError as err:
        assert "\n" not in str(err) and str(err).startswith(("corpus.jsonl", "queries.jsonl", "train_pairs.jsonl"))
        return
    ids = [d["doc_id"] for d in data.corpus]
    assert len({same_id(i) for i in ids}) == len(ids)
    assert all(same_id(i) for i in ids) and all(d["text"].strip() for d in data.corpus)


# ---- messages in words, not Python's ------------------------------------------------------------


def test_a_5000_digit_integer_in_an_extra_field_is_named_in_words(capsys, data):
    lines = (data / "corpus.jsonl").read_text().splitlines()
    lines[2] = lines[2][:-1] + ', "views": ' + "9" * 5000 + "}"
    (data / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    code, _, err = cli(capsys, "baseline", "--data", str(data))
    line = one_line(err)
    assert code == 2 and "corpus.jsonl line 3: a number with 5,000 digits" in line and "write it as a string" in line
    assert "sys.set_int_max_str_digits" not in line


def test_rows_that_end_in_a_comma_say_so(capsys, data):
    lines = (data / "queries.jsonl").read_text().splitlines()
    (data / "queries.jsonl").write_text("".join(line + ",\n" for line in lines))
    code, _, err = cli(capsys, "baseline", "--data", str(data))
    line = one_line(err)
    assert code == 2 and line.startswith("error: queries.jsonl line 1: malformed JSON")
    assert "a whole JSON object followed by a comma" in line and "pretty-printed" not in line


def test_a_loop_of_symbolic_links_is_named_as_a_loop(capsys, data, tmp_path):
    (data / "corpus.jsonl").unlink()
    (data / "corpus.jsonl").symlink_to(data / "corpus.jsonl")
    code, _, err = cli(capsys, "baseline", "--data", str(data))
    assert code == 2 and "corpus.jsonl: file is a loop of symbolic links" in one_line(err)
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    code, _, err = cli(capsys, "baseline", "--data", str(tmp_path / "a"))
    assert code == 2 and f"'{tmp_path / 'a'}' is a loop of symbolic links" in one_line(err)
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    code, _, err = cli(capsys, "baseline", "--data", str(tmp_path / "gone"))
    assert code == 2 and "is a symbolic link to" in one_line(err) and "which does not exist" in err
