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

import numpy as np
import torch

from labs.lessons.infonce import info_nce_rows, info_nce_torch
from labs.lessons.inputs import real_number, whole_number

__all__ = ["accumulation_vs_true_batch"]

_SMALL = 1e-150  # rows shorter than this (or too long for float64) are scaled by their largest entry first


def _embeddings(x: torch.Tensor, name: str) -> torch.Tensor:
    """Unit rows (float64, CPU) of a (N, d) tensor of real, finite numbers with no all-zero row."""
    if x.dtype.is_complex or x.dtype == torch.bool:
        what = "complex numbers: give real embeddings" if x.dtype.is_complex else "booleans"
        raise ValueError(f"{name} must hold real numbers, got {what}")
    x = x.detach().cpu().double()  # only the values are used: nothing here trains
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} contains NaN or infinite entries")
    largest = x.abs().amax(dim=-1, keepdim=True)
    zero = torch.nonzero(largest[:, 0] == 0)
    if len(zero):
        raise ValueError(f"{name} row {int(zero[0, 0])} is all zeros: it has no direction to normalise")
    norms = torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    redo = ~((norms > _SMALL) & (norms < torch.inf))  # squares that under- or overflowed float64
    if bool(redo.any()):
        x = torch.where(redo, x / largest, x)
    return torch.nn.functional.normalize(x, dim=-1)


def accumulation_vs_true_batch(queries: torch.Tensor, docs: torch.Tensor, micro: int = 16,
                               scale: float = 20.0) -> dict:
    """N pairs as N/micro accumulated micro-batches vs one true batch of N: losses and competitors.

    Returns the micro-batch losses and their mean (what accumulation minimises), the
    true-batch loss, candidates per query in each, the chance levels log(m) and log(N),
    how many rows lose more in the true batch (all must: the softmax only gains terms),
    and how many queries have their most similar wrong document in another micro-batch.

    ``queries`` and ``docs`` are tensors of real, finite numbers with no all-zero row (only their
    values are used, in float64, so a tensor that requires grad is fine); a row of any size
    keeps its direction. ``micro`` is an integer, ``scale`` (1 / tau) a finite number > 0.
    """
    if not (isinstance(queries, torch.Tensor) and isinstance(docs, torch.Tensor)):
        raise ValueError(f"queries and docs must be tensors of the same shape (N, d), got "
                         f"{type(queries).__name__} and {type(docs).__name__}")
    if queries.ndim != 2 or queries.shape != docs.shape or 0 in queries.shape:
        raise ValueError(f"queries and docs must be tensors of the same shape (N, d), N and d >= 1, got "
                         f"{tuple(queries.shape)} and {tuple(docs.shape)}")
    n = queries.shape[0]
    wrong_micro = f"micro must be an integer >= 2 that divides N={n} into several micro-batches, got {micro!r}"
    try:
        micro = whole_number(micro, "micro", 2)
    except ValueError:
        raise ValueError(wrong_micro) from None
    if n % micro or n == micro:
        raise ValueError(wrong_micro)
    scale = real_number(scale, "scale", "a finite number > 0 (1 / tau)")
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a finite number > 0 (1 / tau), got {scale!r}")
    tau = 1.0 / scale
    q, d = _embeddings(queries, "queries"), _embeddings(docs, "docs")
    S = (q @ d.T).numpy()
    with np.errstate(over="ignore"):
        if not (tau > 0 and np.all(np.isfinite(S / tau))):
            raise ValueError(f"scale={scale!r} is too large: the scores times scale overflow float64")
    with np.errstate(over="ignore"):
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
    if not all(math.isfinite(v) for v in [*micro_losses, out["accumulated_loss"], out["true_loss"],
                                          out["micro_rows_mean"], out["true_rows_mean"]]):
        raise ValueError(f"scale={scale!r} is too large: the losses (about scale x a cosine gap) overflow float64")
    return out
