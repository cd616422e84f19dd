"""Answer checks of the mining lesson (06): the masked loss's rule written by the reader, the window of
score margins that masks the twin and keeps every true negative, and the chance that plain shuffling
puts two questions with one answer in the same batch.

Each check takes the reader's answer, prints "Right: ..." or a hint that says how
the answer is wrong (never the answer), and returns True or False.
"""

from __future__ import annotations


import numpy as np

from labs.classroom.answers import (array_answer, call_answer, fraction_answer, function_answer, grade_number,
                                    number_answer, say)
from labs.lessons.infonce import false_negative_mask
from labs.lessons.mining import PAIRS, dedupe_pairs, same_batch_chance

__all__ = ["SAFE_WINDOW", "check_mask", "check_safe_window", "check_same_batch_chance"]


# The router question under the packaged all-MiniLM-L6-v2: the power-cycle twin scores 0.854, the
# closest card that does not answer it (firmware) 0.728; tests/classroom/test_exercises.py recomputes
# both from the model. The margins that mask the twin and keep every true negative span their gap.
TWIN_SCORE, CLOSEST_TRUE_NEGATIVE = 0.854, 0.728
SAFE_WINDOW = round(TWIN_SCORE - CLOSEST_TRUE_NEGATIVE, 3)
TWIN_LEAD, FIRMWARE_GAP = 0.010, 0.116  # above and below the labelled answer (0.844)


def _mask_cases() -> list[tuple[np.ndarray, float]]:
    """Tables (B, M) and margins that tell the rule's parts apart (exact binary fractions, so ties are ties)."""
    S0 = np.array([[0.5, 0.5, 0.25]])  # a tie with the positive
    S1 = np.array([[0.5, 0.75, 0.25], [0.5, 0.25, 0.75]])
    S2 = np.array([[0.5, 0.625, 0.375, 0.75], [0.875, 0.25, 0.5, 0.125], [0.5, 0.5, 0.5, 0.25]])
    return [(S0, 0.0), (S1, 0.25), (S2, 0.125), (S2, -0.125), (S2, 0.0)]


def check_mask(fn: object) -> bool:
    """Check the reader's ``mask(S, margin)``: True where row i's negative j scores above S[i, i] + margin."""
    if not function_answer(fn, "mask"):
        return False
    for S, margin in _mask_cases():
        got, error = call_answer(fn, S.copy(), margin)
        if error:
            say(f"Your function raised {error} for a {S.shape} table; "
                  "it should return a True/False table of the same shape.")
            return False
        if got is None:
            say("Not answered yet: your function returned None; replace the placeholder line.")
            return False
        got = array_answer(got, S.shape, bools=True)
        if isinstance(got, str):
            say(f"For a {S.shape} table it should return a True/False table of the same shape, got {got}.")
            return False
        want = false_negative_mask(S, margin)
        if np.array_equal(got, want):
            continue
        B = S.shape[0]
        rows = np.arange(B)
        where = f"For the table {S.tolist()} and margin {margin}"
        if np.any(got[rows, rows]):
            say(f"{where}: you masked a positive (column i of row i). The positive always stays.")
        elif np.array_equal(got, (S > S[rows, rows][:, None] - margin) & ~np.eye(*S.shape, dtype=bool)):
            say(f"{where}: check the sign: the margin is added to the positive's score.")
        elif np.array_equal(got, (S >= S[rows, rows][:, None] + margin) & ~np.eye(*S.shape, dtype=bool)):
            say(f"{where}: a negative exactly at the positive plus the margin is kept; only one strictly above "
                  "is masked.")
        else:
            say(f"{where}: compare each negative with its own row's positive, S[i, i], plus the margin.")
        return False
    say(f"Right: your mask agrees with the library's on all {len(_mask_cases())} tables.")
    return True


def check_safe_window(answer: object) -> bool:
    """Slider exercise: how wide is the range of margins that masks the twin and keeps every true negative?"""
    value = number_answer(answer, "Not answered yet: fill in the width, a number.")
    if value is None:
        return False
    return grade_number(
        value, SAFE_WINDOW,
        "Right: the twin is masked while the margin stays below its lead over the answer, and the closest true "
        "negative is kept once the margin reaches its (negative) gap; the answer's own score cancels, so the "
        "window is as wide as the gap between the twin and the closest wrong card.",
        {TWIN_LEAD: "That is only the top end, the twin's lead over the answer. Below which margin does the "
                    "closest true negative get masked too?",
         FIRMWARE_GAP: "That is the bottom end's size: how far the closest true negative sits below the answer. "
                       "The window reaches up to where the twin stops being masked.",
         -SAFE_WINDOW: "A width is a positive number: top end minus bottom end.",
         0.1: "That is the Qwen3 recipe's margin, a point (which does not even mask the twin), not a width."},
        "Not that. For each card, at which margin does it start to be masked? Find the two ends.", tol=4e-3, wrap=True)


def check_same_batch_chance(answer: object) -> bool:
    """Exercise: plain shuffling of the deduplicated pairs into batches of 4; the exact chance that both
    beacon-reset questions share a batch."""
    value = fraction_answer(answer, "Not answered yet: fill in the chance (0 to 1).")
    if value is None:
        return False
    n = len(dedupe_pairs(list(PAIRS)))
    return grade_number(
        value, same_batch_chance(n, 4),
        "Right: the pairs of rows that share a batch, over all pairs of rows; that is one shuffle in "
        "a few, the 100 shuffles above were an estimate of it.",
        {0.22: "That is the share of 100 random shuffles, an estimate. Count exactly: which pairs of rows share "
               "a batch?",
         3 / (n - 1): "Close, but that assumes the first question sits in a full batch. One of the batches is "
                      "short.",
         4 / n: "Not quite: count pairs of rows, not single rows."},
        "Not that. Count the pairs of rows that land in one batch, over all pairs of rows.", tol=2e-3, wrap=True)
