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

import numpy as np
import torch
import torch.nn.functional as F

from labs.lessons.inputs import real_array, real_number, scaled_scores, valid_margin, valid_tau

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
    "info_nce_masked_torch", "unit_rows", "temperature_divisor"]


def log_softmax_rows(Z: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax of a (B, M) array, stable for large entries (log-sum-exp)."""
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
    A = real_array(S, "S")
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"S must be square (B images x B captions) for clip_loss, got shape {A.shape}")
    return 0.5 * info_nce(A, tau) + 0.5 * info_nce(A.T, tau)


def positive_share(pos: float, negs: Sequence[float], tau: float) -> float:
    """Softmax share of a positive with cosine ``pos`` against negatives with cosines ``negs``."""
    pos = real_number(pos, "pos", "a real number")
    negs = real_array(negs, "negs")
    if negs.ndim > 1:
        raise ValueError(f"negs must be a number or a list of numbers, got shape {negs.shape}")
    row = np.array([[pos, *np.atleast_1d(negs)]])
    if not np.all(np.isfinite(row)):
        raise ValueError("pos and negs must be finite numbers")
    Z = scaled_scores(row, tau, name="[pos, *negs]")
    return float(np.exp(log_softmax_rows(Z)[0, 0]))


def _check_embeddings(queries, docs, normalize: bool) -> None:
    """Refuse what would give a NaN or a silently wrong loss, naming the argument."""
    for name, x in (("queries", queries), ("docs", docs)):
        if not isinstance(x, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if queries.ndim != 2 or docs.ndim != 2:
        raise ValueError(f"queries and docs must be 2-D (rows x dim), got shapes {tuple(queries.shape)} "
                         f"and {tuple(docs.shape)}")
    for name, x in (("queries", queries), ("docs", docs)):
        if not x.is_floating_point():
            what = "complex numbers: give real embeddings" if x.dtype.is_complex else x.dtype
            raise ValueError(f"{name} must be a floating-point tensor, got {what}")
        if not bool(torch.isfinite(x).all()):
            raise ValueError(f"{name} contains NaN or infinite entries")
    if queries.shape[0] == 0:
        raise ValueError("queries has no rows: a batch needs at least one query")
    if queries.shape[1] != docs.shape[1] or queries.shape[1] == 0:
        raise ValueError(f"queries and docs must share a dimension >= 1, got {queries.shape[1]} and {docs.shape[1]}")
    if docs.shape[0] < queries.shape[0]:
        raise ValueError(f"docs has {docs.shape[0]} rows but queries has {queries.shape[0]}: need M >= B")
    if queries.dtype != docs.dtype or queries.device != docs.device:
        raise ValueError(f"queries and docs must share dtype and device, got {queries.dtype} on {queries.device} "
                         f"and {docs.dtype} on {docs.device}")
    if normalize:
        for name, x in (("queries", queries), ("docs", docs)):
            zero = torch.nonzero(x.detach().abs().amax(dim=1) == 0)
            if len(zero):
                raise ValueError(f"{name} row {int(zero[0, 0])} is all zeros: it has no direction to normalise")


def unit_rows(x: torch.Tensor) -> torch.Tensor:
    """Rows scaled to unit length, whatever their size: each row is first divided by its largest
    entry, so a tiny row (1e-30) or a huge one (1e30) has the direction of the same row at
    unit length, where ``F.normalize`` alone clamps tiny norms (eps) or overflows huge ones.
    Rows are non-zero (checked by the caller)."""
    largest = x.abs().amax(dim=-1, keepdim=True)
    return F.normalize(x / largest, dim=-1)


def temperature_divisor(tau) -> tuple[float, float | torch.Tensor]:
    """(tau as a checked float, the divisor of the scores): a one-number tensor that requires grad
    is the divisor itself, so a learned temperature gets its gradient (as in CLIP)."""
    if isinstance(tau, torch.Tensor) and tau.requires_grad:
        return valid_tau(tau.detach()), tau.reshape(())
    value = valid_tau(tau)
    return value, value


def _same_device(divisor, queries: torch.Tensor) -> None:
    if isinstance(divisor, torch.Tensor) and divisor.device != queries.device:
        raise ValueError(f"tau is on {divisor.device} but queries is on {queries.device}")


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
    tau, divisor = temperature_divisor(tau)
    _check_embeddings(queries, docs, normalize)
    _same_device(divisor, queries)
    if normalize:
        queries, docs = unit_rows(queries), unit_rows(docs)
    logits = queries @ docs.T / divisor
    if not bool(torch.isfinite(logits.detach()).all()):
        raise ValueError(f"tau={tau!r} is too small for these scores: scores / tau overflows {logits.dtype}")
    labels = torch.arange(queries.shape[0], device=queries.device)
    return F.cross_entropy(logits, labels)


# ---- masked InfoNCE: false negatives left out of the softmax -----------------


def _guide_table(guide: np.ndarray | Sequence | None, S: np.ndarray) -> np.ndarray:
    if guide is None:
        return S
    G = real_array(guide, "guide")
    if G.shape != S.shape:
        raise ValueError(f"guide must have the shape of S {S.shape}, got {G.shape}")
    if not np.all(np.isfinite(G)):
        raise ValueError("guide contains NaN or infinite entries")
    return G


def false_negative_mask(S: np.ndarray | Sequence, margin: float,
                        guide: np.ndarray | Sequence | None = None) -> np.ndarray:
    """Boolean (B, M): True where row i's negative j scores above its positive plus ``margin``.

    The rule: ``G[i, j] > G[i, i] + margin`` for j != i, with ``G = guide``
    (another model's scores, same shape) or ``S`` itself. The positive
    (column i) is never masked. A negative ``margin`` masks negatives that
    come close to the positive from below.
    """
    margin = valid_margin(margin)
    A = scaled_scores(S, 1.0)
    G = _guide_table(guide, A)
    B = A.shape[0]
    rows = np.arange(B)
    mask = G > G[rows, rows][:, None] + margin
    mask[rows, rows] = False
    return mask


def info_nce_masked_rows(S: np.ndarray | Sequence, tau: float, margin: float,
                         guide: np.ndarray | Sequence | None = None) -> np.ndarray:
    """Per-row losses (B,) of InfoNCE with `false_negative_mask`'s entries left out of each softmax."""
    Z = scaled_scores(S, tau)
    mask = false_negative_mask(S, margin, guide)
    Z = np.where(mask, -np.inf, Z)  # exp(-inf) = 0: the entry is not in the denominator
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


def info_nce_masked_torch(queries: torch.Tensor, docs: torch.Tensor, tau: float, margin: float, *,
                          guide: torch.Tensor | None = None, normalize: bool = True) -> torch.Tensor:
    """`info_nce_masked` on embeddings, for autograd: queries (B, d), docs (M, d), M >= B >= 1.

    The mask is decided without gradient, from ``guide`` (B, M) if given (a
    second model's scores, computed once) or else from the current scores, so
    a negative can leave the mask once the positive has moved above it.
    Validates like `info_nce_torch`.
    """
    tau, divisor = temperature_divisor(tau)
    margin = valid_margin(margin)
    _check_embeddings(queries, docs, normalize)
    _same_device(divisor, queries)
    if normalize:
        queries, docs = unit_rows(queries), unit_rows(docs)
    scores = queries @ docs.T
    B, M = scores.shape
    if guide is None:
        G = scores.detach()
    else:
        if not isinstance(guide, torch.Tensor) or tuple(guide.shape) != (B, M):
            raise ValueError(f"guide must be a tensor of shape {(B, M)}, got "
                             f"{tuple(guide.shape) if isinstance(guide, torch.Tensor) else type(guide).__name__}")
        if not (guide.is_floating_point() or guide.dtype in (torch.int32, torch.int64)):
            raise ValueError(f"guide must hold real numbers, got dtype {guide.dtype}")
        if not bool(torch.isfinite(guide).all()):
            raise ValueError("guide contains NaN or infinite entries")
        G = guide.detach().to(scores.device, scores.dtype)
    rows = torch.arange(B, device=scores.device)
    mask = G > G[rows, rows][:, None] + margin
    mask[rows, rows] = False
    logits = scores / divisor
    if not bool(torch.isfinite(logits.detach()).all()):
        raise ValueError(f"tau={tau!r} is too small for these scores: scores / tau overflows {logits.dtype}")
    return F.cross_entropy(logits.masked_fill(mask, float("-inf")), rows)
