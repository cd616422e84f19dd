"""InfoNCE: the loss that teaches an embedding model what "similar" means.

In plain terms: every query in a batch (a row of the similarity table) must
pick its own document (column i) out of all the documents in the batch. The
loss is the softmax cross-entropy of that choice. The temperature ``tau``
divides every score first, so a small ``tau`` turns small cosine gaps into
confident choices.

Shapes
------
======  ========  ==========================================================
name    shape     meaning
======  ========  ==========================================================
S       (B, M)    similarities, M >= B; row i's positive is column i, and
                  columns B..M-1 are extra (hard) negatives for every row
tau     scalar    temperature > 0; sentence-transformers' ``scale`` = 1 / tau
======  ========  ==========================================================

Masked InfoNCE (false negatives): `info_nce_masked(S, tau, margin)` drops from
row i's softmax every negative that scores above the positive plus a margin:
entry (i, j), j != i, is masked when ``G[i, j] > G[i, i] + margin``, where the
guide table ``G`` is ``S`` itself unless one is given (a second model's scores,
as in GISTEmbed). A masked entry counts as if it were not in the batch: neither
in the loss nor in its gradient. The Qwen3-Embedding recipe masks with
``margin = 0.1`` on the model's own cosines; sentence-transformers'
``GISTEmbedLoss`` with ``margin_strategy="absolute"`` and its ``margin = m`` is
``margin = -m`` here (it masks above ``positive - m``).

Relations: `info_nce_torch` is the same loss on embedding tensors through
``torch.nn.functional.cross_entropy`` with labels ``0..B-1``;
sentence-transformers implements it as ``MultipleNegativesRankingLoss``.
`clip_loss` runs it both ways on a square table (images pick captions,
captions pick images).

Lessons: ``notebooks/03_infonce.ipynb``, ``notebooks/04_temperature.ipynb``; the
masked loss in ``notebooks/05_hard_negatives.ipynb``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F

from labs.checks import (
    arguments, finite_table, flag, number, optional, require, scaled_scores, table, temperature, tensor, unit_rows,
)

__all__ = [
    "log_softmax_rows",
    "info_nce_rows",
    "info_nce",
    "clip_loss",
    "positive_share",
    "info_nce_torch",
    "false_negative_mask",
    "info_nce_masked_rows",
    "info_nce_masked",
    "info_nce_masked_torch",
]

_MARGIN = partial(number, what="a finite number", finite=True)
_EMBEDDINGS = partial(tensor, ndim=2, what="2-D (rows x dim)", floats=True, finite=True)


def log_softmax_rows(Z: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax of a (B, M) array, stable for large entries (log-sum-exp). A NaN entry is
    refused (it would make its whole row NaN without a word); -inf (a masked entry) is allowed."""
    Z = table(Z, "Z", ndim=2, train_with=None)
    require(not np.isnan(Z).any(), "Z contains NaN: a softmax of it has no meaning")
    require(Z.shape[1] >= 1, f"Z must have at least one column, got shape {Z.shape}")
    require(np.isfinite(Z.max(axis=1)).all(), "Z has a row whose largest entry is not finite "
            "(all -inf, or +inf): its softmax is not defined")
    Z = Z - Z.max(axis=1, keepdims=True)  # the row max becomes 0, so exp() cannot overflow
    return Z - np.log(np.exp(Z).sum(axis=1, keepdims=True))


def info_nce_rows(S: np.ndarray | Sequence, tau: float) -> np.ndarray:
    """The B per-row losses -log softmax(S[i] / tau)[i], shape (B,)."""
    Z = scaled_scores(S, tau)
    B = Z.shape[0]
    return -log_softmax_rows(Z)[np.arange(B), np.arange(B)]


def info_nce(S: np.ndarray | Sequence, tau: float) -> float:
    """Mean InfoNCE loss of a (B, M) similarity table; row i's positive is column i."""
    return float(info_nce_rows(S, tau).mean())


def clip_loss(S: np.ndarray | Sequence, tau: float) -> float:
    """Symmetric (CLIP) loss of a square (B, B) table: rows pick columns and columns pick rows, averaged."""
    A = table(S, "S")
    require(A.ndim == 2 and A.shape[0] == A.shape[1], f"S must be square (B images x B captions) for clip_loss, got "
            f"shape {A.shape}")
    return 0.5 * info_nce(A, tau) + 0.5 * info_nce(A.T, tau)


def positive_share(pos: float, negs: Sequence[float], tau: float) -> float:
    """Softmax share of a positive with cosine ``pos`` against negatives with cosines ``negs``."""
    pos, negs = number(pos, "pos", "a real number"), table(negs, "negs")
    require(negs.ndim <= 1, f"negs must be a number or a list of numbers, got shape {negs.shape}")
    row = np.array([[pos, *np.atleast_1d(negs)]])
    require(np.all(np.isfinite(row)), "pos and negs must be finite numbers")
    Z = scaled_scores(row, tau, name="[pos, *negs]")
    return float(np.exp(log_softmax_rows(Z)[0, 0]))


def _one_batch(queries: torch.Tensor, docs: torch.Tensor, tau, normalize: bool) -> None:
    """The rules between the arguments of the torch losses: B >= 1 queries, M >= B documents of the
    same dimension, dtype and device (and tau's device); with ``normalize``, no row of zeros."""
    require(queries.shape[0] > 0, "queries has no rows: a batch needs at least one query")
    require(queries.shape[1] == docs.shape[1] and queries.shape[1] > 0, "queries and docs must share a dimension >= 1, "
            f"got {queries.shape[1]} and {docs.shape[1]}")
    require(docs.shape[0] >= queries.shape[0], f"docs has {docs.shape[0]} rows but queries has {queries.shape[0]}: "
            "need M >= B")
    require(queries.dtype == docs.dtype and queries.device == docs.device, "queries and docs must share dtype and "
            f"device, got {queries.dtype} on {queries.device} and {docs.dtype} on {docs.device}")
    require(not isinstance(tau, torch.Tensor) or tau.device == queries.device,
            f"tau is on {getattr(tau, 'device', '')} but queries is on {queries.device}")
    if normalize:
        tensor(queries, "queries", directions=True), tensor(docs, "docs", directions=True)


def _logits(scores: torch.Tensor, tau) -> torch.Tensor:
    """scores / tau, or ValueError naming a tau so small that the division overflows."""
    logits = scores / tau
    require(bool(torch.isfinite(logits.detach()).all()),
            lambda: f"tau={float(tau)!r} is too small for these scores: scores / tau overflows {logits.dtype}")
    return logits


@arguments(tau=partial(temperature, learned=True), queries=_EMBEDDINGS, docs=_EMBEDDINGS, normalize=flag)
def info_nce_torch(
    queries: torch.Tensor, docs: torch.Tensor, tau: float, *, normalize: bool = True
) -> torch.Tensor:
    """InfoNCE on embeddings with ``cross_entropy``: queries (B, d), docs (M, d), M >= B >= 1.

    Row i of ``queries`` is paired with row i of ``docs``; rows B..M-1 of ``docs``
    are extra negatives. With ``normalize=True`` the scores are cosines, as in
    sentence-transformers' MultipleNegativesRankingLoss with ``scale = 1 / tau``.
    Returns a scalar tensor that autograd can differentiate (through ``tau`` too, when it is a
    one-number tensor that requires grad: a learned temperature). Refuses, like `info_nce`,
    an empty batch, NaN or infinite entries, a tau that is not a finite number > 0,
    and a tau so small that the scores overflow.
    """
    _one_batch(queries, docs, tau, normalize)
    if normalize:
        queries, docs = unit_rows(queries, scaled=True), unit_rows(docs, scaled=True)
    logits = _logits(queries @ docs.T, tau)
    return F.cross_entropy(logits, torch.arange(queries.shape[0], device=queries.device))


# ---- masked InfoNCE: false negatives left out of the softmax -----------------


@arguments(margin=_MARGIN, guide=optional(finite_table))
def false_negative_mask(S: np.ndarray | Sequence, margin: float,
                        guide: np.ndarray | Sequence | None = None) -> np.ndarray:
    """Boolean (B, M): True where row i's negative j scores above its positive plus ``margin``.

    The rule: ``G[i, j] > G[i, i] + margin`` for j != i, with ``G = guide``
    (another model's scores, same shape) or ``S`` itself. The positive
    (column i) is never masked. A negative ``margin`` masks negatives that
    come close to the positive from below.
    """
    A = scaled_scores(S, 1.0)
    require(guide is None or guide.shape == A.shape, lambda: f"guide must have the shape of S {A.shape}, got {guide.shape}")
    G, rows = A if guide is None else guide, np.arange(A.shape[0])
    mask = G > G[rows, rows][:, None] + margin
    mask[rows, rows] = False
    return mask


def info_nce_masked_rows(S: np.ndarray | Sequence, tau: float, margin: float,
                         guide: np.ndarray | Sequence | None = None) -> np.ndarray:
    """Per-row losses (B,) of InfoNCE with `false_negative_mask`'s entries left out of each softmax."""
    Z = scaled_scores(S, tau)
    Z = np.where(false_negative_mask(S, margin, guide), -np.inf, Z)  # exp(-inf) = 0: not in the denominator
    B = Z.shape[0]
    return -log_softmax_rows(Z)[np.arange(B), np.arange(B)]


def info_nce_masked(S: np.ndarray | Sequence, tau: float, margin: float,
                    guide: np.ndarray | Sequence | None = None) -> float:
    """Mean masked InfoNCE of a (B, M) table: negatives with ``S[i, j] > S[i, i] + margin`` are dropped.

    Equals `info_nce` when nothing is masked (a large ``margin``). ``guide``
    (B, M), if given, decides the mask instead of ``S`` (GISTEmbed's guide
    model). Validates ``S`` and ``tau`` like `info_nce`; ``margin`` must be
    a finite number.
    """
    return float(info_nce_masked_rows(S, tau, margin, guide).mean())


def _guide(guide, name: str) -> torch.Tensor:
    """A guide table of real, finite numbers as a tensor (its shape is checked against the scores)."""
    require(isinstance(guide, torch.Tensor), f"{name} must be a tensor of shape (B, M), got {type(guide).__name__}")
    require(guide.is_floating_point() or guide.dtype in (torch.int32, torch.int64),
            f"{name} must hold real numbers, got dtype {guide.dtype}")
    return tensor(guide, name, finite=True)


@arguments(tau=partial(temperature, learned=True), margin=_MARGIN, queries=_EMBEDDINGS, docs=_EMBEDDINGS,
           guide=optional(_guide), normalize=flag)
def info_nce_masked_torch(queries: torch.Tensor, docs: torch.Tensor, tau: float, margin: float, *,
                          guide: torch.Tensor | None = None, normalize: bool = True) -> torch.Tensor:
    """`info_nce_masked` on embeddings, for autograd: queries (B, d), docs (M, d), M >= B >= 1.

    The mask is decided without gradient, from ``guide`` (B, M) if given (a
    second model's scores, computed once) or else from the current scores, so
    a negative can leave the mask once the positive has moved above it.
    Validates like `info_nce_torch`.
    """
    _one_batch(queries, docs, tau, normalize)
    require(guide is None or tuple(guide.shape) == (queries.shape[0], docs.shape[0]),
            lambda: f"guide must be a tensor of shape {(queries.shape[0], docs.shape[0])}, got {tuple(guide.shape)}")
    if normalize:
        queries, docs = unit_rows(queries, scaled=True), unit_rows(docs, scaled=True)
    scores = queries @ docs.T
    G = scores.detach() if guide is None else guide.detach().to(scores.device, scores.dtype)
    rows = torch.arange(scores.shape[0], device=scores.device)
    mask = G > G[rows, rows][:, None] + margin
    mask[rows, rows] = False
    return F.cross_entropy(_logits(scores, tau).masked_fill(mask, float("-inf")), rows)
