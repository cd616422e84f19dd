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

from collections.abc import Iterable, Mapping, Sequence
from functools import partial

import numpy as np

from labs.checks import MOST, arguments, finite_table, flag, integer, items, number, require

__all__ = ["WORDS", "START", "PAIRS", "pull", "push", "margin_toy", "pair_distances"]

WORDS = ("login", "password", "refund", "money", "helmet")
# Chosen so that the five starting distances are those of the topic page the toy comes from:
# login-password 1.131, refund-money 0.781, login-refund 0.224,
# password-money 0.141, helmet-login 0.566.
START = {"login": (1.58, 0.85), "password": (0.78, 1.65), "refund": (1.38, 0.95),
         "money": (0.88, 1.55), "helmet": (1.02, 0.77)}
PAIRS = (("login", "password", True), ("refund", "money", True),
         ("login", "refund", False), ("password", "money", False), ("helmet", "login", False))


_RATE = partial(number, what="a number from 0 to 0.5", low=0.0, high=0.5,
                otherwise="a number from 0 to 0.5 (beyond 0.5 the points swap sides)")
#: A margin >= 0; infinity is allowed (every pair is pushed, as InfoNCE always pushes).
_MARGIN = partial(number, what="a number >= 0", low=0.0)


def _gap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        gap = b - a
    require(np.all(np.isfinite(gap)), "a and b are too far apart for float64: b - a overflows")
    return gap


def _pull(a: np.ndarray, b: np.ndarray, rate: float) -> tuple[np.ndarray, np.ndarray]:
    gap = _gap(a, b)
    return a + rate * gap, b - rate * gap


def _push(a: np.ndarray, b: np.ndarray, rate: float, margin: float) -> tuple[np.ndarray, np.ndarray]:
    gap = _gap(a, b)
    if np.linalg.norm(gap) >= margin:
        return a.copy(), b.copy()
    with np.errstate(over="ignore"):
        a, b = a - rate * gap, b + rate * gap
    require(np.all(np.isfinite(a)) and np.all(np.isfinite(b)), "the pushed points leave float64's range: a and b are "
            "too large")
    return a, b


def _same_size(a: np.ndarray, b: np.ndarray) -> None:
    require(a.ndim == 1 and a.shape == b.shape and a.size > 0,
            f"a and b must be points of the same size, got shapes {a.shape} and {b.shape}")


@arguments(a=finite_table, b=finite_table, rate=_RATE)
def pull(a: Sequence[float], b: Sequence[float], rate: float) -> tuple[np.ndarray, np.ndarray]:
    """Move two points towards each other, each by ``rate`` of the gap (the gap shrinks by 2 x rate).

    ``a`` and ``b`` are points of the same size with real, finite coordinates; ``rate`` is from 0 to 0.5.
    """
    _same_size(a, b)
    return _pull(a, b, rate)


@arguments(a=finite_table, b=finite_table, rate=_RATE, margin=_MARGIN)
def push(a: Sequence[float], b: Sequence[float], rate: float, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """Move two points apart, each by ``rate`` of the gap, but only while they are closer than ``margin``.

    Two points at the very same place have no gap to scale, so they stay put. ``margin`` is a
    number >= 0; ``float("inf")`` pushes every pair, however far apart.
    """
    _same_size(a, b)
    return _push(a, b, rate, margin)


def _pairs(pairs: Iterable[tuple[str, str, bool]], name: str,
           words: Iterable[str] | None = None) -> list[tuple[str, str, bool]]:
    """(word, word, True or False) triples, of ``words`` if given, or ValueError naming ``pairs``."""
    out = items(pairs, name, "a list of (word, word, True or False)")
    for i, pair in enumerate(out):
        require(not isinstance(pair, (str, bytes)) and isinstance(pair, Sequence) and len(pair) == 3,
                f"{name}[{i}] must be (word, word, True or False), got {pair!r:.60}")
        a, b, belong = pair
        flag(belong, f"{name}[{i}][2] (do the words belong together?)")
        require(isinstance(a, str) and isinstance(b, str), f"{name}[{i}] must name two words (strings), got "
                f"({a!r:.30}, {b!r:.30})")
        require(words is None or (a in words and b in words), f"{name} may only use the words {WORDS}, got ({a!r}, {b!r})")
    return [tuple(p) for p in out]


@arguments(steps=partial(integer, minimum=0, maximum=MOST), rate=_RATE, margin=_MARGIN, negatives=flag,
           pairs=partial(_pairs, words=WORDS))
def margin_toy(steps: int = 10, *, rate: float = 0.1, margin: float = 1.0, negatives: bool = True,
               pairs: Sequence[tuple[str, str, bool]] = PAIRS) -> dict[str, np.ndarray]:
    """Positions of the five words after ``steps`` passes; each pass pulls or pushes every pair in turn."""
    pos = {w: np.array(p, dtype=np.float64) for w, p in START.items()}
    for _ in range(steps):
        for a, b, belong in pairs:
            if belong:
                pos[a], pos[b] = _pull(pos[a], pos[b], rate)
            elif negatives:
                pos[a], pos[b] = _push(pos[a], pos[b], rate, margin)
    return pos


def _points(positions: Mapping, pairs: list[tuple[str, str, bool]]) -> dict[str, np.ndarray]:
    """The point of every word in ``pairs``: real, finite, one size, or ValueError naming ``positions``."""
    missing = sorted({w for a, b, _ in pairs for w in (a, b)} - set(positions))
    require(not missing, f"positions has no point for {missing}")
    points = {w: finite_table(positions[w], f"positions[{w!r}]") for a, b, _ in pairs for w in (a, b)}
    shapes = {p.shape for p in points.values()}
    require(len(shapes) <= 1 and all(len(shape) == 1 and shape[0] > 0 for shape in shapes),
            lambda: "positions must hold points of one size, got shapes " + ", ".join(f"{w}: {p.shape}" for w, p in points.items()))
    return points


def _positions(positions, name: str) -> Mapping:
    require(isinstance(positions, Mapping), f"{name} must map each word to its point (as margin_toy returns), got "
            f"{type(positions).__name__}")
    return positions


@arguments(positions=_positions, pairs=_pairs)
def pair_distances(positions: dict[str, np.ndarray],
                   pairs: Sequence[tuple[str, str, bool]] = PAIRS) -> list[tuple[str, str, bool, float]]:
    """(word, word, belong together?, distance) for each pair."""
    points = _points(positions, pairs)
    return [(a, b, belong, float(np.linalg.norm(_gap(points[a], points[b])))) for a, b, belong in pairs]


# ---------------------------------------------------------------------------
# Exercise checks: they print "Right: ..." or a hint, never the answer
# ---------------------------------------------------------------------------
