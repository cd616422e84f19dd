"""The index contract guards itself: a run that is unfinished, edited, mixed or extended is refused
with one line naming the file and the field (`labs.retrieval.contract`); and `search` and `evaluate`
refuse data and arguments that do not fit the run (`labs.retrieval.index`). The run folder is the
``sealed`` fixture of conftest.py; ``run`` is a fresh copy to break.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from labs.retrieval.contract import CONTRACT, EVALUATION_FILES, contract_digest, seal_run, verify_contract
from labs.retrieval.index import evaluate, search
from tests.retrieval.conftest import INSTRUCTION


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
    assert set(contract["run_files"]) == {"metrics.json", "validation_rankings.json"} and contract["evaluations"] == {}
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


@pytest.mark.parametrize("where", ["notes.txt", "best/1_Pooling/extra.json", "val_metrics.json.tmp",
                                   ".val_metrics.json.tmp-123"])
def test_an_extra_file_anywhere_is_refused(run, where):
    (run / where).write_text("{}")
    refused(run, f"{where} is in the (run|model) folder but not")


@pytest.mark.parametrize("name", EVALUATION_FILES)
def test_an_evaluation_file_counts_only_when_the_contract_lists_it(run, name):
    """evaluate records what it wrote in the contract; the same file put there by hand, or left by an
    evaluation killed before it was recorded, is refused with the way out."""
    (run / name).write_text("{}")
    split = name.partition("_")[0]
    refused(run, f"{name} is in the run folder but not listed in index_contract.json \\(field 'evaluations'\\): "
                 f"an evaluation stopped before it was recorded, .* run evaluate --split {split} again")
    verify_contract(run, replacing=(name,))  # evaluate itself may replace it


@pytest.mark.parametrize("evaluations, message", [
    ({"notes.json": "0" * 64}, "field 'evaluations' lists 'notes.json'"),
    ({"val_metrics.json": "0" * 64}, "field 'evaluations' lists only one of val_metrics.json and val_rankings.json"),
    ({"val_metrics.json": "x", "val_rankings.json": "0" * 64}, "field 'evaluations': the entry for 'val_metrics.json' "
                                                               "is not a SHA-256"),
    ({"test_metrics.json": "0" * 64, "test_rankings.json": "0" * 64}, "test_metrics.json is listed in .* but "
                                                                      "missing"),
], ids=["unknown", "half", "not-a-digest", "missing"])
def test_edited_evaluations_are_named(run, evaluations, message):
    rewrite_contract(run, lambda c: c.__setitem__("evaluations", evaluations), redigest=True)
    refused(run, message)


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
    refused(tmp_path / "nope", "run folder .*nope. does not exist")
    (tmp_path / "file").write_text("x")
    refused(tmp_path / "file", "run folder .*file. is not a folder")
    refused("", r"the run folder is empty \(''\)")  # not the working folder


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
