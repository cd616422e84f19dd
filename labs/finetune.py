"""Fine-tuning an embedding model on query/document pairs, chosen on validation, saved as a run folder.

In plain words: each step takes a batch of B training questions and their B
articles, embeds them, and asks every question to pick its own article out of
the B in the batch (sentence-transformers' ``MultipleNegativesRankingLoss``,
scale 20 = temperature 0.05; the same loss as `labs.infonce.info_nce_torch`).
Optionally each row also brings a mined *hard negative*: a training article
the TF-IDF baseline ranks high for that question but which is not one of its
answers. Each epoch draws one question per distinct article, so no article is
twice in a batch (a duplicate would be punished as its own negative); a final
batch of one is dropped (nothing to compare against). AdamW, gradient norm
clipped at 1, no scheduler. Before training (epoch 0) and after every epoch the
model is scored on validation MRR@5; a checkpoint is saved only when it beats
the best so far, so the untouched model can win. Test queries are never read.

Shapes
------
=============  ================  ============================================
name           shape             meaning
=============  ================  ============================================
batch          B rows            (query, positive[, hard negative]) texts
embeddings     (B, d) per column d = 384 (MiniLM) or 1024 (Qwen3-0.6B)
similarities   (B, B) or (B, 2B) the loss's table; row i's answer is column i
=============  ================  ============================================

The switch for later work: `train` runs a plain loop (`train_step`); the loss
comes from ``loss_factory(model)`` (default: MNRL at ``config.scale``), so a
cached loss or another objective plugs in without touching the loop. The same
step through ``SentenceTransformerTrainer`` is measured against this loop in
``python -m labs.bench_trainer_vs_loop``. On CUDA: bf16 autocast (fp32 weights),
non-reentrant gradient checkpointing, peak allocated/reserved memory recorded.

Lesson: ``notebooks/05_finetuning.ipynb``.
"""

from __future__ import annotations

import gc
import json
import resource
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from labs.helpdesk import HelpdeskData, data_hashes, file_sha256, load_dataset
from labs.index import encode_texts, format_query, rank_split, show_progress, write_index
from labs.metrics import rank_documents, tfidf_scores
from labs.qwen3 import QWEN3_ID, QWEN3_REVISION, build_qwen3, count_parameters

__all__ = [
    "DEFAULT_TASK",
    "TrainConfig",
    "load_encoder",
    "default_instruction",
    "epoch_batches",
    "mine_hard_negatives",
    "train_step",
    "train_step_features",
    "batch_columns",
    "train",
    "check_chance_loss",
]

DEFAULT_TASK = "Given a support question, retrieve the help article that answers it for the correct product."


@dataclass
class TrainConfig:
    """Settings of one training run (the CLI flags of ``python -m labs train``)."""

    data: str
    out: str
    model: str = "minilm"            # "minilm", the Qwen3 hub id, or a local folder
    device: str = "cpu"              # "cpu" or "cuda"
    epochs: int = 3
    batch_size: int = 16
    lr: float = 2e-5
    scale: float = 20.0              # 1 / temperature
    max_length: int = 128
    seed: int = 0
    hard_negatives: bool = False
    instruction: str | None = None   # None: the model's own default (Qwen3: DEFAULT_TASK; MiniLM: none)
    max_steps: int | None = None     # stop early (smoke runs)
    eval_batch_size: int = 32
    bf16: bool | None = None         # None: on for a CUDA card that supports bf16
    gradient_checkpointing: bool | None = None  # None: on for CUDA


def _check_device(device: str) -> str:
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' but torch sees no CUDA GPU here (a CPU build or no driver); use 'cpu'")
    return device


def load_encoder(model: str, device: str = "cpu", max_length: int = 128):
    """Return (SentenceTransformer, source description, revision) for ``model``.

    ``"minilm"``: the packaged all-MiniLM-L6-v2 (via `labs.pooling.load_minilm`). The Qwen3 id:
    `labs.qwen3.build_qwen3` at the pinned revision. A folder: a saved sentence-transformers
    model (has ``modules.json``), or a raw Qwen3 checkpoint assembled like the real one.
    """
    from sentence_transformers import SentenceTransformer

    _check_device(device)
    if not show_progress():  # TQDM_DISABLE (CI, nbval): no "Loading weights" bar from transformers either
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    if model == "minilm":
        from labs.pooling import load_minilm

        st, source, revision = load_minilm(device), "sentence-transformers/all-MiniLM-L6-v2 (packaged)", None
    elif model == QWEN3_ID:
        st, source, revision = build_qwen3(QWEN3_ID, device=device, max_length=max_length), QWEN3_ID, QWEN3_REVISION
    elif Path(model).is_dir():
        folder, source, revision = Path(model), str(Path(model).resolve()), None
        if (folder / "modules.json").is_file():
            st = SentenceTransformer(str(folder), device=device, trust_remote_code=False, local_files_only=True)
        elif (folder / "config.json").is_file():
            st = build_qwen3(folder, device=device, max_length=max_length)
        else:
            raise ValueError(f"model folder {model!r} has neither modules.json nor config.json")
    else:
        raise ValueError(f"model must be 'minilm', {QWEN3_ID!r} or an existing folder, got {model!r}")
    if not isinstance(max_length, int) or max_length < 8:
        raise ValueError(f"max_length must be an integer >= 8, got {max_length!r}")
    st.max_seq_length = max_length
    return st, source, revision


def default_instruction(model) -> str:
    """The instruction a model expects: a saved ``Instruct: ...\\nQuery:`` prompt, DEFAULT_TASK for Qwen3, else ''."""
    prompt = (getattr(model, "prompts", None) or {}).get("query") or ""
    if prompt.startswith("Instruct: ") and prompt.endswith("\nQuery:"):
        return prompt[len("Instruct: "):-len("\nQuery:")]
    config = getattr(getattr(model[0], "auto_model", None), "config", None)
    return DEFAULT_TASK if getattr(config, "model_type", "") == "qwen3" else ""


def epoch_batches(pairs: list[dict], batch_size: int, rng: np.random.Generator) -> list[list[dict]]:
    """One epoch: one random pair per distinct positive text, shuffled, cut into batches of ``batch_size``.

    No positive appears twice in a batch; a final batch of one pair is dropped.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 2:
        raise ValueError(f"batch_size must be an integer >= 2 (a batch of one has no negatives), got {batch_size!r}")
    by_positive: dict[str, list[dict]] = {}
    for pair in pairs:
        by_positive.setdefault(pair["positive"], []).append(pair)
    groups = list(by_positive.values())
    if len(groups) < 2:
        raise ValueError("pairs need at least two distinct positives")
    chosen = [g[rng.integers(len(g))] for g in groups]
    chosen = [chosen[i] for i in rng.permutation(len(chosen))]
    batches = [chosen[i:i + batch_size] for i in range(0, len(chosen), batch_size)]
    return [b for b in batches if len(b) > 1]


def mine_hard_negatives(data: HelpdeskData, per_query: int = 5) -> dict[str, list[str]]:
    """Training query text -> up to ``per_query`` train doc ids the TF-IDF baseline ranks highest,
    verified not relevant (not a labelled positive of that query text, not the same text as one).

    Only training queries and training documents are used: no held-out label reaches training.
    """
    docs = [d for d in data.corpus if d["split"] == "train"]
    text_of = {d["doc_id"]: d["text"] for d in docs}
    relevant: dict[str, set[str]] = {}
    for pair in data.train_pairs:
        relevant.setdefault(pair["query"], set()).add(pair["doc_id"])
    for q in data.split_queries("train"):
        if q["text"] in relevant:
            relevant[q["text"]].update(q["relevant_doc_ids"])
    queries = sorted(relevant)
    ranked = rank_documents(tfidf_scores([d["text"] for d in docs], queries), list(text_of), queries)
    mined = {}
    for q in queries:
        positive_texts = {text_of[d] for d in relevant[q] if d in text_of}
        ok = [d for d in ranked[q] if d not in relevant[q] and text_of[d] not in positive_texts]
        mined[q] = ok[:per_query]
    return mined


def batch_columns(batch: list[dict], instruction: str, negatives: dict[str, list[str]] | None,
                  text_of: dict[str, str]) -> list[list[str]]:
    """Columns [queries, positives(, negatives)] of one batch; a negative never equals a batch positive."""
    queries = [format_query(p["query"], instruction) for p in batch]
    positives = [p["positive"] for p in batch]
    if not negatives:
        return [queries, positives]
    taken_ids, taken_texts = {p["doc_id"] for p in batch}, set(positives)
    column = []
    for p in batch:
        pick = next((d for d in negatives.get(p["query"], [])
                     if d not in taken_ids and text_of[d] not in taken_texts), None)
        if pick is None:  # no safe negative for this row: train the batch on pairs only
            return [queries, positives]
        column.append(text_of[pick])
    return [queries, positives, column]


def train_step(model, loss_fn, optimizer, columns: list[list[str]], *, device: str, bf16: bool = False) -> float:
    """One update from texts: tokenise each column, then `train_step_features`."""
    features = []
    for texts in columns:
        f = model.preprocess(texts)
        features.append({k: v.to(device) if torch.is_tensor(v) else v for k, v in f.items()})
    return train_step_features(model, loss_fn, optimizer, features, device=device, bf16=bf16)


def train_step_features(model, loss_fn, optimizer, features: list[dict], *, device: str, bf16: bool = False) -> float:
    """One update from tokenised columns: loss (bf16 autocast on CUDA if asked), backward,
    gradient norm clipped at 1, AdamW step. Returns the loss."""
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=bf16 and device == "cuda"):
        loss = loss_fn(features, None)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(loss.detach())


def _mnrl(scale: float) -> Callable:
    def factory(model):
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

        return MultipleNegativesRankingLoss(model, scale=scale)
    return factory


def _memory(device: str) -> dict:
    out = {"cpu_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    if device == "cuda":
        out["cuda_peak_allocated_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 3)
        out["cuda_peak_reserved_gib"] = round(torch.cuda.max_memory_reserved() / 2**30, 3)
    return out


def _save(model, folder: Path, instruction: str) -> None:
    model.prompts = {"query": format_query("", instruction), "document": ""} if instruction else {}
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save(str(tmp), create_model_card=False)
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)


def train(config: TrainConfig, loss_factory: Callable | None = None) -> dict:
    """Train, select on validation MRR@5 (epoch 0 included), index the corpus; return metrics.json's content.

    Refuses an output folder that already has files in it.
    """
    out = Path(config.out)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"run folder {config.out!r} is not empty: choose a new one, nothing was overwritten")
    device = _check_device(config.device)
    for name in ("epochs", "batch_size", "max_length", "eval_batch_size"):
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "epochs" else 1):
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    if config.batch_size < 2:
        raise ValueError(f"batch_size must be >= 2 (a batch of one has no negatives), got {config.batch_size}")
    if not config.lr > 0 or not config.scale > 0:
        raise ValueError(f"lr and scale must be > 0, got lr={config.lr!r}, scale={config.scale!r}")
    data = load_dataset(config.data)
    bf16 = (device == "cuda" and torch.cuda.is_bf16_supported()) if config.bf16 is None else bool(config.bf16)
    checkpointing = device == "cuda" if config.gradient_checkpointing is None else bool(config.gradient_checkpointing)

    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    model, source, revision = load_encoder(config.model, device, config.max_length)
    instruction = default_instruction(model) if config.instruction is None else config.instruction
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    if checkpointing and hasattr(model[0], "auto_model"):
        model[0].auto_model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    out.mkdir(parents=True, exist_ok=True)
    best_dir = out / "best"

    def validate() -> dict:
        model.eval()
        with torch.no_grad():
            emb = encode_texts(model, [d["text"] for d in data.corpus], config.eval_batch_size)
            metrics, _ = rank_split(model, instruction, emb, [d["doc_id"] for d in data.corpus], data, "val",
                                    config.eval_batch_size)
        return metrics

    history = [{"epoch": 0, "steps": 0, "train_loss": None, **validate()}]
    _save(model, best_dir, instruction)
    best_epoch, best_mrr = 0, history[0]["mrr@5"]
    negatives = mine_hard_negatives(data) if config.hard_negatives else None
    text_of = {d["doc_id"]: d["text"] for d in data.corpus}
    loss_fn = (loss_factory or _mnrl(config.scale))(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, foreach=False)
    steps, start = 0, time.perf_counter()
    for epoch in range(1, config.epochs + 1):
        if config.max_steps is not None and steps >= config.max_steps:
            break
        model.train()
        losses = []
        batches = epoch_batches(data.train_pairs, config.batch_size, rng)
        for batch in _progress(batches, f"epoch {epoch}"):
            if config.max_steps is not None and steps >= config.max_steps:
                break
            columns = batch_columns(batch, instruction, negatives, text_of)
            losses.append(train_step(model, loss_fn, optimizer, columns, device=device, bf16=bf16))
            steps += 1
        row = {"epoch": epoch, "steps": steps, "train_loss": float(np.mean(losses)) if losses else None, **validate()}
        history.append(row)
        if row["mrr@5"] > best_mrr:
            best_epoch, best_mrr = epoch, row["mrr@5"]
            _save(model, best_dir, instruction)
    seconds = time.perf_counter() - start
    memory = _memory(device)
    parameters = count_parameters(model)
    del optimizer, loss_fn, model  # free the training copy before loading the selected one
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()

    best, _, _ = load_encoder(str(best_dir), device, config.max_length)
    corpus_sha = file_sha256(Path(config.data) / "corpus.jsonl")
    contract = write_index(out, best, instruction=instruction, max_length=config.max_length, source=source,
                           revision=revision, corpus=data.corpus, corpus_sha256=corpus_sha,
                           batch_size=config.eval_batch_size)
    emb = np.load(out / "corpus_embeddings.npy")
    selected, rankings = rank_split(best, instruction, emb, json.loads((out / "corpus_ids.json").read_text()),
                                    data, "val", config.eval_batch_size)
    (out / "validation_rankings.json").write_text(json.dumps(rankings, indent=1) + "\n", encoding="utf-8")
    report = {
        "config": asdict(config),
        "source_model": source,
        "revision": revision,
        "instruction": instruction,
        "parameters": parameters,
        "dimensions": contract["dimensions"],
        "hard_negatives": bool(negatives),
        "bf16_autocast": bf16 and device == "cuda",
        "gradient_checkpointing": checkpointing,
        "steps": steps,
        "train_seconds": round(seconds, 2),
        "history": history,
        "selected_epoch": best_epoch,
        "selected_validation": selected,
        "data_sha256": data_hashes(config.data),
        "memory": memory,
        "versions": _versions(),
    }
    (out / "metrics.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return report


def _progress(items, desc: str):
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, disable=not show_progress(), leave=False)


def _versions() -> dict:
    import sentence_transformers
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "sentence_transformers": sentence_transformers.__version__}


def check_chance_loss(answer) -> bool:
    """Exercise: the loss of a batch of 16 pairs when every similarity is equal (a model that cannot tell)."""
    import math

    if answer is None:
        print("Fill in your answer: a number, the loss of one row when all 16 candidates score the same.")
        return False
    try:
        value = float(answer)
    except (TypeError, ValueError):
        print(f"Give a number, not {answer!r}.")
        return False
    right = math.log(16)
    if abs(value - right) <= 0.01:
        print("Right: every candidate gets probability 1/16, and the loss is minus the log of that.")
        return True
    if abs(value - 1 / 16) <= 0.01:
        print("That is the probability the softmax gives the right document; the loss is minus its log.")
    elif abs(value - math.log2(16)) <= 0.01:
        print("Cross-entropy uses the natural logarithm, not log base 2.")
    elif value <= 0:
        print("A cross-entropy loss is never negative: the right document's probability is at most 1.")
    else:
        print("Not quite. The scale does not matter when all scores are equal: what probability does each of "
              "the 16 candidates get, and what is minus its log?")
    return False
