"""Fine-tuning an embedding model on query/document pairs, chosen on validation, saved as a run folder.

In plain words: each step takes a batch of B training questions and their B
articles, embeds them, and asks every question to pick its own article out of
the B in the batch (sentence-transformers' ``MultipleNegativesRankingLoss``,
scale 20 = temperature 0.05; the same loss as `labs.infonce.info_nce_torch`).
Optionally each row also brings a mined *hard negative*: a training article
the TF-IDF baseline ranks high for that question but which is not one of its
answers. Each epoch draws one question per distinct article, so no article is
twice in a batch (a duplicate would be punished as its own negative); a final
batch of one is dropped (nothing to compare against).

`train` is the one training path (the CLI's ``train``, the notebook, and
``torchrun`` for several processes): the batches above, fed in order to
sentence-transformers' ``SentenceTransformerTrainer``; AdamW (weight decay 0.01,
biases and norms spared), gradient norm clipped at 1, no scheduler. The
library's ``InformationRetrievalEvaluator`` scores validation MRR@5 before
training (epoch 0) and after every epoch; ``best/`` is saved only when a score
beats the best so far, so the untouched model can win. Test queries are never
read. The by-hand step, `train_step`, stays as the lesson of what one update
does (``benchmarks/trainer_vs_loop.py`` times it against the trainer).

Precision: the weights the optimizer updates are float32 whatever the
checkpoint stores (`labs.gpu.assert_float32_master` checks before training);
autocast computes in bf16 on GPUs that support it natively, in fp16 with a
gradient scaler on older GPUs, and not at all on the CPU
(`labs.gpu.training_precision`). ``best/`` is saved in float32.

Shapes
------
=============  ================  ============================================
name           shape             meaning
=============  ================  ============================================
batch          B rows            (query, positive[, hard negative]) texts
embeddings     (B, d) per column d = 384 (MiniLM) or 1024 (Qwen3-0.6B)
similarities   (B, B) or (B, 2B) the loss's table; row i's answer is column i
=============  ================  ============================================

Lesson: ``notebooks/05_finetuning.ipynb``; several processes: ``book/scaling.md``.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from labs import plumbing
from labs.contract import seal_run
from labs.encoder import (DEFAULT_TASK, LOSSES, adamw, check_device, default_instruction, load_encoder, make_loss,
                          save_model, train_step, train_step_features)
from labs.gpu import assert_float32_master, set_determinism, training_precision
from labs.helpdesk import HelpdeskData, data_hashes, file_sha256, load_dataset
from labs.index import format_query, rank_split, write_index
from labs.metrics import rank_documents, tfidf_scores
from labs.finetune_checks import FIRST_JUMP_B, check_chance_loss, check_first_jump, check_kept_epoch
from labs.qwen3 import check_attention, count_parameters

__all__ = [
    "DEFAULT_TASK",
    "TrainConfig",
    "check_config",
    "load_encoder",
    "default_instruction",
    "epoch_batches",
    "mine_hard_negatives",
    "batch_columns",
    "adamw",
    "train_step",
    "train_step_features",
    "train",
    "check_chance_loss",
    "check_first_jump",
    "check_kept_epoch",
    "FIRST_JUMP_B",
]

METRICS = tuple(f"{m}@{k}" for k in (1, 5, 10) for m in ("recall", "mrr", "ndcg"))


@dataclass
class TrainConfig:
    """Settings of one training run (the flags of ``python -m labs train``)."""

    data: str
    out: str
    model: str = "minilm"            # "minilm", the Qwen3 hub id, or a local folder
    device: str = "cpu"              # "cpu" or "cuda"
    epochs: int = 3
    batch_size: int = 16             # per process
    lr: float = 2e-5
    scale: float = 20.0              # 1 / temperature
    max_length: int = 128
    seed: int = 0
    hard_negatives: bool = False
    instruction: str | None = None   # None: the model's own default (Qwen3: DEFAULT_TASK; MiniLM: none)
    max_steps: int | None = None     # stop early (smoke runs)
    eval_batch_size: int = 32
    precision: str | None = None     # "bf16", "fp16", "fp32"; None: labs.gpu.training_precision(device)
    gradient_checkpointing: bool = False
    attn: str = "sdpa"               # attention kernel: sdpa, eager, flash_attention_2 (if installed)
    loss: str = "mnrl"               # "mnrl" or "cached" (GradCache, chunks of mini_batch_size)
    mini_batch_size: int = 16
    weight_decay: float = 0.01


def check_config(config: TrainConfig) -> None:
    """Every setting in range, before any data or model is read (ValueError naming the setting)."""
    check_device(config.device)
    plumbing.check_int("epochs", config.epochs, 0)
    plumbing.check_int("batch_size", config.batch_size, 2)
    plumbing.check_int("max_length", config.max_length, 8)
    plumbing.check_int("eval_batch_size", config.eval_batch_size, 1)
    plumbing.check_int("mini_batch_size", config.mini_batch_size, 1)
    plumbing.check_int("seed", config.seed, 0)
    if config.max_steps is not None:
        plumbing.check_int("max_steps", config.max_steps, 1)
    plumbing.check_positive("lr", config.lr)
    plumbing.check_positive("scale", config.scale)
    if config.weight_decay != 0:
        plumbing.check_positive("weight_decay", config.weight_decay)
    if config.loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {config.loss!r}")
    if config.precision not in (None, "bf16", "fp16", "fp32"):
        raise ValueError(f"precision must be bf16, fp16 or fp32, got {config.precision!r}")
    if config.precision in ("bf16", "fp16") and config.device != "cuda":
        raise ValueError(f"precision {config.precision} needs --device cuda; the CPU trains in fp32")
    check_attention(config.attn)


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


# ---- the one training path --------------------------------------------------------------------

class _PlannedBatches:
    """A batch sampler that yields the planned batches (lists of row indices) in order."""

    def __init__(self, batches: list[list[int]], batch_size: int) -> None:
        self.batches, self.batch_size, self.drop_last = batches, batch_size, False

    def __iter__(self):
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)


def _plan(data: HelpdeskData, config: TrainConfig, instruction: str, world: int):
    """Every epoch's rows in order as dataset columns, the batches (row indices, for one process
    each in turn) and the update count at the end of each epoch.

    One process: every batch of `epoch_batches`. W processes: only full global batches of W x B
    pairs (every process gathers the same shape), each cut into W chunks of B; chunk r goes to
    process r (how accelerate shards a batch sampler).
    """
    rng = np.random.default_rng(config.seed)
    negatives = mine_hard_negatives(data, per_query=len(data.corpus)) if config.hard_negatives else None
    text_of = {d["doc_id"]: d["text"] for d in data.corpus}
    columns: dict[str, list[str]] = {"anchor": [], "positive": [], **({"negative": []} if negatives else {})}
    batches: list[list[int]] = []
    ends = []
    for _ in range(config.epochs):
        for batch in epoch_batches(data.train_pairs, config.batch_size * world, rng):
            if world > 1 and len(batch) < config.batch_size * world:
                continue
            cols = batch_columns(batch, instruction, negatives, text_of)
            if len(cols) != len(columns):
                raise ValueError(f"--hard-negatives: a batch of {len(batch)} holds every candidate negative of "
                                 "one of its questions; lower --batch-size")
            start = len(columns["anchor"])
            for name, col in zip(columns, cols):
                columns[name] += col
            size = config.batch_size if world > 1 else len(batch)
            batches += [list(range(s, s + size)) for s in range(start, start + len(batch), size)]
        ends.append(len(batches) // world)
    if config.epochs and not batches:
        raise ValueError(f"no full global batch: {world} processes x --batch-size {config.batch_size} needs that "
                         "many distinct positives; lower --batch-size")
    return columns, batches, ends


def _val_evaluator(data: HelpdeskData, instruction: str, batch_size: int):
    """sentence-transformers' InformationRetrievalEvaluator on validation: the course's metrics at 1, 5, 10."""
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator
    from sentence_transformers.util import cos_sim

    queries = {q["query_id"]: format_query(q["text"], instruction) for q in data.split_queries("val")}
    return InformationRetrievalEvaluator(
        queries, {d["doc_id"]: d["text"] for d in data.corpus}, data.qrels("val"), mrr_at_k=[1, 5, 10],
        ndcg_at_k=[1, 5, 10], accuracy_at_k=[1], precision_recall_at_k=[1, 5, 10], map_at_k=[10],
        batch_size=batch_size, name="val", write_csv=False, score_functions={"cosine": cos_sim},
        main_score_function="cosine", show_progress_bar=plumbing.show_progress())


def _selector(model, best_dir: Path | None, instruction: str, ends: list[int]):
    """A trainer callback: evaluate at each epoch's end; keep ``best/`` when validation MRR@5 beats
    every score so far (the untouched model's, epoch 0, included). Holds the history."""
    from transformers import TrainerCallback

    class SelectBest(TrainerCallback):
        def __init__(self) -> None:
            self.history: list[dict] = []
            self.best_epoch = 0

        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step in ends or state.global_step == state.max_steps:
                control.should_evaluate = True

        def on_evaluate(self, args, state, control, metrics=None, **kwargs):
            step, last = state.global_step, (self.history[-1]["steps"] if self.history else 0)
            losses = [r["loss"] for r in state.log_history if "loss" in r and last < r.get("step", 0) <= step]
            epoch = next((e for e, end in enumerate(ends, start=1) if step <= end), len(ends)) if step else 0
            row = {"epoch": epoch, "steps": step, "train_loss": float(np.mean(losses)) if losses else None,
                   **{m: float(metrics[f"eval_val_cosine_{m}"]) for m in METRICS}}
            if not np.isfinite(row["train_loss"] if losses else 0.0):
                raise FloatingPointError(f"the training loss is {row['train_loss']} at step {step}: "
                                         "lower --lr or check the data")
            better = not self.history or row["mrr@5"] > max(h["mrr@5"] for h in self.history)
            self.history.append(row)
            if better:
                self.best_epoch = epoch
                if best_dir is not None:
                    save_model(model, best_dir, instruction)
            plumbing.stage(f"scored epoch {epoch}")

    return SelectBest()


def train(config: TrainConfig) -> dict | None:
    """Train, select on validation MRR@5 (epoch 0 included), index the corpus; return metrics.json's content.

    The run folder is built next to ``config.out`` and renamed into place only when the model,
    index, contract and metrics are all written; a second run on the same folder at the same
    time is refused at once; a folder that already has files is refused. Under ``torchrun`` or
    ``accelerate launch`` (several processes) this is PyTorch DDP with negatives gathered from
    every process; process 0 writes the run and returns the report, the others return None.
    """
    check_config(config)
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    plumbing.check_new_path(config.out, "run folder")
    deterministic = torch.are_deterministic_algorithms_enabled()
    try:
        if rank != 0:
            return _run(config, load_dataset(config.data), None, world)
        with plumbing.build_atomically(config.out, "run folder") as folder:  # the lock first: a second run fails at once
            return _run(config, load_dataset(config.data), folder, world)
    finally:
        torch.use_deterministic_algorithms(deterministic)


def _run(config: TrainConfig, data: HelpdeskData, folder: Path | None, world: int) -> dict | None:
    import shutil
    import tempfile

    from datasets import Dataset
    from sentence_transformers.sentence_transformer import (SentenceTransformerTrainer,
                                                            SentenceTransformerTrainingArguments)
    from transformers.trainer_callback import PrinterCallback

    cuda = config.device == "cuda"
    set_determinism(config.seed)
    precision = config.precision or training_precision(config.device)
    plumbing.reset_peak()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    model, source, revision = load_encoder(config.model, config.device, config.max_length, config.attn)
    instruction = default_instruction(model) if config.instruction is None else config.instruction
    model.prompts = {}  # the instruction is added once, by format_query; never again as a saved prompt
    columns, batches, ends = _plan(data, config, instruction, world)
    if config.gradient_checkpointing and hasattr(model[0], "auto_model"):
        auto = model[0].auto_model  # transformers 5 renamed the switch; 4.x has only the old name
        enable = getattr(auto, "activation_checkpointing_enable", None)
        if enable is not None:
            enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:
            auto.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    assert_float32_master(model)  # before the trainer builds its optimizer
    plumbing.stage("loaded")
    scratch = tempfile.mkdtemp(prefix="labs-trainer-")  # the trainer's output_dir; nothing is kept there
    try:
        args = SentenceTransformerTrainingArguments(
            output_dir=scratch, per_device_train_batch_size=config.batch_size, num_train_epochs=1,
            max_steps=config.max_steps or -1, learning_rate=config.lr, weight_decay=config.weight_decay,
            max_grad_norm=1.0, lr_scheduler_type="constant", warmup_steps=0,
            optim="adamw_torch_fused" if cuda else "adamw_torch", seed=config.seed,
            batch_sampler=lambda dataset, **_: _PlannedBatches(batches, config.batch_size),
            report_to="none", save_strategy="no", eval_strategy="no", logging_steps=1,
            disable_tqdm=not plumbing.show_progress(), use_cpu=not cuda, bf16=precision == "bf16",
            fp16=precision == "fp16", ddp_backend="gloo" if not cuda and world > 1 else None)
        selector = _selector(model, folder / "best" if folder else None, instruction, ends)
        # Runs are saved without a model card: skip the card's widget examples (a notebook progress bar).
        model.model_card_data.widget = [{"text": "no model card is written"}]
        trainer = SentenceTransformerTrainer(
            model=model, args=args, train_dataset=Dataset.from_dict(columns) if batches else None,
            evaluator=_val_evaluator(data, instruction, config.eval_batch_size), callbacks=[selector],
            loss=make_loss(model, config.loss, scale=config.scale, mini_batch_size=config.mini_batch_size,
                           gather=world > 1))
        if not plumbing.show_progress():  # quiet under CI: no per-step log lines
            trainer.remove_callback(PrinterCallback)
        trainer.evaluate()  # epoch 0: the untouched model
        start = time.perf_counter()
        if batches:
            trainer.train()
        seconds = time.perf_counter() - start
        losses = [row["loss"] for row in trainer.state.log_history if "loss" in row]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    plumbing.stage("trained")
    if folder is None:
        return None
    parameters = count_parameters(model)
    weights_dtype = "+".join(sorted({str(p.dtype).removeprefix("torch.") for p in model.parameters()}))
    del trainer, model  # free the training copy before loading the selected one
    best, _, _ = load_encoder(str(folder / "best"), config.device, config.max_length, config.attn)
    contract = write_index(folder, best, instruction=instruction, max_length=config.max_length, source=source,
                           revision=revision, corpus=data.corpus, batch_size=config.eval_batch_size,
                           corpus_sha256=file_sha256(Path(config.data) / "corpus.jsonl"))
    plumbing.stage("indexed")
    ids = json.loads((folder / "corpus_ids.json").read_text(encoding="utf-8"))
    selected, rankings = rank_split(best, instruction, np.load(folder / "corpus_embeddings.npy"), ids, data,
                                    "val", config.eval_batch_size)
    (folder / "validation_rankings.json").write_text(json.dumps(rankings, indent=1) + "\n", encoding="utf-8")
    report = {
        "config": asdict(config), "entry": "labs.finetune.train (SentenceTransformerTrainer)",
        "source_model": source, "revision": revision, "instruction": instruction, "parameters": parameters,
        "dimensions": contract["dimensions"], "hard_negatives": bool(config.hard_negatives), "loss": config.loss,
        "precision": precision, "weights_dtype": weights_dtype, "gradient_checkpointing": config.gradient_checkpointing,
        "attn": config.attn, "processes": world, "global_batch": config.batch_size * world,
        "gather_across_devices": world > 1, "steps": len(losses), "train_seconds": round(seconds, 2),
        "losses": losses, "history": selector.history, "selected_epoch": selector.best_epoch,
        "selected_validation": selected, "data_sha256": data_hashes(config.data),
        "memory": plumbing.memory_report(config.device), "versions": plumbing.versions(),
    }
    (folder / "metrics.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    plumbing.stage("written")
    seal_run(folder)  # last: the contract says complete only now
    plumbing.stage("sealed")
    return report
