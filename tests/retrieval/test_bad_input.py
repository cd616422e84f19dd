"""Bad input and tampering, one kind at a time: each is refused with one line naming the file and line,
the field, or the argument (issue 17). The CLI's exit codes and atomic runs are tested in test_cli.

The run folder here is built by the same library calls as `labs.retrieval.training.train` (save the model,
`write_index`, validation rankings, metrics.json, `seal_run`) on a tiny random Qwen3, without training.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from labs.retrieval.data import DataError, load_dataset, write_dataset
from labs.retrieval.files import write_json
from labs.retrieval.helpdesk import make_helpdesk
from labs.retrieval.contract import (
    CONTRACT, contract_digest, seal_run, verify_contract,
)
from labs.retrieval.index import evaluate, search, write_index
from labs.retrieval.instruction import format_query
from labs.lessons.infonce import info_nce, info_nce_torch
from labs.retrieval.metrics import (
    baseline_rankings, bm25_scores, mrr_at_k, ndcg_at_k, rank_documents,
    recall_at_k, retrieval_metrics,
)

INSTRUCTION = "Find the help article"


# ---- a sealed run, built once --------------------------------------------------------------------


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    return write_dataset(make_helpdesk(), tmp_path_factory.mktemp("data") / "helpdesk")


@pytest.fixture(scope="module")
def sealed(tmp_path_factory, data_dir) -> Path:
    from labs.retrieval.qwen3 import build_qwen3, write_tiny_qwen3

    raw = write_tiny_qwen3(tmp_path_factory.mktemp("qwen") / "tiny", seed=0)
    model = build_qwen3(raw, max_length=64)
    run = tmp_path_factory.mktemp("runs") / "sealed"
    run.mkdir()
    model.prompts = {"query": format_query("", INSTRUCTION), "document": ""}
    model.save(str(run / "best"), create_model_card=False)
    data = load_dataset(data_dir)
    index = write_index(run, model, instruction=INSTRUCTION, max_length=64, source="tiny", revision=None,
                        corpus=data.corpus, corpus_sha256=data.sha256["corpus.jsonl"])
    run_files = {"validation_rankings.json": write_json(run / "validation_rankings.json", {}),
                 "metrics.json": write_json(run / "metrics.json", {"data_sha256": data.sha256})}
    seal_run(run, index.contract, data.sha256, run_files)
    return run


@pytest.fixture()
def run(sealed, tmp_path) -> Path:
    """A fresh copy of the sealed run for one test to break."""
    return Path(shutil.copytree(sealed, tmp_path / "run"))


def contract_of(run: Path) -> dict:
    return json.loads((run / CONTRACT).read_text())


def rewrite_contract(run: Path, change, *, redigest: bool) -> None:
    """Apply ``change`` to the contract; with ``redigest`` also recompute its digest (a careful forger)."""
    contract = contract_of(run)
    change(contract)
    if redigest:
        contract["contract_sha256"] = contract_digest(contract)
    (run / CONTRACT).write_text(json.dumps(contract, indent=1))


def refused(run: Path, message: str) -> str:
    """verify_contract refuses with ``message`` in one line; returns the message."""
    with pytest.raises(ValueError, match=message) as info:
        verify_contract(run)
    text = str(info.value)
    assert "\n" not in text and "Traceback" not in text
    return text


def test_the_sealed_run_passes_and_searches(sealed):
    contract = verify_contract(sealed)
    assert contract["complete"] is True and contract["max_length"] == 64 and contract["instruction"] == INSTRUCTION
    assert set(contract["run_files"]) == {"metrics.json", "validation_rankings.json"}
    assert contract["contract_sha256"] == contract_digest(contract)
    assert not any(str(sealed) in str(v) for v in contract.values())  # no absolute path anywhere
    hits = search(sealed, "In Iris, I need to stop future renewals.", k=3)
    assert len(hits) == 3 and all(-1.0 <= s <= 1.0 for _, s in hits)


# ---- the contract guards itself ------------------------------------------------------------------


def _unseal(run: Path) -> None:
    """The state a run is in when training stops after write_index, before metrics.json and seal_run."""
    contract = contract_of(run)
    for key in ("run_files", "data_sha256", "contract_sha256"):
        del contract[key]
    contract["complete"] = False
    (run / CONTRACT).write_text(json.dumps(contract, indent=1))
    (run / "metrics.json").unlink()


def test_a_half_written_run_is_refused_by_search_and_evaluate(run, data_dir):
    _unseal(run)
    message = "index_contract.json field 'complete' is not true"
    refused(run, message)
    with pytest.raises(ValueError, match=message):
        search(run, "cancel")
    with pytest.raises(ValueError, match=message):
        evaluate(run, data_dir, "val")
    assert not (run / "val_metrics.json").exists()


def test_a_sealed_run_that_lost_metrics_json_is_refused(run):
    (run / "metrics.json").unlink()
    refused(run, "metrics.json is listed in index_contract.json but missing")


def test_seal_run_needs_every_hash_and_the_indexed_corpus(run):
    contract = {k: v for k, v in contract_of(run).items() if k not in ("run_files", "data_sha256", "contract_sha256")}
    data = dict(contract_of(run)["data_sha256"])
    files = dict(contract_of(run)["run_files"])
    with pytest.raises(ValueError, match="needs the hashes"):
        seal_run(run, contract, {"corpus.jsonl": data["corpus.jsonl"]}, files)
    with pytest.raises(ValueError, match="needs the hashes"):
        seal_run(run, contract, data, {"metrics.json": files["metrics.json"]})
    with pytest.raises(ValueError, match="not the one indexed"):
        seal_run(run, contract, {**data, "corpus.jsonl": "0" * 64}, files)


@pytest.mark.parametrize("field, value, message", [
    ("instruction", "Retrieve anything", "field 'instruction' is 'Retrieve anything', but the saved model "
                                         "best/config_sentence_transformers.json has the query prompt"),
    ("instruction", "", "field 'instruction' is ''"),
    ("max_length", 32, "field 'max_length' is 32, but the saved model best has a maximum sequence length of 64"),
    ("max_length", 0, "field 'max_length' must be an integer >= 1, got 0"),
    ("max_length", -3, "field 'max_length' must be an integer >= 1"),
    ("max_length", "64", "field 'max_length' must be int, got str"),
    ("max_length", True, "field 'max_length' must be int, got bool"),
    ("query_template", "{query}", "field 'query_template' is '{query}', but this code encodes queries as"),
    ("document_template", "passage: {document}", "field 'document_template'"),
    ("dimensions", 0, "field 'dimensions' must be an integer >= 1"),
    ("padding_side", "middle", "field 'padding_side' must be 'left' or 'right'"),
    ("format", 1, "field 'format' is 1"),
    ("complete", "yes", "field 'complete' is not true"),
], ids=lambda x: str(x)[:20])
@pytest.mark.parametrize("redigest", [False, True], ids=["plain-edit", "digest-recomputed"])
def test_edited_settings_are_named_by_field(run, field, value, message, redigest):
    rewrite_contract(run, lambda c: c.__setitem__(field, value), redigest=redigest)
    refused(run, message)


@pytest.mark.parametrize("field", ["instruction", "max_length", "pooling", "files", "contract_sha256"])
def test_a_missing_field_is_named(run, field):
    rewrite_contract(run, lambda c: c.pop(field), redigest=False)
    refused(run, f"index_contract.json has no field '{field}'")


def test_any_other_edit_breaks_the_digest(run):
    rewrite_contract(run, lambda c: c.__setitem__("pooling", "mean"), redigest=False)
    refused(run, r"index_contract.json does not match its own digest \(field 'contract_sha256'\)")


def test_a_consistent_edit_of_a_harmless_field_passes(run):
    """The digest catches accidents, it is not a signature: recomputing it after an edit is accepted."""
    rewrite_contract(run, lambda c: c.__setitem__("source_model", "other"), redigest=True)
    verify_contract(run)  # a consistent forgery of a harmless field passes: the digest is not a signature


def test_an_unlisted_file_is_refused_even_with_a_recomputed_digest(run):
    rewrite_contract(run, lambda c: c["files"].pop("best/tokenizer.json"), redigest=True)
    refused(run, "best/tokenizer.json is in the model folder but not in index_contract.json")


def test_a_swapped_unlisted_file_is_refused(run):
    rewrite_contract(run, lambda c: c["files"].pop("best/model.safetensors"), redigest=False)
    weights = run / "best" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1] + b" ")
    refused(run, "best/model.safetensors is in the model folder but not in index_contract.json")
    rewrite_contract(run, lambda c: None, redigest=True)
    refused(run, "best/model.safetensors is in the model folder but not in index_contract.json")


@pytest.mark.parametrize("name, message", [
    ("corpus_embeddings.npy", "corpus_embeddings.npy does not match its SHA-256 in index_contract.json"),
    ("metrics.json", r"metrics.json does not match its SHA-256 in index_contract.json \(field 'run_files'\)"),
    ("validation_rankings.json", "validation_rankings.json does not match its SHA-256"),
    ("best/tokenizer_config.json", "best/tokenizer_config.json does not match its SHA-256"),
])
def test_a_changed_file_is_refused(run, name, message):
    path = run / name
    path.write_bytes(path.read_bytes() + b" ")
    refused(run, message)


@pytest.mark.parametrize("where", ["notes.txt", "best/1_Pooling/extra.json", "val_metrics.json.tmp"])
def test_an_extra_file_anywhere_is_refused(run, where):
    (run / where).write_text("{}")
    refused(run, f"{where} is in the (run|model) folder but not")


def test_evaluation_outputs_are_the_only_files_a_run_may_gain(run):
    for name in ("val_metrics.json", "val_rankings.json", "test_metrics.json", "test_rankings.json"):
        (run / name).write_text("{}")
    verify_contract(run)


@pytest.mark.parametrize("model_dir", ["/tmp/best", "../best", "best/../best", "./best", "best\\x", ""],
                         ids=["absolute", "parent", "dotdot-inside", "dot", "backslash", "empty"])
def test_model_dir_must_stay_inside_the_run(run, model_dir):
    rewrite_contract(run, lambda c: c.__setitem__("model_dir", model_dir), redigest=True)
    refused(run, "field 'model_dir'")


def test_model_dir_may_not_be_a_symbolic_link_out_of_the_run(run, tmp_path):
    outside = Path(shutil.copytree(run / "best", tmp_path / "elsewhere"))
    os.symlink(outside, run / "linked")
    rewrite_contract(run, lambda c: c.__setitem__("model_dir", "linked"), redigest=True)
    refused(run, "field 'model_dir': linked is a symbolic link")


def test_a_symbolic_link_inside_the_run_is_refused(run):
    target = run / "best" / "tokenizer.json"
    moved = run.parent / "tokenizer.json"
    target.rename(moved)
    os.symlink(moved, target)
    refused(run, "best/tokenizer.json is a symbolic link")
    target.unlink()
    moved.rename(target)
    os.symlink(run / "best", run / "shortcut")  # an unlisted link, even one pointing inside
    refused(run, "shortcut in .* is a symbolic link")


def test_a_listed_path_may_not_leave_the_run(run):
    rewrite_contract(run, lambda c: c["files"].__setitem__("best/../../x", "0" * 64), redigest=True)
    refused(run, "field 'files' entry 'best/../../x'")


@pytest.mark.parametrize("text, message", [
    ("{not json", "index_contract.json: malformed JSON"),
    ("[1, 2]", "index_contract.json must hold a JSON object, got list"),
    ('{"complete": true, "max_length": NaN}', "index_contract.json: malformed JSON .*NaN is not a JSON number"),
    ("[" * 100_000, "index_contract.json: malformed JSON"),
], ids=["malformed", "list", "nan", "deep"])
def test_an_unreadable_contract_is_named(run, text, message):
    (run / CONTRACT).write_text(text)
    refused(run, message)


def test_a_missing_run_folder(tmp_path):
    refused(tmp_path / "nope", "does not exist or is not a folder")


# ---- evaluate and search guard the data and their arguments -------------------------------------


def test_evaluate_refuses_queries_edited_after_training(run, data_dir, tmp_path):
    edited = Path(shutil.copytree(data_dir, tmp_path / "edited"))
    lines = (edited / "queries.jsonl").read_text().splitlines()
    row = json.loads(lines[-1])
    row["text"] = row["text"] + " please"
    (edited / "queries.jsonl").write_text("\n".join(lines[:-1] + [json.dumps(row)]) + "\n")
    with pytest.raises(ValueError, match="queries.jsonl differs from the one this run was trained with .*"
                                         "field 'data_sha256'"):
        evaluate(run, edited, "test")
    assert not (run / "test_metrics.json").exists() and not (run / "test_rankings.json").exists()


def test_evaluate_refuses_another_corpus_and_a_data_folder_without_queries(run, data_dir, tmp_path):
    other = Path(shutil.copytree(data_dir, tmp_path / "other"))
    (other / "corpus.jsonl").write_text((other / "corpus.jsonl").read_text() + "\n")
    with pytest.raises(ValueError, match="corpus.jsonl differs .* field 'corpus_sha256'"):
        evaluate(run, other, "val")
    (other / "queries.jsonl").unlink()
    with pytest.raises(ValueError, match="queries.jsonl: file not found"):
        evaluate(run, other, "val")


def test_evaluate_refuses_a_missing_data_folder(run, tmp_path):
    with pytest.raises(ValueError, match="data folder .* does not exist"):
        evaluate(run, tmp_path / "nowhere", "val")


@pytest.mark.parametrize("kwargs, message", [
    ({"split": "train"}, "split must be one of val, test"),
    ({"batch_size": 0}, "batch_size must be an integer >= 1"),
    ({"batch_size": 2.5}, "batch_size must be an integer >= 1"),
    ({"device": "tpu"}, "device must be 'cpu', 'cuda' or 'cuda:N'"),
])
def test_evaluate_arguments(run, data_dir, kwargs, message):
    with pytest.raises(ValueError, match=message):
        evaluate(run, data_dir, **kwargs)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_search_and_evaluate_refuse_cuda_without_a_gpu(sealed, data_dir):
    for call in (lambda: search(sealed, "cancel", device="cuda"), lambda: evaluate(sealed, data_dir, device="cuda:0")):
        with pytest.raises(ValueError, match="torch sees no CUDA GPU"):
            call()


@pytest.mark.parametrize("query, k, message", [
    ("Instruct: find\nQuery:cancel", 3, "already starts with 'Instruct:'"),
    ("   ", 3, "query must be a non-empty string"),
    (None, 3, "query must be a non-empty string"),
    ("cancel", 0, "k must be an integer >= 1"),
    ("cancel", 2.0, "k must be an integer >= 1"),
])
def test_search_arguments(sealed, query, k, message):
    with pytest.raises(ValueError, match=message):
        search(sealed, query, k=k)


# ---- data files ----------------------------------------------------------------------------------


@pytest.fixture()
def data(tmp_path) -> Path:
    return write_dataset(make_helpdesk(), tmp_path / "data")


def _rows(folder: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (folder / name).read_text().splitlines()]


def _write(folder: Path, name: str, rows: list[dict]) -> None:
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


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
    rows = _rows(data, name)
    rows[index][field] = prefix + rows[index][field]
    _write(data, name, rows)
    data_refused(data, f"{name} line {index + 1}: field '{field}' already starts with 'Instruct:'")


def test_the_same_query_text_in_two_splits_names_both_places(data):
    queries = _rows(data, "queries.jsonl")
    val = next(i for i, q in enumerate(queries) if q["split"] == "val")
    test = next(i for i, q in enumerate(queries) if q["split"] == "test")
    queries[test]["text"] = "  " + queries[val]["text"].upper()  # case and spacing do not hide it
    _write(data, "queries.jsonl", queries)
    data_refused(data, f"queries.jsonl line {test + 1}: the same text is in split 'test' here and in split "
                       f"'val' at queries.jsonl line {val + 1}")


def test_a_training_pair_query_that_is_also_a_held_out_query_is_refused(data):
    queries, pairs = _rows(data, "queries.jsonl"), _rows(data, "train_pairs.jsonl")
    val = next(i for i, q in enumerate(queries) if q["split"] == "val")
    pairs[7]["query"] = queries[val]["text"]
    _write(data, "train_pairs.jsonl", pairs)
    data_refused(data, f"train_pairs.jsonl line 8: the same text is in split 'train' here and in split 'val' at "
                       f"queries.jsonl line {val + 1}")


def test_the_same_document_text_in_two_splits_is_refused(data):
    corpus = _rows(data, "corpus.jsonl")
    test = next(i for i, d in enumerate(corpus) if d["split"] == "test")
    corpus[test]["text"] = corpus[0]["text"]
    _write(data, "corpus.jsonl", corpus)
    data_refused(data, f"corpus.jsonl line {test + 1}: the same text is in split 'test' here and in split 'train' "
                       "at corpus.jsonl line 1")


def test_the_same_query_text_twice_in_one_split_is_allowed(data):
    queries = _rows(data, "queries.jsonl")
    queries[1]["text"] = queries[0]["text"]
    _write(data, "queries.jsonl", queries)
    load_dataset(data)


def test_a_key_twice_in_one_object_and_a_repeated_relevant_id_are_refused(data, tmp_path):
    lines = (data / "corpus.jsonl").read_text().splitlines()
    lines[2] = lines[2][:-1] + ', "text": "another text"}'
    (data / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    data_refused(data, "corpus.jsonl line 3: field 'text' appears twice in one object")
    other = write_dataset(make_helpdesk(), tmp_path / "other")
    queries = _rows(other, "queries.jsonl")
    queries[5]["relevant_doc_ids"] *= 2
    _write(other, "queries.jsonl", queries)
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


# ---- the API: loss and metrics ------------------------------------------------------------------


def _emb(b: int = 3, d: int = 4) -> torch.Tensor:
    return torch.randn(b, d, generator=torch.Generator().manual_seed(b * 10 + d))


@pytest.mark.parametrize("queries, docs, message", [
    (torch.zeros(0, 4), torch.zeros(0, 4), "queries has no rows"),
    (_emb(3, 0), _emb(3, 0), "dimension >= 1"),
    (torch.tensor([[float("nan"), 1.0], [0.0, 1.0]]), _emb(2, 2), "queries contains NaN or infinite"),
    (_emb(2, 2), torch.tensor([[float("inf"), 1.0], [0.0, 1.0]]), "docs contains NaN or infinite"),
    (_emb(3, 4), _emb(2, 4), "need M >= B"),
    (_emb(3, 4), _emb(3, 5), "share a dimension"),
    (_emb(3, 4)[0], _emb(3, 4), "2-D"),
    ([[1.0, 0.0]], _emb(1, 2), "queries must be a torch.Tensor, got list"),
    (torch.ones(2, 2, dtype=torch.long), torch.ones(2, 2, dtype=torch.long), "floating-point"),
    (_emb(2, 2), _emb(2, 2).double(), "share dtype and device"),
    (torch.tensor([[0.0, 0.0], [1.0, 0.0]]), _emb(2, 2), "queries row 0 is all zeros"),
], ids=["empty", "zero-dim", "nan", "inf", "m-lt-b", "dims", "1d", "list", "int", "dtypes", "zero-row"])
def test_info_nce_torch_refuses_what_info_nce_refuses(queries, docs, message):
    with pytest.raises(ValueError, match=message):
        info_nce_torch(queries, docs, 0.1)


@pytest.mark.parametrize("tau", [0.0, -0.5, float("nan"), float("inf"), "0.1x", "0.1", None, True])
def test_info_nce_torch_bad_tau_names_tau(tau):
    with pytest.raises(ValueError, match="tau must be"):
        info_nce_torch(_emb(), _emb(), tau)


def test_info_nce_torch_tiny_tau_overflows_like_info_nce():
    q = _emb()
    with pytest.raises(ValueError, match="tau=1e-39 is too small"):
        info_nce_torch(q, q, 1e-39)
    with pytest.raises(ValueError, match="tau=1e-310 is too small"):
        info_nce([[1.0, 0.0], [0.0, 1.0]], 1e-310)
    assert math.isfinite(float(info_nce_torch(q, q, 1e-6)))  # small but representable: a finite loss


def test_a_zero_row_is_fine_without_normalising():
    q = torch.tensor([[0.0, 0.0], [1.0, 0.0]])
    assert math.isfinite(float(info_nce_torch(q, q, 1.0, normalize=False)))


RANKINGS = {"a": ["d1", "d2", "d3"]}


@pytest.mark.parametrize("qrels, message", [
    ({"a": "d1"}, r"qrels\['a'\] must be a set \(or list\) of relevant doc ids, got str"),
    ({"a": b"d1"}, "got bytes"),
    ({"a": ["d1", "d1"]}, r"qrels\['a'\] lists 'd1' twice"),
    ({"a": {"d1": 1, "d2": 0}}, "got dict; give the ids whose grade counts as relevant"),
    ({"a": {1, 2}}, r"qrels\['a'\] holds 1 \(int\): doc ids are strings"),
    ({"a": None}, "got NoneType"),
    ([("a", {"d1"})], "qrels must be a mapping"),
], ids=["str", "bytes", "dup-list", "graded-dict", "int-ids", "none", "list-of-pairs"])
@pytest.mark.parametrize("metric", [recall_at_k, mrr_at_k, ndcg_at_k])
def test_metrics_refuse_qrels_that_are_not_collections_of_ids(metric, qrels, message):
    with pytest.raises(ValueError, match=message):
        metric(RANKINGS, qrels, 3)


def test_metrics_accept_sets_lists_and_tuples_alike():
    values = {recall_at_k(RANKINGS, {"a": rel}, 2) for rel in ({"d2", "d9"}, ["d2", "d9"], ("d9", "d2"),
                                                               frozenset({"d2", "d9"}))}
    assert values == {0.5}


@pytest.mark.parametrize("rankings", [{"a": "d1d2"}, {"a": ["d1", 2]}, {"a": np.array(["d1"])}])
def test_metrics_refuse_rankings_that_are_not_lists_of_ids(rankings):
    with pytest.raises(ValueError, match=r"rankings\['a'\] must be a list of distinct doc ids"):
        mrr_at_k(rankings, {"a": {"d1"}}, 1)


@pytest.mark.parametrize("k", [0, -2, 2.0, True, None, "3", np.float64(1)])
def test_k_must_be_a_positive_int_everywhere(k):
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        ndcg_at_k(RANKINGS, {"a": {"d1"}}, k)
    if k is not None:
        with pytest.raises(ValueError, match="k .*must be an integer >= 1"):
            rank_documents(np.zeros((1, 3)), ["d1", "d2", "d3"], ["a"], k=k)
    with pytest.raises(ValueError, match="ks"):
        retrieval_metrics(RANKINGS, {"a": {"d1"}}, [1, k])
    assert recall_at_k(RANKINGS, {"a": {"d1"}}, np.int64(1)) == 1.0  # NumPy integers are integers


def test_rank_documents_refuses_repeated_ids():
    with pytest.raises(ValueError, match="doc_ids lists 'd1' twice"):
        rank_documents(np.zeros((1, 3)), ["d1", "d2", "d1"], ["a"])
    with pytest.raises(ValueError, match="query_ids lists 'a' twice"):
        rank_documents(np.zeros((2, 2)), ["d1", "d2"], ["a", "a"])


@pytest.mark.parametrize("corpus, queries, message", [
    ([{"doc_id": "d", "body": "x"}], [{"query_id": "q", "text": "x"}], r"corpus\[0\] needs a string field 'text'"),
    ([{"doc_id": "d", "text": "x"}], [{"text": "x"}], r"queries\[0\] needs a string field 'query_id'"),
    ([{"doc_id": 3, "text": "x"}], [{"query_id": "q", "text": "x"}], r"corpus\[0\] needs a string field 'doc_id'"),
    (["just text"], [{"query_id": "q", "text": "x"}], r"corpus\[0\] needs a string field"),
])
def test_baseline_rankings_names_a_row_without_its_fields(corpus, queries, message):
    with pytest.raises(ValueError, match=message):
        baseline_rankings("tfidf", corpus, queries)


def test_retrieval_metrics_needs_some_ks():
    with pytest.raises(ValueError, match="ks must be a non-empty list"):
        retrieval_metrics(RANKINGS, {"a": {"d1"}}, [])
    with pytest.raises(ValueError, match="ks must be a non-empty list"):
        retrieval_metrics(RANKINGS, {"a": {"d1"}}, 5)


@pytest.mark.parametrize("query", ["I", "???", "\N{GRINNING FACE}", "", "the a of", "x y z"])
def test_bm25_query_without_a_token_scores_zero_and_ranks_by_doc_id(query):
    corpus = [{"doc_id": d, "text": t} for d, t in (("c", "Cancel my plan"), ("a", "Reset the password"),
                                                    ("b", "Export all data"))]
    queries = [{"query_id": "q", "text": query}, {"query_id": "r", "text": "cancel plan"}]
    scores = bm25_scores([d["text"] for d in corpus], [q["text"] for q in queries])
    assert scores.shape == (2, 3) and not scores[0].any() and scores[1, 0] > 0
    rankings = baseline_rankings("bm25", corpus, queries)
    assert rankings["q"] == ["a", "b", "c"] and rankings["r"][0] == "c"


def test_bm25_refuses_a_corpus_without_any_token():
    with pytest.raises(ValueError, match="no document of the corpus has a BM25 token"):
        bm25_scores(["???", "I"], ["cancel"])
