"""Pull together, push apart: five words in 2-D, the first picture of contrastive training.

In plain words: five words (login, password, refund, money, helmet) start at
arbitrary places on a plane. Two pairs belong together and three do not. One
training step visits every pair in turn: a pair that belongs together moves
together (each word by ``rate`` of the gap); a pair that does not is pushed
apart the same way, but only while it is closer than ``margin``. The structure
comes from the pairs alone. Without negatives, nothing keeps words apart.

Shapes
------
==========  ========  =====================================================
name        shape     meaning
==========  ========  =====================================================
a, b        (2,)      two points (any equal size works)
rate        scalar    0 to 0.5: the share of the gap each point moves
margin      scalar    >= 0: pairs at least this far apart are left alone
positions   dict      word -> (2,) point
==========  ========  =====================================================

Relations: `push` is the hinge of a margin (contrastive / triplet) loss
written as a move: sentence-transformers' ContrastiveLoss and TripletLoss
stop pushing once a margin is met, as `push` does; InfoNCE
(`labs.lessons.infonce`) never stops pushing, it only pushes less. The bi-encoder of
`labs.lessons.hard_negatives` does the same pulling and pushing with gradients in 16-D.

Lesson: the opening of ``notebooks/05_hard_negatives.ipynb`` (a distance margin; lesson 06 meets the
masked loss's score margin and mining's relative margin).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["WORDS", "START", "PAIRS", "pull", "push", "margin_toy", "pair_distances"]

WORDS = ("login", "password", "refund", "money", "helmet")
# Chosen so that the five starting distances are those of the topic page the toy comes from:
# login-password 1.131, refund-money 0.781, login-refund 0.224,
# password-money 0.141, helmet-login 0.566.
START = {"login": (1.58, 0.85), "password": (0.78, 1.65), "refund": (1.38, 0.95),
         "money": (0.88, 1.55), "helmet": (1.02, 0.77)}
PAIRS = (("login", "password", True), ("refund", "money", True),
         ("login", "refund", False), ("password", "money", False), ("helmet", "login", False))


def _points(a: Sequence[float], b: Sequence[float], rate: float) -> tuple[np.ndarray, np.ndarray, float]:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"a and b must be points of the same size, got shapes {a.shape} and {b.shape}")
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 0.5:
        raise ValueError(f"rate must be a number from 0 to 0.5 (beyond 0.5 the points swap sides), got {rate!r}")
    return a, b, float(rate)


def pull(a: Sequence[float], b: Sequence[float], rate: float) -> tuple[np.ndarray, np.ndarray]:
    """Move two points towards each other, each by ``rate`` of the gap (the gap shrinks by 2 x rate)."""
    a, b, rate = _points(a, b, rate)
    gap = b - a
    return a + rate * gap, b - rate * gap


def push(a: Sequence[float], b: Sequence[float], rate: float, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """Move two points apart, each by ``rate`` of the gap, but only while they are closer than ``margin``.

    Two points at the very same place have no gap to scale, so they stay put.
    """
    a, b, rate = _points(a, b, rate)
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not margin >= 0:
        raise ValueError(f"margin must be a number >= 0, got {margin!r}")
    if np.linalg.norm(b - a) >= margin:
        return a.copy(), b.copy()
    gap = b - a
    return a - rate * gap, b + rate * gap


def margin_toy(steps: int = 10, *, rate: float = 0.1, margin: float = 1.0, negatives: bool = True,
               pairs: Sequence[tuple[str, str, bool]] = PAIRS) -> dict[str, np.ndarray]:
    """Positions of the five words after ``steps`` passes; each pass pulls or pushes every pair in turn."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"steps must be an integer >= 0, got {steps!r}")
    pos = {w: np.array(p, dtype=np.float64) for w, p in START.items()}
    for a, b, _ in pairs:
        if a not in pos or b not in pos:
            raise ValueError(f"pairs may only use the words {WORDS}, got ({a!r}, {b!r})")
    for _ in range(int(steps)):
        for a, b, belong in pairs:
            if belong:
                pos[a], pos[b] = pull(pos[a], pos[b], rate)
            elif negatives:
                pos[a], pos[b] = push(pos[a], pos[b], rate, margin)
    return pos


def pair_distances(positions: dict[str, np.ndarray],
                   pairs: Sequence[tuple[str, str, bool]] = PAIRS) -> list[tuple[str, str, bool, float]]:
    """(word, word, belong together?, distance) for each pair."""
    missing = sorted({w for a, b, _ in pairs for w in (a, b)} - set(positions))
    if missing:
        raise ValueError(f"positions has no point for {missing}")
    return [(a, b, belong, float(np.linalg.norm(np.asarray(positions[a]) - np.asarray(positions[b]))))
            for a, b, belong in pairs]


# ---------------------------------------------------------------------------
# Exercise checks: they print "Right: ..." or a hint, never the answer
# ---------------------------------------------------------------------------
