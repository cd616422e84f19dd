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
(`labs.infonce`) never stops pushing, it only pushes less. The bi-encoder of
`labs.hard_negatives` does the same pulling and pushing with gradients in 16-D.

Lesson: the opening of ``notebooks/04_hard_negatives.ipynb``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["WORDS", "START", "PAIRS", "pull", "push", "margin_toy", "pair_distances", "check_pull", "check_push"]

WORDS = ("login", "password", "refund", "money", "helmet")
# Chosen so that the five starting distances are those of the source lesson:
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


def _call(fn: Callable, args: tuple) -> tuple[np.ndarray, np.ndarray] | str:
    try:
        result = fn(*args)
        if result is None:
            return "nothing (None): replace the placeholder line with your code"
        a, b = result
        return np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    except Exception as err:  # the reader's code: report it, do not crash the notebook
        return f"{type(err).__name__}: {err}"


def _check_mover(fn: object, name: str, reference: Callable, cases: list[tuple], hint: Callable) -> bool:
    if fn is None:
        print(f"Not answered yet: fill in your {name} function and run the cell again.")
        return False
    if not callable(fn):
        print(f"Pass the function itself, e.g. check_{name}(my_{name}), not a {type(fn).__name__}.")
        return False
    for args in cases:
        got = _call(fn, args)
        if isinstance(got, str) and got.startswith("nothing"):
            print("Not answered yet: your function returned None; replace the placeholder line.")
            return False
        if isinstance(got, str):
            print(f"Your function raised {got} for the arguments {args}; it should return two points.")
            return False
        want = reference(*args)
        if got[0].shape != want[0].shape or got[1].shape != want[1].shape:
            print(f"For the arguments {args} it should return two points of {want[0].size} numbers each.")
            return False
        if not (np.allclose(got[0], want[0]) and np.allclose(got[1], want[1])):
            print(hint(args, got))
            return False
    print(f"Right: your {name} agrees with the reference on all {len(cases)} cases.")
    return True


def check_pull(fn: object) -> bool:
    """Check the reader's ``pull(a, b, rate)`` on a few pairs of points."""
    cases = [([0.0, 0.0], [1.0, 0.0], 0.25), ([1.0, 2.0], [3.0, -2.0], 0.1), ([0.5, 0.5], [0.5, 0.5], 0.3)]

    def hint(args: tuple, got: tuple[np.ndarray, np.ndarray]) -> str:
        a, b = np.asarray(args[0], dtype=float), np.asarray(args[1], dtype=float)
        where = f"For a={args[0]}, b={args[1]}, rate={args[2]}"
        if np.allclose(got[0], a) or np.allclose(got[1], b):
            return f"{where}: one point stayed where it was. Both points should move."
        if np.linalg.norm(got[1] - got[0]) > np.linalg.norm(b - a):
            return f"{where}: the points moved apart. Pull moves them towards each other."
        return f"{where}: each point should move by rate times the gap, towards the other point."

    return _check_mover(fn, "pull", pull, cases, hint)


def check_push(fn: object) -> bool:
    """Check the reader's ``push(a, b, rate, margin)``, inside and outside the margin."""
    cases = [([0.0, 0.0], [0.5, 0.0], 0.1, 1.0), ([0.0, 0.0], [2.0, 0.0], 0.1, 1.0),
             ([1.0, 1.0], [1.3, 1.4], 0.2, 1.0)]

    def hint(args: tuple, got: tuple[np.ndarray, np.ndarray]) -> str:
        a, b = np.asarray(args[0], dtype=float), np.asarray(args[1], dtype=float)
        where = f"For a={args[0]}, b={args[1]}, rate={args[2]}, margin={args[3]}"
        if np.linalg.norm(b - a) >= args[3]:
            return f"{where}: the pair is already a margin apart, so it should stay where it is."
        if np.allclose(got[0], a) and np.allclose(got[1], b):
            return f"{where}: nothing moved, but the pair is closer than the margin, so it should be pushed."
        if np.linalg.norm(got[1] - got[0]) < np.linalg.norm(b - a):
            return f"{where}: the points moved together. Push moves them apart."
        return f"{where}: each point should move by rate times the gap, away from the other point."

    return _check_mover(fn, "push", push, cases, hint)
