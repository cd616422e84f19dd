"""Answer checks of the hard-negative lesson: write the pull and the push of the margin toy, and the slider exercise.

The slider trains the in-batch model on seed `SLIDER_SEED`, which the lesson's ten-seed table
does not show; the question asks for the best unseen look-alike accuracy along the slider.

Each check takes the reader's answer, prints "Right: ..." or a hint that says how
the answer is wrong (never the answer), and returns True or False.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from labs.lessons.hard_negatives import SLIDER_SEED, train_bi_encoder
from labs.lessons.margin_toy import pull, push

__all__ = ["check_pull", "check_push", "best_in_batch_accuracy", "check_best_in_batch"]


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


def best_in_batch_accuracy(tau: float = 0.1, *, seed: int = SLIDER_SEED, every: int = 40,
                           max_steps: int = 400) -> float:
    """Highest unseen look-alike accuracy the in-batch model shows at any multiple of ``every`` steps.

    The defaults are the lesson's steps slider: seed `SLIDER_SEED`, positions 0, 40, ..., 400.
    """
    _, curve = train_bi_encoder(False, seed=seed, tau=tau, steps=max_steps, checkpoints=range(0, max_steps + 1, every))
    return max(curve.values())


def check_best_in_batch(answer: object) -> bool:
    """The slider question: the in-batch model's best unseen accuracy over the steps slider (seed 10, tau 0.1).

    Accepts a share (0.6) or a percentage (60).
    """
    if answer is None:
        print("Not answered yet: fill in the highest accuracy you saw (a share, e.g. 0.5).")
        return False
    if isinstance(answer, bool) or not isinstance(answer, (int, float, np.integer, np.floating)) or not 0 <= answer <= 100:
        print(f"The answer is a number: a share from 0 to 1 or a percentage from 0 to 100, got {answer!r}.")
        return False
    share = answer / 100 if answer > 1 else float(answer)
    truth = best_in_batch_accuracy(0.1)
    if abs(share - truth) < 0.01:
        print(f"Right: at its best the in-batch model gets {truth:.0%} of the unseen look-alikes on this seed; "
              "the hard-negative model gets all of them.")
        return True
    print("Higher than it ever gets: check that the dropdown says in-batch negatives only." if share > truth
          else "It does better than that at some step: slide through all the steps and keep the highest value.")
    return False
