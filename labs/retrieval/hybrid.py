"""Combined ranking: BM25 and the model's cosine fused into one ranking.

In plain words: keyword search (BM25) finds exact names, codes and rare words; the embedding
model finds the same meaning in other words. Each gets some queries wrong that the other gets
right, so a combined ranking often beats both. Two ways to combine them:

- **Reciprocal rank fusion** (RRF, Cormack et al. 2009): each document scores
  ``sum over rankers of 1 / (k + its rank)`` (rank 1 = best; k = 60 by default). It reads only
  ranks, so the two scores' scales never matter.
- **Weighted sum of min-max normalised scores**: each ranker's scores are rescaled per query to
  0..1 over the documents being ranked, then ``weight * dense + (1 - weight) * bm25``.

Shapes
------
=======  ============  ============================================
dense    (Q, N) array  cosines of the Q queries with the N documents
lexical  (Q, N) array  BM25 scores of the same pairs
ranks    (Q, N) int    1 for each query's best document, ties by doc id
fused    (Q, N) array  the combined score (higher is better)
=======  ============  ============================================

Both fast forms have a readable loop beside them (`rrf_loop`, `weighted_loop`), tested equal.
Relations: `labs.retrieval.metrics.bm25_scores` gives the lexical scores and
`labs.retrieval.metrics.rank_documents` the tie rule (equal scores: ascending doc id);
`labs.retrieval.index.score_queries` calls `fuse` for ``--ranker hybrid``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["RANKERS", "FUSIONS", "RRF_K", "ranks", "rrf", "rrf_loop", "minmax", "weighted", "weighted_loop", "fuse"]

#: What ``--ranker`` picks: the model's cosine, BM25, or both fused.
RANKERS = ("dense", "bm25", "hybrid")
#: How ``--ranker hybrid`` fuses them.
FUSIONS = ("rrf", "weighted")
RRF_K = 60


def ranks(scores: np.ndarray, doc_ids: Sequence[str]) -> np.ndarray:
    """(Q, N) rank of each document for each query (1 = best), equal scores ordered by ascending doc id
    (the rule of `labs.retrieval.metrics.rank_documents`)."""
    scores = np.asarray(scores, dtype=np.float64)
    by_id = np.argsort(np.asarray(doc_ids, dtype=object), kind="stable")
    out = np.empty(scores.shape, dtype=np.int64)
    for q, row in enumerate(scores):
        order = by_id[np.argsort(-row[by_id], kind="stable")]
        out[q, order] = np.arange(1, len(order) + 1)
    return out


def rrf(dense: np.ndarray, lexical: np.ndarray, doc_ids: Sequence[str], k: int = RRF_K) -> np.ndarray:
    """Reciprocal rank fusion of two (Q, N) score tables: 1 / (k + rank) summed over the two."""
    return 1.0 / (k + ranks(dense, doc_ids)) + 1.0 / (k + ranks(lexical, doc_ids))


def rrf_loop(dense, lexical, doc_ids: Sequence[str], k: int = RRF_K) -> np.ndarray:
    """`rrf` as a loop: for each query, sort each ranker's documents and add 1 / (k + rank)."""
    dense, lexical = np.asarray(dense, dtype=float), np.asarray(lexical, dtype=float)
    out = np.zeros(dense.shape)
    for q in range(dense.shape[0]):
        for table in (dense, lexical):
            order = sorted(range(len(doc_ids)), key=lambda i: (-table[q, i], doc_ids[i]))
            for rank, i in enumerate(order, start=1):
                out[q, i] += 1.0 / (k + rank)
    return out


def minmax(scores: np.ndarray) -> np.ndarray:
    """Each row rescaled to 0..1 (its lowest score 0, its highest 1; a constant row is all 0)."""
    scores = np.asarray(scores, dtype=np.float64)
    low, high = scores.min(axis=1, keepdims=True), scores.max(axis=1, keepdims=True)
    span = np.where(high > low, high - low, 1.0)
    return (scores - low) / span


def weighted(dense: np.ndarray, lexical: np.ndarray, weight: float = 0.5) -> np.ndarray:
    """``weight * minmax(dense) + (1 - weight) * minmax(lexical)``."""
    return weight * minmax(dense) + (1 - weight) * minmax(lexical)


def weighted_loop(dense, lexical, weight: float = 0.5) -> np.ndarray:
    """`weighted` as a loop over queries and documents."""
    dense, lexical = np.asarray(dense, dtype=float), np.asarray(lexical, dtype=float)
    out = np.zeros(dense.shape)
    for q in range(dense.shape[0]):
        parts = []
        for row in (dense[q], lexical[q]):
            low, high = min(row), max(row)
            parts.append([(x - low) / (high - low) if high > low else 0.0 for x in row])
        out[q] = [weight * a + (1 - weight) * b for a, b in zip(*parts)]
    return out


def fuse(dense: np.ndarray, lexical: np.ndarray, doc_ids: Sequence[str], fusion: str = "rrf", k: int = RRF_K,
         weight: float = 0.5) -> np.ndarray:
    """The combined (Q, N) score: `rrf` with ``k`` or `weighted` with ``weight``."""
    if fusion == "rrf":
        return rrf(dense, lexical, doc_ids, k)
    if fusion == "weighted":
        return weighted(dense, lexical, weight)
    raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, got {fusion!r}")
