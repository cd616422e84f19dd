"""Filters that are part of the index: corpus rows carry ``fields``, the run keeps them under its
contract, and ``search --where`` ranks only the documents that pass, so a private document never
appears, not even as the exact nearest neighbour of the query. Every bad field or condition is one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from labs.retrieval.contract import verify_contract
from labs.retrieval.data import load_dataset
from labs.retrieval.filters import parse_where, passes, where_mask
from tests.retrieval.conftest import cli, one_line
from tests.retrieval.fielded import (PRIVATE_ID, PRIVATE_TEXT, fielded_data, fielded_run,  # noqa: F401
                                     fresh_run, windowed_run)


def ids_of(out: str) -> list[str]:
    return [line.split()[-1] for line in out.splitlines() if line[:3].strip().rstrip(".").isdigit()]


def test_the_private_document_is_the_nearest_without_a_filter_and_never_appears_with_one(capsys, fielded_run):
    code, out, err = cli(capsys, "search", str(fielded_run), PRIVATE_TEXT, "--k", "3")
    assert code == 0 and ids_of(out)[0] == PRIVATE_ID, out + err  # the exact nearest neighbour
    assert float(out.splitlines()[0].split()[1]) > 0.999
    for ranker in ("dense", "bm25", "hybrid"):
        code, out, err = cli(capsys, "search", str(fielded_run), PRIVATE_TEXT, "--k", "61", "--where", "access=public",
                             "--ranker", ranker)
        assert code == 0 and PRIVATE_ID not in out and len(ids_of(out)) == 60, (ranker, out, err)


def test_conditions_are_anded_and_lists_numbers_compare_as_they_should(capsys, fielded_run):
    code, out, _ = cli(capsys, "search", str(fielded_run), "cancel my plan", "--k", "60", "--where", "product=Iris",
                       "--where", "tags=cancel")
    assert code == 0 and ids_of(out) == ["iris-cancel"]
    code, out, _ = cli(capsys, "search", str(fielded_run), "cancel my plan", "--k", "60", "--where", "year>=2025",
                       "--where", "access=public")
    corpus = load_dataset_rows(fielded_run)
    want = {d for d, f in corpus if f.get("year", 0) >= 2025 and f.get("access") == "public"}
    assert code == 0 and set(ids_of(out)) == want and want
    code, out, _ = cli(capsys, "search", str(fielded_run), "cancel", "--where", "year=2025.0", "--k", "60")
    assert code == 0 and set(ids_of(out)) == {d for d, f in corpus if f.get("year") == 2025}


def test_a_filter_no_document_passes_prints_so(capsys, fielded_run):
    code, out, _ = cli(capsys, "search", str(fielded_run), "cancel", "--where", "product=Nowhere")
    assert code == 0 and out.startswith("no document passes --where product=Nowhere")


def load_dataset_rows(run):
    ids = json.loads((run / "corpus_ids.json").read_text())
    fields = json.loads((run / "corpus_fields.json").read_text())
    return list(zip(ids, fields))


@pytest.mark.parametrize("where, message", [
    ("access", "--where takes KEY=VALUE"), ("=public", "--where takes KEY=VALUE"), ("access=", "--where takes KEY=VALUE"),
    ("colour=red", "the index has no field 'colour'; its fields: access, product, tags, year"),
    ("year=recent", "field 'year' holds numbers, and 'recent' is not a finite number"),
    ("year=nan", "is not a finite number"),
    ("access>=staff", ">= compares numbers, and field 'access' holds strings"),
    ("tags<x", "< compares numbers, and field 'tags' holds lists of strings"),
])
def test_a_bad_condition_is_one_line_exit_2(capsys, fielded_run, where, message):
    code, out, err = cli(capsys, "search", str(fielded_run), "cancel", "--where", where)
    assert code == 2 and out == "" and message in one_line(err), err


def test_the_fields_are_under_the_contract(capsys, fresh_run):
    assert "corpus_fields.json" in verify_contract(fresh_run)["files"]
    fields = json.loads((fresh_run / "corpus_fields.json").read_text())
    fields[-1]["access"] = "public"  # make the private document public by hand
    (fresh_run / "corpus_fields.json").write_text(json.dumps(fields))
    code, _, err = cli(capsys, "search", str(fresh_run), PRIVATE_TEXT, "--where", "access=public")
    assert code == 2 and "corpus_fields.json does not match its SHA-256" in one_line(err)


def test_a_run_without_fields_refuses_where(capsys, sealed):
    code, _, err = cli(capsys, "search", str(sealed), "cancel", "--where", "access=public")
    assert code == 2 and "the index has no field 'access'; its fields: none" in one_line(err)


def corpus_with(tmp_path, data_dir, line: int, fields) -> str:
    folder = tmp_path / "data"
    folder.mkdir()
    for name in ("queries.jsonl", "train_pairs.jsonl"):
        (folder / name).write_bytes((data_dir / name).read_bytes())
    rows = [json.loads(x) for x in (data_dir / "corpus.jsonl").read_text().splitlines()]
    for i, value in fields.items():
        rows[i]["fields"] = value
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(folder)


@pytest.mark.parametrize("fields, message", [
    ({2: ["a"]}, "corpus.jsonl line 3: field 'fields' must be an object of KEY: value, got list"),
    ({2: {"access": True}}, "corpus.jsonl line 3: field 'fields.access' must be a string, a finite number or a list "
                            "of strings, got bool"),
    ({2: {"tags": ["a", 1]}}, "line 3: field 'fields.tags' must be a string, a finite number or a list of strings, "
                              "got a list holding a non-string"),
    ({2: {"n": None}}, "line 3: field 'fields.n' must be"),
    ({2: {"n": {"a": 1}}}, "line 3: field 'fields.n' must be"),
    ({2: {"bad key": "x"}}, "line 3: field 'fields' has the key 'bad key'"),
    ({0: {"year": 2024}, 4: {"year": "2024"}}, "corpus.jsonl line 5: field 'fields.year' is a string here but a "
                                                "number on line 1"),
])
def test_a_bad_fields_object_is_one_line_naming_file_line_and_field(capsys, tmp_path, data_dir, fields, message):
    data = corpus_with(tmp_path, data_dir, 0, fields)
    code, _, err = cli(capsys, "baseline", "--data", data)
    assert code == 2 and message in one_line(err), err


def test_a_nan_field_is_refused(capsys, tmp_path, data_dir):
    folder = corpus_with(tmp_path, data_dir, 0, {})
    path = tmp_path / "data" / "corpus.jsonl"
    lines = path.read_text().splitlines()
    lines[1] = lines[1][:-1] + ', "fields": {"score": NaN}}'
    path.write_text("\n".join(lines) + "\n")
    code, _, err = cli(capsys, "baseline", "--data", folder)
    assert code == 2 and "line 2: field 'fields.score' must be a string, a finite number or a list of strings, got " \
                         "the number nan" in one_line(err)


def test_the_mask_equals_the_readable_rule(fielded_data):
    fields = [d.get("fields", {}) for d in load_dataset(fielded_data).corpus] + [{}]  # one without fields
    kinds = {"product": "string", "access": "string", "year": "number", "tags": "list"}
    for where in (["access=public"], ["year<2024"], ["year>2024", "tags=help"], ["product=Orbit", "year<=2025"],
                  ["tags=refund"], []):
        conditions = parse_where(where)
        want = np.array([passes(f, conditions, kinds) for f in fields])
        assert np.array_equal(where_mask(fields, conditions), want), where
