"""Training across processes: one contrastive batch spread over W workers, negatives gathered.

In plain words: with data parallelism (PyTorch DDP) each of W processes holds a
copy of the model and embeds its own B pairs; DDP averages the gradients so the
copies stay identical. Left alone, the loss would be W separate B-way exams.
With the loss's ``gather_across_devices=True`` every process first collects all
W x B embeddings (an all-gather that keeps gradients), so each query competes
with all W x B documents: the same loss, and after DDP's averaging the same
gradient, as one process holding the whole global batch. `ddp_step` shows that
(the test launches it with ``torchrun`` on 2 CPU processes, gloo backend).

Training across processes is the one training path, `labs.retrieval.training.train`
(sentence-transformers' ``SentenceTransformerTrainer``): under ``torchrun
--nproc_per_node N`` or ``accelerate launch`` the trainer makes it DDP (gloo on
CPU, NCCL on GPUs) and the loss gathers every process's embeddings:

    torchrun --nproc_per_node 2 -m labs train --data D --out RUN [train flags]

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

Buffers: DDP broadcasts a module's buffers from rank 0 before every forward. An encoder's
buffers are constants (BERT's position and token-type ids), equal on every rank, and the loss
runs the model twice (queries, then documents) before one backward. Before torch 2.13 that
in-place broadcast bumped the buffers' version counters, so backward failed ("modified by an
inplace operation: [torch.LongTensor [1, L]]"); 2.13 preserves the counters. `ddp_step` turns
the broadcast off (`no_buffer_sync`), as sentence-transformers' training arguments do for the
trainer (``ddp_broadcast_buffers=False``).

Relations: the loss is `labs.retrieval.loss.make_loss` (sentence-transformers'
MNRL or its cached version) with ``gather_across_devices=True``; the global
batch is cut like `labs.retrieval.batches.plan_batches`; the run folder is
`labs.retrieval.training.train`'s.
Book page: ``book/scaling.md``.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path

import torch
from torch.nn.parallel import DistributedDataParallel

from labs.retrieval.scaling import features_of, flat_grads, scale_pairs
from labs.retrieval.loss import make_loss

__all__ = ["no_buffer_sync", "ddp_step", "main"]


def no_buffer_sync() -> dict[str, bool]:
    """DDP's keyword that stops the broadcast of buffers before every forward, as this torch
    spells it: ``forward_sync_buffers=False`` from torch 2.13 (whose ``broadcast_buffers`` is
    deprecated), ``broadcast_buffers=False`` before (where the broadcast breaks backward)."""
    if "forward_sync_buffers" in inspect.signature(DistributedDataParallel).parameters:
        return {"forward_sync_buffers": False}
    return {"broadcast_buffers": False}


def ddp_step(model_dir: str, per_rank: int, out: str, *, scale: float = 20.0, lr: float = 0.5,
             keep_group: bool = False) -> None:
    """One DDP step on rank r's slice of ``scale_pairs(W * per_rank)``; run under ``torchrun``.

    Writes ``out/rank{r}.pt``: the loss without gathering (each rank's own B-way
    exam); with gathered negatives, the cached loss (chunks of 2) and its gradients,
    then the plain loss, its mean over ranks, its gradients after DDP's all-reduce
    and the parameters after one SGD step with them. ``keep_group`` leaves the
    process group up for more work in the same launch.
    """
    import torch.distributed as dist
    from sentence_transformers import SentenceTransformer

    if not dist.is_initialized():
        dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    model = SentenceTransformer(model_dir, device="cpu", local_files_only=True)
    model.eval()  # no dropout: both sides must see the same network
    rows = scale_pairs(per_rank * world)[rank * per_rank:(rank + 1) * per_rank]
    features = features_of(model, [[q for q, _ in rows], [d for _, d in rows]])
    with torch.no_grad():
        local = float(make_loss(model, "mnrl", scale=scale)(features, None))
    ddp = DistributedDataParallel(model, find_unused_parameters=True, **no_buffer_sync())
    done = {}
    for kind in ("cached", "mnrl"):  # the cached loss in chunks of 2, then the plain one
        loss_fn = make_loss(model, kind, scale=scale, mini_batch_size=2, gather=True)
        loss_fn.model = ddp  # as SentenceTransformerTrainer does: the forward runs through the DDP wrapper
        loss = loss_fn(features, None)
        loss.backward()
        done[kind] = (loss.detach().clone(), flat_grads(model).clone())
        if kind == "cached":
            model.zero_grad(set_to_none=True)
    mean = done["mnrl"][0].clone()
    dist.all_reduce(mean)
    torch.optim.SGD(model.parameters(), lr=lr).step()  # a step with the plain loss's gradients
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    torch.save({"rank": rank, "world": world, "local_loss": local, "gathered_loss": float(done["mnrl"][0]),
                "global_loss": float(mean) / world, "grads": done["mnrl"][1], "cached_loss": float(done["cached"][0]),
                "cached_grads": done["cached"][1], "params": params}, Path(out) / f"rank{rank}.pt")
    if not keep_group:
        dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    """``python -m labs.retrieval.distributed ddp-step --model-dir M --out D [--per-rank B] [--scale S]``: the
    two-process probe of `ddp_step`, run under ``torchrun``. Training: ``python -m labs train``."""
    p = argparse.ArgumentParser(prog="python -m labs.retrieval.distributed", description=main.__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("ddp-step", help="one DDP step, each rank's loss and gradients saved")
    s.add_argument("--model-dir", required=True, help="a sentence-transformers folder")
    s.add_argument("--per-rank", type=int, default=4, help="pairs per process")
    s.add_argument("--out", required=True, help="existing folder for rank{r}.pt")
    s.add_argument("--scale", type=float, default=20.0, help="1 / temperature")
    a = p.parse_args(argv)
    ddp_step(a.model_dir, a.per_rank, a.out, scale=a.scale)
    return 0


if __name__ == "__main__":
    sys.exit(main())
