"""Benchmark: our plain training loop against SentenceTransformerTrainer, same model, data and settings.

Both run MultipleNegativesRankingLoss (scale 20) on the help-desk pairs (one query per
distinct article, batches of --batch-size with no duplicate positives), AdamW (lr 2e-5,
weight decay 0.01 with biases and norms spared on both sides, no scheduler, no warm-up),
gradient norm clipped at 1, on the CPU. The loop is the by-hand step, `labs.retrieval.loss.train_step`;
the trainer is what `labs.retrieval.training.train` runs.
The trainer receives the same rows and draws its own batch order (its no-duplicates
sampler cannot refill batches from rows that repeat across epochs); every step has the
same size and the same cost. Steps per second are timed from the end of the first step to the end of the last one,
so set-up costs are left out of both. Prints both rates and their ratio (loop / trainer).

    python benchmarks/trainer_vs_loop.py [--model minilm] [--steps 12] [--batch-size 16]

Timings on a shared machine vary run to run; the ratio inside one run is what to compare.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

import numpy as np
import torch

from labs.retrieval.instruction import instruction_of
from labs.retrieval.models import load_encoder
from labs.retrieval.loss import adamw, make_loss, train_step
from labs.retrieval.models import offline


def pairs_for(batch_size: int, steps: int, instruction: str) -> list[tuple[str, str]]:
    """Rows for ``steps`` full batches, each batch with distinct positives, in a fixed order."""
    from labs.retrieval.batches import epoch_batches
    from labs.retrieval.helpdesk import make_helpdesk
    from labs.retrieval.instruction import format_query

    rng, rows = np.random.default_rng(0), []
    pairs = make_helpdesk().train_pairs
    while len(rows) < batch_size * steps:
        for batch in epoch_batches(pairs, batch_size, rng):
            if len(batch) == batch_size:
                rows += [(format_query(p["query"], instruction), p["positive"]) for p in batch]
    return rows[: batch_size * steps]


def decayed(model, optimizer) -> set[str]:
    """Names of the parameters the optimizer decays (weight_decay > 0 in their group)."""
    name_of = {id(p): n for n, p in model.named_parameters()}
    return {name_of[id(p)] for g in optimizer.param_groups if g["weight_decay"] > 0 for p in g["params"]}


def run_loop(model_name: str, rows, batch_size: int, lr: float, seed: int) -> tuple[float, set[str]]:
    torch.manual_seed(seed)
    model, _, _ = load_encoder(model_name)
    model.train()
    loss_fn = make_loss(model, "mnrl", scale=20.0)
    optimizer = adamw(model, lr=lr, weight_decay=0.01)
    ends = []
    for i in range(0, len(rows), batch_size):
        batch = rows[i:i + batch_size]
        train_step(model, loss_fn, optimizer, [[q for q, _ in batch], [d for _, d in batch]], device="cpu")
        ends.append(time.perf_counter())
    return (len(ends) - 1) / (ends[-1] - ends[0]), decayed(model, optimizer)


def run_trainer(model_name: str, rows, batch_size: int, lr: float, seed: int) -> tuple[float, set[str]]:
    from datasets import Dataset
    from sentence_transformers.base import BatchSamplers
    from sentence_transformers.sentence_transformer import (SentenceTransformerTrainer,
                                                            SentenceTransformerTrainingArguments)
    from transformers import TrainerCallback

    class Clock(TrainerCallback):
        ends: list[float] = []

        def on_step_end(self, args, state, control, **kwargs):
            self.ends.append(time.perf_counter())

    torch.manual_seed(seed)
    model, _, _ = load_encoder(model_name)
    data = Dataset.from_dict({"anchor": [q for q, _ in rows], "positive": [d for _, d in rows]})
    with tempfile.TemporaryDirectory() as tmp:
        args = SentenceTransformerTrainingArguments(
            output_dir=tmp, per_device_train_batch_size=batch_size, max_steps=len(rows) // batch_size,
            learning_rate=lr, weight_decay=0.01, max_grad_norm=1.0, lr_scheduler_type="constant", warmup_steps=0,
            optim="adamw_torch", batch_sampler=BatchSamplers.BATCH_SAMPLER, dataloader_drop_last=True,
            report_to="none", save_strategy="no", logging_strategy="no", disable_tqdm=True, use_cpu=True, seed=seed)
        clock = Clock()
        trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data,
                                             loss=make_loss(model, "mnrl", scale=20.0), callbacks=[clock])
        trainer.train()
    return (len(clock.ends) - 1) / (clock.ends[-1] - clock.ends[0]), decayed(model, trainer.optimizer)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm", help="'minilm' or a local model folder (e.g. a tiny Qwen3)")
    parser.add_argument("--steps", type=int, default=12, help="training steps for each side (>= 2)")
    parser.add_argument("--batch-size", type=int, default=16, help="pairs per step")
    parser.add_argument("--lr", type=float, default=2e-5, help="AdamW learning rate")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--json", help="also write the result to this new JSON file")
    args = parser.parse_args(argv)
    if args.steps < 2:
        parser.error("--steps must be >= 2")
    offline()
    torch.set_num_threads(args.threads)
    instruction = instruction_of(load_encoder(args.model)[0])
    rows = pairs_for(args.batch_size, args.steps, instruction)
    trainer, trainer_decay = run_trainer(args.model, rows, args.batch_size, args.lr, seed=0)
    loop, loop_decay = run_loop(args.model, rows, args.batch_size, args.lr, seed=0)
    result = {"model": args.model, "batch_size": args.batch_size, "steps": args.steps,
              "loop_steps_per_s": round(loop, 3), "trainer_steps_per_s": round(trainer, 3),
              "ratio_loop_over_trainer": round(loop / trainer, 3), "same_weight_decay": loop_decay == trainer_decay}
    print(json.dumps(result))
    if args.json:
        with open(args.json, "x", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    main()
