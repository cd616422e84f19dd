"""Answer checks of the hard-negative lesson (05): the margin toy's pull and push written by the
reader, where the words collapse without negatives, and what one more negative pair changes.

Each check takes the reader's answer, prints "Right: ..." or a hint that says how
the answer is wrong (never the answer), and returns True or False.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from labs.classroom.answers import (array_answer, call_answer, function_answer, grade_number, number_answer,
                                    numbers_answer, say)
from labs.lessons.hard_negatives import topic_accuracy, train_bi_encoder
from labs.lessons.margin_toy import PAIRS, START, margin_toy, pair_distances, pull, push

__all__ = ["check_pull", "check_push", "EXTRA_NEGATIVE", "added_negative_distance",
           "check_collapse_point", "check_added_negative", "SMALL_BATCH", "small_batch_topic_accuracy",
           "check_small_batch_topics"]


# The exercise's extra negative pair: refund and password do not belong together.
EXTRA_NEGATIVE = ("refund", "password", False)
# The "break it" exercise: two questions a batch (one in-batch negative each), look-alikes kept.
SMALL_BATCH = 2


def _check_mover(fn: object, name: str, reference: Callable, cases: list[tuple], hint: Callable) -> bool:
    if not function_answer(fn, name):
        return False
    for args in cases:
        result, error = call_answer(fn, *args)
        if error:
            say(f"Your function raised {error} for the arguments {args}; it should return two points.")
            return False
        if result is None:
            say("Not answered yet: your function returned None; replace the placeholder line.")
            return False
        want = reference(*args)
        got = array_answer(result, (2, want[0].size))
        if isinstance(got, str):
            say(f"For the arguments {args} it should return two points of {want[0].size} numbers each.")
            return False
        with np.errstate(all="ignore"):  # huge but finite points: their gaps may overflow to inf
            if not (np.allclose(got[0], want[0]) and np.allclose(got[1], want[1])):
                say(hint(args, got))
                return False
    say(f"Right: your {name} agrees with the reference on all {len(cases)} cases.")
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


def check_collapse_point(answer: object) -> bool:
    """Slider exercise: with no negatives, where does login end after many steps? An (x, y) point.

    A pull moves both words by the same amount in opposite directions, so their midpoint never
    moves: login and password meet at the midpoint of their starting positions.
    """
    point = numbers_answer(answer, "Not answered yet: fill in answer = (x, y), the point where login ends.",
                           "The answer is a point, two numbers (x, y), got {answer!r}.", length=2, wrap=True)
    if point is None:
        return False
    start = {w: np.array(p, dtype=np.float64) for w, p in START.items()}
    truth = (start["login"] + start["password"]) / 2
    if math.dist(point, truth) < 0.01:
        say("Right: a pull moves both words by the same step in opposite directions, so the pair's "
              "midpoint never moves; with nothing else acting on them, they meet there.")
        return True
    misses = {
        "start": (start["login"], "That is where login starts. Without negatives, does anything stop the pull?"),
        "partner": (start["password"], "That is password's start: both words move, not only login."),
        "other pair": ((start["refund"] + start["money"]) / 2,
                       "That is where the other pair, refund and money, meets. Which pair is login in?"),
        "all four": (sum(start[w] for w in ("login", "password", "refund", "money")) / 4,
                     "Close, but no pull joins the two pairs: login only ever moves with password."),
    }
    for target, text in misses.values():
        if math.dist(point, target) < 0.01:
            say(text)
            return False
    say("Not there. Hint: one pull moves login and password by the same step towards each other. "
          "What stays where it was?")
    return False


def added_negative_distance(steps: int = 10) -> float:
    """login - password distance after ``steps`` with (refund, password) added at the end of the pairs."""
    positions = margin_toy(steps, pairs=PAIRS + (EXTRA_NEGATIVE,))
    return {(a, b): d for a, b, _, d in pair_distances(positions)}[("login", "password")]


def check_added_negative(answer: object) -> bool:
    """Exercise: add (refund, password) as a negative at the end of the pairs; login - password after 10 steps?"""
    value = number_answer(answer, "Not answered yet: fill in the distance.")
    if value is None:
        return False
    before = {(a, b): d for a, b, _, d in pair_distances(margin_toy(10))}[("login", "password")]
    first = margin_toy(10, pairs=(EXTRA_NEGATIVE,) + PAIRS)
    in_front = {(a, b): d for a, b, _, d in pair_distances(first)}[("login", "password")]
    return grade_number(
        value, added_negative_distance(10),
        "Right: the new push moves password away from refund, and login sits close to refund, so password "
        "also moves away from login; the pull still takes 20% of the gap every step, so the pair closes "
        "all the same, a step or so later.",
        {before: "That is the distance with the five original pairs. Add the new pair and train again.",
         in_front: "Close: you put the new pair first. One step visits the pairs in list order; add it at the end.",
         0.0: "Not after 10 steps: the pull removes 20% of the gap per step, so some gap is left."},
        "Not that. Build the pairs (the five, then the new one), train 10 steps and measure login - password.",
        tol=2e-3, wrap=True)


@functools.lru_cache(maxsize=8)
def small_batch_topic_accuracy(seeds: range = range(10), *, hard_negatives: bool = True,
                               batch: int = SMALL_BATCH) -> float:
    """Mean unseen-topic accuracy (the right card against the other topics' cards) over ``seeds``."""
    return float(np.mean([topic_accuracy(train_bi_encoder(hard_negatives, seed=s, batch=batch)) for s in seeds]))


def check_small_batch_topics(answer: object) -> bool:
    """Break it: batches of 2 questions with their look-alikes; the mean unseen topic accuracy of seeds 0-9?"""
    value = number_answer(answer, "Not answered yet: fill in the mean topic accuracy.")
    if value is None:
        return False
    truth = small_batch_topic_accuracy()
    one_seed = topic_accuracy(train_bi_encoder(True, seed=0, batch=SMALL_BATCH))
    misses = {1.0: "Not yet: 1.0 is what these models score on the look-alike exam. This asks the other "
                   "test: hn.topic_accuracy(model), the right card against the other topics' cards.",
              small_batch_topic_accuracy(batch=8): "Not yet: that is the page's hard-negative model, with 8 "
                                                   "questions a batch. Train with batch=2."}
    if abs(one_seed - truth) >= 5e-3:
        misses[one_seed] = "Close: that is seed 0 alone. Average over seeds 0 to 9: one seed is an anecdote."
    return grade_number(
        value, truth, "Right: the look-alikes still teach intent (every seed gets every look-alike right), but "
        "with one other topic's card a step, topic gets little weight: the model learns the distinctions its "
        "negatives contain, and these mostly contain intent.", misses,
        "Not yet: train hn.train_bi_encoder(True, seed=s, batch=2) for s = 0 to 9, take "
        "hn.topic_accuracy of each model, and average the ten numbers.", tol=5e-3, wrap=True)
