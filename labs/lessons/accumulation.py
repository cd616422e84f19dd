"""Gradient accumulation is not a bigger batch: four batches of 16 summed into one update still
show each query 15 wrong documents, not 63.

In plain words: with in-batch negatives a bigger batch is a harder exam (each query picks its
document out of more candidates). Accumulating the gradients of several small batches adds up
their losses, but each loss was computed against its own small batch only.
`accumulation_vs_true_batch` computes both on the same N pairs: the micro-batch losses (what
accumulation minimises), the true-batch loss, and how many queries have their most similar
wrong document in another micro-batch (a negative accumulation never shows them).

Shapes
------
==============  =========  ====================================================
name            shape      meaning
==============  =========  ====================================================
queries, docs   (N, d)     embeddings, normalised inside; row i's answer is doc i
micro           m          rows per micro-batch; N must be a multiple of m
==============  =========  ====================================================

Relations: the loss is `labs.lessons.infonce` (sentence-transformers' MNRL with
``scale = 1 / tau``). The memory side (GradCache) is `labs.retrieval.scaling`.
Page: ``book/scaling.md``.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import torch

from labs.checks import MOST, arguments, integer, positive, require, tensor, unit_rows
from labs.lessons.infonce import info_nce_rows, info_nce_torch

__all__ = ["accumulation_vs_true_batch"]


def _values(x: torch.Tensor, name: str) -> torch.Tensor:
    """The rows' values as float64 on the CPU: only they are used, so nothing here trains."""
    require(isinstance(x, torch.Tensor), f"queries and docs must be tensors of the same shape (N, d), got "
            f"{type(x).__name__}")
    require(not (x.dtype.is_complex or x.dtype == torch.bool), f"{name} must hold real numbers, got "
            + ("complex numbers: give real embeddings" if x.dtype.is_complex else "booleans"))
    return tensor(x.detach().cpu().double(), name, finite=True)


@arguments(queries=_values, docs=_values, micro=partial(integer, minimum=2, maximum=MOST),
           scale=partial(positive, what="a finite number > 0 (1 / tau)"))
def accumulation_vs_true_batch(queries: torch.Tensor, docs: torch.Tensor, micro: int = 16,
                               scale: float = 20.0) -> dict:
    """N pairs as N/micro accumulated micro-batches vs one true batch of N: losses and competitors.

    Returns the micro-batch losses and their mean (what accumulation minimises), the
    true-batch loss, candidates per query in each, the chance levels log(m) and log(N),
    how many rows lose more in the true batch (all must: the softmax only gains terms),
    and how many queries have their most similar wrong document in another micro-batch.

    ``queries`` and ``docs`` are tensors of real, finite numbers with no all-zero row (only their
    values are used, in float64, so a tensor that requires grad is fine); a row of any size
    keeps its direction. ``micro`` is an integer that divides N into several micro-batches,
    ``scale`` (1 / tau) a finite number > 0.
    """
    require(queries.ndim == 2 and queries.shape == docs.shape and 0 not in queries.shape, "queries and docs must "
            f"be tensors of the same shape (N, d), N and d >= 1, got {tuple(queries.shape)} and {tuple(docs.shape)}")
    n, tau = queries.shape[0], 1.0 / scale
    require(n % micro == 0 and n != micro, f"micro must be an integer >= 2 that divides N={n} into several "
            f"micro-batches, got {micro!r}")
    q, d = unit_rows(queries, "queries row"), unit_rows(docs, "docs row")
    S = (q @ d.T).numpy()
    with np.errstate(over="ignore"):
        require(np.all(np.isfinite(S / tau)), f"scale={scale!r} is too large: the scores times scale overflow float64")
        true_rows = info_nce_rows(S, tau)
        micro_rows = np.concatenate([info_nce_rows(S[i:i + micro, i:i + micro], tau) for i in range(0, n, micro)])
        micro_losses = [float(info_nce_torch(q[i:i + micro], d[i:i + micro], tau)) for i in range(0, n, micro)]
        wrong = S.copy()
        np.fill_diagonal(wrong, -np.inf)
        hardest = wrong.argmax(axis=1)
        out = {"n": n, "micro": micro, "micro_losses": micro_losses, "accumulated_loss": float(np.mean(micro_losses)),
               "true_loss": float(info_nce_torch(q, d, tau)), "candidates_micro": micro, "candidates_true": n,
               "chance_micro": math.log(micro), "chance_true": math.log(n),
               "rows_higher_in_true_batch": int(np.sum(true_rows > micro_rows - 1e-12)),
               "hardest_negative_elsewhere": int(np.sum(hardest // micro != np.arange(n) // micro)),
               "micro_rows_mean": float(micro_rows.mean()), "true_rows_mean": float(true_rows.mean())}
    require(all(math.isfinite(v) for v in [*micro_losses, out["accumulated_loss"], out["true_loss"],
                                          out["micro_rows_mean"], out["true_rows_mean"]]),
            f"scale={scale!r} is too large: the losses (about scale x a cosine gap) overflow float64")
    return out
