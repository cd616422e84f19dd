"""Cheaper vectors: Matryoshka cuts, quantisation, and a clustered (IVF) search, by hand.

In plain terms: a Matryoshka model is trained so that the first ``m`` numbers of
its vector, rescaled to length 1, already make a usable embedding. Its loss is
the ordinary InfoNCE loss computed once per trained length and added up
(sentence-transformers' ``MatryoshkaLoss`` around ``MultipleNegativesRankingLoss``).
Two more savings come at deployment: quantisation stores each number in fewer
bits (int8: one byte instead of four; one bit: its sign only), and an
approximate nearest-neighbour index scores only part of the collection (IVF:
the documents in the clusters nearest to the question). Both trade some ranking
quality for memory or speed; `reciprocal_ranks` and `bootstrap_interval`
measure what was traded, question by question, with an interval.

Shapes
------
==========  =========  =====================================================
name        shape      meaning
==========  =========  =====================================================
queries     (B, D)     question vectors (any length; cut, then normalised)
docs        (B, D)     their documents' vectors, row i answers question i
scores      (Q, N)     each question's score for each document
right       (Q,)       the document (column) that answers each question
==========  =========  =====================================================

Relations: `matryoshka_loss` equals sentence-transformers' ``MatryoshkaLoss``
(``matryoshka_weights`` default 1, every length each step) wrapped around
``MultipleNegativesRankingLoss(scale=1 / tau)``; its InfoNCE is
`labs.lessons.infonce.info_nce_torch`. Lesson: ``notebooks/10_beyond_one_vector.ipynb``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F

from labs.checks import (arguments, finite_table, indices, integer, items, number, optional, positive, random_seed,
                         require, temperature, tensor)
from labs.lessons.infonce import info_nce_torch

__all__ = [
    "cut",
    "matryoshka_loss",
    "reciprocal_ranks",
    "bootstrap_interval",
    "quantize_int8",
    "binarize",
    "matching_bits",
    "spherical_kmeans",
    "ivf_search",
]


_VECTORS = partial(tensor, what="a table of vectors, one per row", nonempty=True, finite=True)


def _lengths(value, name: str) -> list[int]:
    """A non-empty list of lengths (integers >= 1)."""
    return [integer(m, name, 1) for m in items(value, name, "a non-empty list of lengths", nonempty=True)]


def _weights(value, name: str) -> list[float]:
    """A list of finite weights >= 0 (an infinite weight would make the loss infinite)."""
    return [number(w, name, "finite numbers >= 0", low=0.0, finite=True) for w in items(value, name)]


@arguments(vectors=_VECTORS)
def cut(vectors: torch.Tensor, m: int) -> torch.Tensor:
    """The first ``m`` numbers of each row, rescaled to length 1: (n, D) -> (n, m)."""
    require(vectors.ndim >= 1, "vectors must be a table of vectors, one per row, got a single number")
    return F.normalize(vectors[..., :integer(m, "m", 1, vectors.shape[-1])], dim=-1)


@arguments(dims=_lengths, tau=partial(temperature, learned=True), weights=optional(_weights))
def matryoshka_loss(queries: torch.Tensor, docs: torch.Tensor, dims: Sequence[int], tau: float = 0.05,
                    weights: Sequence[float] | None = None) -> torch.Tensor:
    """Sum over m in ``dims`` of weight_m * InfoNCE(cut(queries, m), cut(docs, m), tau); weights default to 1."""
    queries, docs = _VECTORS(queries, "queries"), _VECTORS(docs, "docs")
    require(queries.ndim == 2 and queries.shape == docs.shape, "queries and docs must be (n, D) tables of one "
            f"shape, got {tuple(queries.shape)} and {tuple(docs.shape)}")
    require(max(dims) <= queries.shape[1], f"dims must be lengths from 1 to the vectors' D={queries.shape[1]}, got "
            f"{dims}")
    weights = [1.0] * len(dims) if weights is None else weights
    require(len(weights) == len(dims), f"weights and dims differ in length: {len(weights)} vs {len(dims)}")
    return sum(w * info_nce_torch(cut(queries, m), cut(docs, m), tau) for m, w in zip(dims, weights))


@arguments(scores=partial(tensor, ndim=2, what="a (Q, N) table of scores"), k=partial(integer, minimum=1))
def reciprocal_ranks(scores: torch.Tensor, right: Sequence[int], k: int = 10) -> np.ndarray:
    """Per question (row of the (Q, N) ``scores``), 1 / (rank of its right column) if that rank is at
    most ``k``, else 0: shape (Q,). Their mean is MRR@k.

    The rank counts the columns scoring strictly higher, plus one. Any score works: cosines, dot
    products of quantised vectors, matching bits.
    """
    require(not bool(torch.isnan(scores).any()), "scores contains NaN: a rank among NaN scores has no meaning")
    right = indices(right, "right", scores.shape[1], f"column indices (0..{scores.shape[1] - 1})", distinct=False)
    require(len(right) == len(scores), "need a (Q, N) scores table and one right column per "
            f"row; got {tuple(scores.shape)} and {len(right)}")
    own = scores[torch.arange(len(right)), torch.as_tensor(right, dtype=torch.long)]
    rank = (scores > own[:, None]).sum(dim=1) + 1
    return torch.where(rank <= min(k, scores.shape[1]), 1.0 / rank, torch.zeros_like(rank, dtype=torch.float)).double().numpy()


@arguments(values=finite_table, level=partial(number, what="between 0 and 1", low=0.0, above=True, high=1.0,
                                               below=True),
           n=partial(integer, minimum=1, maximum=100_000), seed=random_seed)
def bootstrap_interval(values: Sequence[float], *, level: float = 0.95, n: int = 2000,
                       seed: int = 0) -> tuple[float, float]:
    """A percentile bootstrap interval for the mean of ``values`` (one value per question).

    Draws ``n`` resamples of the questions with replacement; for a paired comparison pass the
    per-question differences.
    """
    require(values.ndim == 1 and len(values) >= 2, "values: need a 1-d sequence of at least two numbers, got shape "
            f"{values.shape}")
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(n, len(values)))].mean(axis=1)
    tail = (1 - level) / 2
    lo, hi = np.quantile(means, [tail, 1 - tail])
    return float(lo), float(hi)


def quantize_int8(vectors: torch.Tensor, scale: float) -> torch.Tensor:
    """Round every number to an integer from -127 to 127, with 127 standing for ``scale`` (one byte each)."""
    vectors = tensor(vectors, "vectors", finite=True)
    return torch.round(vectors * 127 / positive(scale, "scale")).clamp(-127, 127)


def binarize(vectors: torch.Tensor) -> torch.Tensor:
    """Keep one bit per number: 1 where it is above 0, else 0."""
    vectors = tensor(vectors, "vectors", finite=True)
    return (vectors > 0).to(torch.float32)


def matching_bits(q_bits: torch.Tensor, d_bits: torch.Tensor) -> torch.Tensor:
    """(Q, N) count of positions where the two bit vectors agree (the length minus the Hamming distance)."""
    q_bits, d_bits = (_bits(b, name) for b, name in ((q_bits, "q_bits"), (d_bits, "d_bits")))
    require(q_bits.shape[1] == d_bits.shape[1], f"q_bits and d_bits must have as many bits per row, got "
            f"{q_bits.shape[1]} and {d_bits.shape[1]}")
    return q_bits @ d_bits.T + (1 - q_bits) @ (1 - d_bits).T


def _bits(value, name: str) -> torch.Tensor:
    """A (rows, bits) table of 0s and 1s (what `binarize` returns) as float32."""
    bits = tensor(value, name, ndim=2, what="a (rows, bits) table of 0s and 1s", nonempty=True)
    require(bool(((bits == 0) | (bits == 1)).all()), f"{name} must hold only 0s and 1s (see binarize)")
    return bits.to(torch.float32)


def spherical_kmeans(vectors: torch.Tensor, k: int, *, iters: int = 10,
                     seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Cluster unit vectors by cosine: (k, D) unit centroids and each row's cluster, shape (n,).

    Starts from ``k`` rows drawn with ``seed``; each round assigns every row to its nearest
    centroid and moves each centroid to its members' mean, rescaled to length 1.
    """
    vectors = tensor(vectors, "vectors", ndim=2, what="a (n, D) table of vectors", nonempty=True, finite=True)
    k, iters = integer(k, "k", 1, len(vectors)), integer(iters, "iters", 0, 10_000)
    gen = torch.Generator().manual_seed(random_seed(seed))
    centroids = vectors[torch.randperm(len(vectors), generator=gen)[:k]].clone()
    for _ in range(iters):
        assign = (vectors @ centroids.T).argmax(dim=1)
        centroids = torch.stack([F.normalize(vectors[assign == c].mean(dim=0), dim=0) if (assign == c).any()
                                 else centroids[c] for c in range(k)])
    return centroids, (vectors @ centroids.T).argmax(dim=1)


def _ivf_inputs(query, d_vecs, centroids, assign) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """ivf_search's tables checked: query (D,), d_vecs (N, D), centroids (k, D), assign (N,) clusters."""
    d_vecs = tensor(d_vecs, "d_vecs", ndim=2, what="a (N, D) table of document vectors", nonempty=True, finite=True)
    query = tensor(query, "query", ndim=1, what=f"one vector of {d_vecs.shape[1]} numbers", finite=True)
    centroids = tensor(centroids, "centroids", ndim=2, what="a (k, D) table of centroids", nonempty=True, finite=True)
    require(query.shape[0] == d_vecs.shape[1] == centroids.shape[1], "query, d_vecs and centroids must have one "
            f"length of vector, got {query.shape[0]}, {d_vecs.shape[1]} and {centroids.shape[1]}")
    assign = torch.as_tensor(indices(assign.tolist() if isinstance(assign, torch.Tensor) else assign, "assign",
                                     len(centroids), f"one cluster (0..{len(centroids) - 1}) per document",
                                     distinct=False))
    require(len(assign) == len(d_vecs), f"assign must name one cluster per row of d_vecs ({len(d_vecs)}), "
            f"got {len(assign)}")
    return query, d_vecs, centroids, assign


def ivf_search(query: torch.Tensor, d_vecs: torch.Tensor, centroids: torch.Tensor, assign: torch.Tensor,
               probes: int) -> tuple[int, int]:
    """Score only the documents in the ``probes`` clusters nearest to ``query`` (D,).

    Returns (the best of those documents' rows, how many documents were scored).
    """
    query, d_vecs, centroids, assign = _ivf_inputs(query, d_vecs, centroids, assign)
    query, d_vecs, centroids = (x.to(torch.float64) for x in (query, d_vecs, centroids))
    nearest = (centroids @ query).topk(integer(probes, "probes", 1, len(centroids))).indices
    rows = torch.nonzero(torch.isin(assign, nearest)).flatten()
    require(len(rows) > 0, f"the {len(nearest)} clusters nearest to query hold no documents (see assign): "
            "raise probes")
    best = rows[(d_vecs[rows] @ query).argmax()]
    return int(best), len(rows)
