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

__all__ = ["accumulation_vs_true_batch"]


def accumulation_vs_true_batch(queries: torch.Tensor, docs: torch.Tensor, micro: int = 16,
                               scale: float = 20.0) -> dict:
    """N pairs as N/micro accumulated micro-batches vs one true batch of N: losses and competitors.

    Returns the micro-batch losses and their mean (what accumulation minimises), the
    true-batch loss, candidates per query in each, the chance levels log(m) and log(N),
    how many rows lose more in the true batch (all must: the softmax only gains terms),
    and how many queries have their most similar wrong document in another micro-batch.
    """
    if not (isinstance(queries, torch.Tensor) and isinstance(docs, torch.Tensor)) or queries.ndim != 2 \
            or queries.shape != docs.shape:
        raise ValueError("queries and docs must be tensors of the same shape (N, d)")
    n = queries.shape[0]
    if isinstance(micro, bool) or not isinstance(micro, int) or micro < 2 or n % micro or n == micro:
        raise ValueError(f"micro must be an integer >= 2 that divides N={n} into several micro-batches, got {micro!r}")
    tau = 1.0 / scale
    q = torch.nn.functional.normalize(queries.detach().double(), dim=-1)
    d = torch.nn.functional.normalize(docs.detach().double(), dim=-1)
    S = (q @ d.T).numpy()
    true_rows = info_nce_rows(S, tau)
    micro_rows = np.concatenate([info_nce_rows(S[i:i + micro, i:i + micro], tau) for i in range(0, n, micro)])
    micro_losses = [float(info_nce_torch(q[i:i + micro], d[i:i + micro], tau)) for i in range(0, n, micro)]
    wrong = S.copy()
    np.fill_diagonal(wrong, -np.inf)
    hardest = wrong.argmax(axis=1)
    return {"n": n, "micro": micro, "micro_losses": micro_losses, "accumulated_loss": float(np.mean(micro_losses)),
            "true_loss": float(info_nce_torch(q, d, tau)), "candidates_micro": micro, "candidates_true": n,
            "chance_micro": math.log(micro), "chance_true": math.log(n),
            "rows_higher_in_true_batch": int(np.sum(true_rows > micro_rows - 1e-12)),
            "hardest_negative_elsewhere": int(np.sum(hardest // micro != np.arange(n) // micro)),
            "micro_rows_mean": float(micro_rows.mean()), "true_rows_mean": float(true_rows.mean())}
