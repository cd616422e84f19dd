"""Two systems on the same queries: one value per query, and a paired bootstrap interval of the
mean difference.

In plain terms: `per_query` keeps each query's own Recall@k, MRR@k or nDCG@k (their mean is the
metric of `labs.retrieval.metrics.retrieval_metrics`), and `paired_interval` resamples the queries
to say whether a difference between two systems is more than the luck of which queries were asked.
`evaluate` and `baseline --model` print BM25, the model and both fused side by side with them.

==========================  =============================================================
``per_query``               rankings {query: [doc ids]}, qrels {query: {doc ids}} -> (Q,)
``paired_interval``         a (Q,), b (Q,) -> (mean of a - b, low, high)
==========================  =============================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from labs.retrieval.metrics import mrr_at_k, ndcg_at_k, recall_at_k

__all__ = ["per_query", "paired_interval"]


def per_query(rankings: Mapping[str, Sequence[str]], qrels: Mapping[str, set[str]], metric: str,
              k: int) -> np.ndarray:
    """One value per query of qrels (in its order): ``metric`` in {"recall", "mrr", "ndcg"} at ``k``
    for that query alone; their mean is the metric of `retrieval_metrics`."""
    score = {"recall": recall_at_k, "mrr": mrr_at_k, "ndcg": ndcg_at_k}
    if metric not in score:
        raise ValueError(f"metric must be one of {sorted(score)}, got {metric!r}")
    return np.array([score[metric]({q: rankings[q]}, {q: rel}, k) for q, rel in qrels.items()])


def paired_interval(a: Sequence[float], b: Sequence[float], *, level: float = 0.95, n: int = 2000,
                    seed: int = 0) -> tuple[float, float, float]:
    """(mean of a - b, low, high): a paired percentile bootstrap interval of the mean difference of
    two systems' per-query values on the same queries (``n`` resamples of the queries, drawn with
    ``seed``). An interval that excludes 0 says the difference is more than the luck of which queries
    were asked."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 2:
        raise ValueError(f"a and b need one value per query each, the same queries, at least two; got shapes "
                         f"{a.shape} and {b.shape}")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level!r}")
    diff = a - b
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(n, len(diff)))].mean(axis=1)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(diff.mean()), float(low), float(high)
