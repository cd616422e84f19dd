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

import numpy as np

from labs.lessons.inputs import finite_array, one_bool, real_number, whole_number

__all__ = ["WORDS", "START", "PAIRS", "pull", "push", "margin_toy", "pair_distances"]

WORDS = ("login", "password", "refund", "money", "helmet")
# Chosen so that the five starting distances are those of the topic page the toy comes from:
# login-password 1.131, refund-money 0.781, login-refund 0.224,
# password-money 0.141, helmet-login 0.566.
START = {"login": (1.58, 0.85), "password": (0.78, 1.65), "refund": (1.38, 0.95),
         "money": (0.88, 1.55), "helmet": (1.02, 0.77)}
PAIRS = (("login", "password", True), ("refund", "money", True),
         ("login", "refund", False), ("password", "money", False), ("helmet", "login", False))


def _rate(rate: float) -> float:
    value = real_number(rate, "rate", "a number from 0 to 0.5")
    if not 0 <= value <= 0.5:
        raise ValueError(f"rate must be a number from 0 to 0.5 (beyond 0.5 the points swap sides), got {rate!r}")
    return value


def _margin(margin: float) -> float:
    """A margin >= 0; infinity is allowed (every pair is pushed, as InfoNCE always pushes)."""
    value = real_number(margin, "margin", "a number >= 0")
    if not value >= 0:  # also refuses NaN
        raise ValueError(f"margin must be a number >= 0, got {margin!r}")
    return value


def _points(a: Sequence[float], b: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    a, b = finite_array(a, "a"), finite_array(b, "b")
    if a.ndim != 1 or a.shape != b.shape or a.size == 0:
        raise ValueError(f"a and b must be points of the same size, got shapes {a.shape} and {b.shape}")
    return a, b


def _gap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        gap = b - a
    if not np.all(np.isfinite(gap)):
        raise ValueError("a and b are too far apart for float64: b - a overflows")
    return gap


def _moved(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("the pushed points leave float64's range: a and b are too large")
    return a, b


def _pull(a: np.ndarray, b: np.ndarray, rate: float) -> tuple[np.ndarray, np.ndarray]:
    gap = _gap(a, b)
    return a + rate * gap, b - rate * gap


def _push(a: np.ndarray, b: np.ndarray, rate: float, margin: float) -> tuple[np.ndarray, np.ndarray]:
    gap = _gap(a, b)
    if np.linalg.norm(gap) >= margin:
        return a.copy(), b.copy()
    with np.errstate(over="ignore"):
        return _moved(a - rate * gap, b + rate * gap)


def pull(a: Sequence[float], b: Sequence[float], rate: float) -> tuple[np.ndarray, np.ndarray]:
    """Move two points towards each other, each by ``rate`` of the gap (the gap shrinks by 2 x rate).

    ``a`` and ``b`` are points of the same size with real, finite coordinates; ``rate`` is from 0 to 0.5.
    """
    a, b = _points(a, b)
    return _pull(a, b, _rate(rate))


def push(a: Sequence[float], b: Sequence[float], rate: float, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """Move two points apart, each by ``rate`` of the gap, but only while they are closer than ``margin``.

    Two points at the very same place have no gap to scale, so they stay put. ``margin`` is a
    number >= 0; ``float("inf")`` pushes every pair, however far apart.
    """
    a, b = _points(a, b)
    return _push(a, b, _rate(rate), _margin(margin))


def _pairs(pairs: Iterable[tuple[str, str, bool]], words: Iterable[str] | None) -> list[tuple[str, str, bool]]:
    """(word, word, True or False) triples, of ``words`` if given, or ValueError naming ``pairs``."""
    if isinstance(pairs, (str, bytes, Mapping)) or not isinstance(pairs, Iterable):
        raise ValueError(f"pairs must be a list of (word, word, True or False), got {pairs!r:.60}")
    out = []
    for i, pair in enumerate(pairs):
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 3:
            raise ValueError(f"pairs[{i}] must be (word, word, True or False), got {pair!r:.60}")
        a, b, belong = pair
        one_bool(belong, f"pairs[{i}][2] (do the words belong together?)")
        if not (isinstance(a, str) and isinstance(b, str)):
            raise ValueError(f"pairs[{i}] must name two words (strings), got ({a!r:.30}, {b!r:.30})")
        if words is not None and not (a in words and b in words):
            raise ValueError(f"pairs may only use the words {WORDS}, got ({a!r}, {b!r})")
        out.append((a, b, belong))
    return out


def margin_toy(steps: int = 10, *, rate: float = 0.1, margin: float = 1.0, negatives: bool = True,
               pairs: Sequence[tuple[str, str, bool]] = PAIRS) -> dict[str, np.ndarray]:
    """Positions of the five words after ``steps`` passes; each pass pulls or pushes every pair in turn."""
    steps = whole_number(steps, "steps", 0)
    rate, margin = _rate(rate), _margin(margin)
    negatives = one_bool(negatives, "negatives")
    pos = {w: np.array(p, dtype=np.float64) for w, p in START.items()}
    pairs = _pairs(pairs, pos)
    for _ in range(steps):
        for a, b, belong in pairs:
            if belong:
                pos[a], pos[b] = _pull(pos[a], pos[b], rate)
            elif negatives:
                pos[a], pos[b] = _push(pos[a], pos[b], rate, margin)
    return pos


def pair_distances(positions: dict[str, np.ndarray],
                   pairs: Sequence[tuple[str, str, bool]] = PAIRS) -> list[tuple[str, str, bool, float]]:
    """(word, word, belong together?, distance) for each pair."""
    if not isinstance(positions, Mapping):
        raise ValueError(f"positions must map each word to its point (as margin_toy returns), "
                         f"got {type(positions).__name__}")
    pairs = _pairs(pairs, None)
    missing = sorted({w for a, b, _ in pairs for w in (a, b)} - set(positions))
    if missing:
        raise ValueError(f"positions has no point for {missing}")
    points = {w: finite_array(positions[w], f"positions[{w!r}]") for a, b, _ in pairs for w in (a, b)}
    shapes = {p.shape for p in points.values()}
    if len(shapes) > 1 or any(len(shape) != 1 or shape[0] == 0 for shape in shapes):
        raise ValueError("positions must hold points of one size, got shapes "
                         + ", ".join(f"{w}: {p.shape}" for w, p in points.items()))
    return [(a, b, belong, float(np.linalg.norm(_gap(points[a], points[b]))))
            for a, b, belong in pairs]


# ---------------------------------------------------------------------------
# Exercise checks: they print "Right: ..." or a hint, never the answer
# ---------------------------------------------------------------------------
