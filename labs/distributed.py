"""Training across processes: one contrastive batch spread over W workers, negatives gathered.

In plain words: with data parallelism (PyTorch DDP) each of W processes holds a
copy of the model and embeds its own B pairs; DDP averages the gradients so the
copies stay identical. Left alone, the loss would be W separate B-way exams.
With the loss's ``gather_across_devices=True`` every process first collects all
W x B embeddings (an all-gather that keeps gradients), so each query competes
with all W x B documents: the same loss, and after DDP's averaging the same
gradient, as one process holding the whole global batch. `ddp_step` shows that
(the test launches it with ``torchrun`` on 2 CPU processes, gloo backend).

`train_distributed` is ``python -m labs train`` through sentence-transformers'
``SentenceTransformerTrainer``; under ``torchrun --nproc_per_node N`` or
``accelerate launch`` the trainer makes it DDP (gloo on CPU, NCCL on GPUs):

    torchrun --nproc_per_node 2 -m labs.distributed --data D --out RUN [train flags]

Shapes
------
================  ===========  ==================================================
name              shape        meaning
================  ===========  ==================================================
local batch       B pairs      what one process embeds (``--batch-size``)
gathered queries  (W*B, d)     every process's queries, in rank order
gathered docs     (W*B, d)     every process's documents, in rank order
local loss rows   (B, W*B)     this process's queries against all documents
================  ===========  ==================================================

Relations: the loss is sentence-transformers' ``MultipleNegativesRankingLoss``
(or its cached version) with ``gather_across_devices=True``; the global batch is
cut like `labs.finetune.epoch_batches`; the run folder is `labs.finetune.train`'s.
Book page: ``book/scaling.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from labs.scaling import LOSSES, _flat_grads, features_of, make_loss, scale_pairs

__all__ = ["ddp_step", "train_distributed", "main"]


def ddp_step(model_dir: str, per_rank: int, out: str, *, scale: float = 20.0, lr: float = 0.5) -> None:
    """One DDP step on rank r's slice of ``scale_pairs(W * per_rank)``; run under ``torchrun``.

    Writes ``out/rank{r}.pt``: the loss without gathering (each rank's own B-way
    exam); with gathered negatives, the cached loss (chunks of 2) and its gradients,
    then the plain loss, its mean over ranks, its gradients after DDP's all-reduce
    and the parameters after one SGD step with them.
    """
    import torch.distributed as dist
    from sentence_transformers import SentenceTransformer
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    model = SentenceTransformer(model_dir, device="cpu", local_files_only=True)
    model.eval()  # no dropout: both sides must see the same network
    rows = scale_pairs(per_rank * world)[rank * per_rank:(rank + 1) * per_rank]
    features = features_of(model, [[q for q, _ in rows], [d for _, d in rows]])
    with torch.no_grad():
        local = float(make_loss(model, "mnrl", scale=scale)(features, None))
    ddp = DistributedDataParallel(model, find_unused_parameters=True)
    done = {}
    for kind in ("cached", "mnrl"):  # the cached loss in chunks of 2, then the plain one
        loss_fn = make_loss(model, kind, scale=scale, mini_batch_size=2, gather=True)
        loss_fn.model = ddp  # as SentenceTransformerTrainer does: the forward runs through the DDP wrapper
        loss = loss_fn(features, None)
        loss.backward()
        done[kind] = (loss.detach().clone(), _flat_grads(model).clone())
        if kind == "cached":
            model.zero_grad(set_to_none=True)
    mean = done["mnrl"][0].clone()
    dist.all_reduce(mean)
    torch.optim.SGD(model.parameters(), lr=lr).step()  # a step with the plain loss's gradients
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    torch.save({"rank": rank, "world": world, "local_loss": local, "gathered_loss": float(done["mnrl"][0]),
                "global_loss": float(mean) / world, "grads": done["mnrl"][1], "cached_loss": float(done["cached"][0]),
                "cached_grads": done["cached"][1], "params": params}, Path(out) / f"rank{rank}.pt")
    dist.destroy_process_group()


def train_distributed(config, loss: str = "mnrl", mini_batch_size: int = 16) -> dict | None:
    """``python -m labs train`` through ``SentenceTransformerTrainer``: under ``torchrun`` or
    ``accelerate launch`` it is PyTorch DDP (gloo on CPU, NCCL on GPUs), alone it is one process.

    ``config.batch_size`` is per process; W processes make one global batch of W x B
    pairs, cut by `labs.finetune.epoch_batches` (no positive twice in it) and handed
    out in rank order; the loss gathers every process's embeddings, so each query
    competes with all W x B documents. Incomplete global batches are dropped (every
    process must gather the same shape). Rank 0 scores validation MRR@5 before and
    after training (all epochs run as one trainer pass), keeps the better model as
    ``best/`` and writes the run folder of `labs.finetune.train`. The trainer's AdamW
    spares biases and norms from weight decay (the plain loop decays every weight).
    Returns metrics.json's content on rank 0, None elsewhere.
    """
    if config.hard_negatives:
        raise ValueError("hard_negatives: the distributed entry trains on pairs only; use python -m labs train")
    if isinstance(config.batch_size, bool) or not isinstance(config.batch_size, int) or config.batch_size < 2:
        raise ValueError(f"batch_size must be an integer >= 2, got {config.batch_size!r}")
    if not config.lr > 0 or not config.scale > 0:
        raise ValueError(f"lr and scale must be > 0, got lr={config.lr!r}, scale={config.scale!r}")
    scratch = tempfile.mkdtemp(prefix="labs-trainer-")  # the trainer's output_dir; nothing is saved there
    try:
        return _train(config, loss, mini_batch_size, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _train(config, loss: str, mini_batch_size: int, scratch: str) -> dict | None:
    import torch.distributed as dist
    from datasets import Dataset
    from sentence_transformers.base.sampler import DefaultBatchSampler
    from sentence_transformers.sentence_transformer import (SentenceTransformerTrainer,
                                                            SentenceTransformerTrainingArguments)
    from torch.utils.data import SequentialSampler
    from transformers.trainer_callback import PrinterCallback

    from labs.finetune import _memory, _save, _versions, default_instruction, epoch_batches, load_encoder
    from labs.helpdesk import file_sha256, load_dataset
    from labs.index import encode_texts, format_query, rank_split, show_progress, write_index

    cuda = config.device == "cuda"
    args = SentenceTransformerTrainingArguments(
        output_dir=scratch, per_device_train_batch_size=config.batch_size, num_train_epochs=1,
        max_steps=config.max_steps or -1, learning_rate=config.lr, weight_decay=0.01, max_grad_norm=1.0,
        lr_scheduler_type="constant", warmup_steps=0, optim="adamw_torch", seed=config.seed,
        batch_sampler=lambda ds, batch_size, drop_last, **_: DefaultBatchSampler(
            SequentialSampler(ds), batch_size=batch_size, drop_last=True),
        dataloader_drop_last=True, report_to="none", save_strategy="no", logging_steps=1,
        disable_tqdm=not show_progress(), use_cpu=not cuda, bf16=cuda if config.bf16 is None else config.bf16,
        ddp_backend="gloo" if not cuda and int(os.environ.get("WORLD_SIZE", "1")) > 1 else None)
    rank, world = args.process_index, args.world_size
    out = Path(config.out)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"run folder {config.out!r} is not empty: choose a new one, nothing was overwritten")
    if dist.is_initialized():
        dist.barrier()  # every rank checked the folder before rank 0 writes into it
    data = load_dataset(config.data)
    torch.manual_seed(config.seed)
    model, source, revision = load_encoder(config.model, config.device, config.max_length)
    instruction = default_instruction(model) if config.instruction is None else config.instruction
    if (cuda if config.gradient_checkpointing is None else config.gradient_checkpointing):
        model[0].auto_model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    rng, anchors, positives = np.random.default_rng(config.seed), [], []
    for _ in range(config.epochs):
        for batch in epoch_batches(data.train_pairs, config.batch_size * world, rng):
            if len(batch) == config.batch_size * world:
                anchors += [format_query(p["query"], instruction) for p in batch]
                positives += [p["positive"] for p in batch]
    if config.epochs and not anchors:
        raise ValueError(f"no full global batch: {world} processes x batch {config.batch_size} needs that many "
                         "distinct positives; lower --batch-size")
    ids = [d["doc_id"] for d in data.corpus]

    def validate() -> dict:
        model.eval()
        with torch.no_grad():
            emb = encode_texts(model, [d["text"] for d in data.corpus], config.eval_batch_size)
            return rank_split(model, instruction, emb, ids, data, "val", config.eval_batch_size)[0]

    history = []
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        history.append({"epoch": 0, "steps": 0, "train_loss": None, **validate()})
        _save(model, out / "best", instruction)
    start, log = time.perf_counter(), []
    if anchors:
        trainer = SentenceTransformerTrainer(
            model=model, args=args, train_dataset=Dataset.from_dict({"anchor": anchors, "positive": positives}),
            loss=make_loss(model, loss, scale=config.scale, mini_batch_size=mini_batch_size, gather=world > 1))
        if not show_progress():  # quiet under CI: no per-step log lines
            trainer.remove_callback(PrinterCallback)
        trainer.train()
        log = [row["loss"] for row in trainer.state.log_history if "loss" in row]
    seconds = time.perf_counter() - start
    report = None
    if rank == 0:
        steps = len(log)
        history.append({"epoch": config.epochs, "steps": steps,
                        "train_loss": float(np.mean(log)) if log else None, **validate()})
        if steps and history[-1]["mrr@5"] > history[0]["mrr@5"]:
            _save(model, out / "best", instruction)
        best, _, _ = load_encoder(str(out / "best"), config.device, config.max_length)
        write_index(out, best, instruction=instruction, max_length=config.max_length, source=source,
                    revision=revision, corpus=data.corpus, batch_size=config.eval_batch_size,
                    corpus_sha256=file_sha256(Path(config.data) / "corpus.jsonl"))
        selected, rankings = rank_split(best, instruction, np.load(out / "corpus_embeddings.npy"), ids, data,
                                        "val", config.eval_batch_size)
        (out / "validation_rankings.json").write_text(json.dumps(rankings, indent=1) + "\n", encoding="utf-8")
        report = {"config": asdict(config),
                  "entry": "labs.distributed (SentenceTransformerTrainer)", "loss": loss,
                  "gather_across_devices": world > 1, "processes": world, "global_batch": config.batch_size * world,
                  "source_model": source, "revision": revision, "instruction": instruction, "steps": steps,
                  "train_seconds": round(seconds, 2), "losses": log, "history": history,
                  "selected_epoch": history[-1]["epoch"] if history[-1]["mrr@5"] > history[0]["mrr@5"] else 0,
                  "selected_validation": selected, "memory": _memory(config.device), "versions": _versions()}
        (out / "metrics.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if dist.is_initialized():
        dist.barrier()
    return report


def _config(argv: list[str]):
    from labs.__main__ import _parser
    from labs.finetune import TrainConfig

    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--loss", default="mnrl", choices=LOSSES)
    extra.add_argument("--mini-batch-size", type=int, default=16)
    own, rest = extra.parse_known_args(argv)
    a = _parser().parse_args(["train", *rest])
    config = TrainConfig(data=a.data, out=a.out, model=a.model, device=a.device, epochs=a.epochs,
                         batch_size=a.batch_size, lr=a.lr, scale=a.scale, max_length=a.max_length, seed=a.seed,
                         hard_negatives=a.hard_negatives, instruction=a.instruction, max_steps=a.max_steps,
                         eval_batch_size=a.eval_batch_size)
    return config, own.loss, own.mini_batch_size


def main(argv: list[str] | None = None) -> int:
    """``python -m labs.distributed [--loss mnrl|cached] [--mini-batch-size M] TRAIN FLAGS``: the flags of
    ``python -m labs train`` (see its --help), run through the trainer; ``ddp-step ...`` is the test's probe."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["ddp-step"]:
        p = argparse.ArgumentParser(prog="python -m labs.distributed ddp-step")
        p.add_argument("--model-dir", required=True, help="a sentence-transformers folder")
        p.add_argument("--per-rank", type=int, default=4, help="pairs per process")
        p.add_argument("--out", required=True, help="existing folder for rank{r}.pt")
        p.add_argument("--scale", type=float, default=20.0, help="1 / temperature")
        a = p.parse_args(argv[1:])
        ddp_step(a.model_dir, a.per_rank, a.out, scale=a.scale)
        return 0
    if argv[:1] in (["-h"], ["--help"]):
        print(main.__doc__)
        return 0
    try:
        config, loss, mini = _config(argv)
        report = train_distributed(config, loss, mini)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for row in (report or {}).get("history", []):
        loss_text = "   -  " if row["train_loss"] is None else f"{row['train_loss']:.3f}"
        print(f"epoch {row['epoch']}: loss {loss_text}  val MRR@5 {row['mrr@5']:.3f}  Recall@5 {row['recall@5']:.3f}")
    if report:
        print(f"{report['processes']} process(es), global batch {report['global_batch']}, {report['steps']} steps; "
              f"selected epoch {report['selected_epoch']}; run folder {config.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
