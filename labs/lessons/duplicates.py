"""A right card twice (or more) in one batch, and a look-alike twin: what InfoNCE's gradient does.

In plain terms: if a question's own card also sits in the batch as an *exact*
copy (another question has the same answer text), the two columns always score
the same, because they are the same vector. The loss counts the copy as a
negative, but moving the question toward the card raises both scores together,
and the net effect on that shared score is still a pull: its derivative is
``(share_own + share_copies - 1) / tau``, which is negative until the copies
hold the whole share. The row's own share can then never pass ``1 / n`` for
``n`` identical columns, so the loss has a floor of ``ln n`` (``ln 2`` for one
duplicate), where the pull vanishes. A *distinct* text that is also right (a
look-alike twin) has a score of its own, and the loss pushes that score down
with derivative ``share_twin / tau``: that is the real push away from a right
answer.

Shapes
------
=========  ==========  ==================================================
name       shape       meaning
=========  ==========  ==================================================
scores     (M,)        one row of the similarity table: a question's cosine
                       with each of the M cards
own        int         the column holding the question's own card
copies     ints        the columns that hold the very same card (own included)
=========  ==========  ==================================================

Relations: the row loss is one row of `labs.lessons.infonce.info_nce`; a loss that
drops columns scoring above the positive plus a margin is
`labs.lessons.infonce.info_nce_masked` (``notebooks/06_mining.ipynb``). Lesson: the
section ``sec-duplicates`` of ``notebooks/03_infonce.ipynb``, where the course teaches this once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from labs.checks import finite_table, indices, integer, require, temperature

__all__ = ["row_shares", "shared_score_gradient", "duplicate_floor"]


def _row(scores: Sequence[float]) -> np.ndarray:
    """One finite row of at least 2 real scores as float64, or ValueError naming ``scores``."""
    s = finite_table(scores, "scores")
    require(s.ndim == 1 and s.size >= 2, f"scores must be one row of at least 2 cosines, got shape {s.shape}")
    return s


def _shares(s: np.ndarray, tau: float) -> np.ndarray:
    """Softmax of s / tau; a tau so small that s / tau overflows is named."""
    with np.errstate(over="ignore"):
        z = s / tau
    require(np.all(np.isfinite(z)), f"tau={tau!r} is too small for these scores: scores / tau overflows")
    with np.errstate(over="ignore"):  # z - max may reach -inf for far-apart scores: exp gives 0, as it should
        e = np.exp(z - z.max())
    return e / e.sum()


def row_shares(scores: Sequence[float], tau: float) -> np.ndarray:
    """Softmax shares of one row at temperature tau: (M,) -> (M,).

    ``scores`` must be real, finite numbers (not booleans, text, complex numbers, nor a tensor
    that requires grad); each bad argument is refused by name.
    """
    tau = temperature(tau)
    return _shares(_row(scores), tau)


def shared_score_gradient(scores: Sequence[float], copies: Sequence[int], tau: float) -> float:
    """d(row loss)/d s for the one score s that every column in ``copies`` shares (the own card first).

    The row loss is -ln(share of copies[0]); each copy's cell is the same s, so
    the derivatives add: (share of copies[0] - 1)/tau + sum of the other copies'
    shares / tau. Negative means raising s lowers the loss: a pull.
    """
    tau, s = temperature(tau), _row(scores)
    copies = indices(copies, "copies", s.size, f"distinct column indices of the row (0..{s.size - 1})")
    require(np.ptp(s[copies]) == 0, f"exact copies score the same; columns {copies} hold {s[copies].tolist()}")
    return float((_shares(s, tau)[copies].sum() - 1.0) / tau)


def duplicate_floor(n_copies: int) -> float:
    """The lowest row loss when the right card fills ``n_copies`` identical columns: ln n."""
    return math.log(integer(n_copies, "n_copies", 1))
