"""Answer checks of the fine-tuning lesson.

Each check takes the reader's answer, prints "Right: ..." or a hint that says how
the answer is wrong (never the answer), and returns True or False.
"""

from __future__ import annotations

import math

import numpy as np

from labs.classroom.answers import number_answer
from labs.lessons.infonce import info_nce

__all__ = ["FIRST_JUMP_B", "check_chance_loss", "check_first_jump", "check_kept_epoch"]


def check_chance_loss(answer) -> bool:
    """Exercise: the loss of a batch of 16 pairs when every similarity is equal (a model that cannot tell)."""
    value = number_answer(answer, "Not answered yet. Fill in answer = a number: the loss of the batch.",
                          "Give a number, not {answer!r}.")
    if value is None:
        return False
    right = math.log(16)
    if abs(value - right) <= 0.01:
        print("Right: every candidate gets probability 1/16, and the loss is minus the log of that.")
        return True
    if abs(value - 1 / 16) <= 0.01:
        print("That is the probability the softmax gives the right document; the loss is minus its log.")
    elif abs(value - math.log2(16)) <= 0.01:
        print("Cross-entropy uses the natural logarithm, not log base 2.")
    elif value <= 0:
        print("A cross-entropy loss is never negative: the right document's probability is at most 1.")
    else:
        print("Not quite. The scale does not matter when all scores are equal: what probability does each of "
              "the 16 candidates get, and what is minus its log?")
    return False


FIRST_JUMP_B = 5  # notebook 05's fixed batch under MiniLM: its 5th pair is the first look-alike of an earlier one


def check_first_jump(answer, similarities=None) -> bool:
    """Exercise (slider): the smallest batch size B whose fixed-batch loss at scale 20 is above 0.1.

    ``similarities``: the notebook's (32, 32) cosine table of the fixed batch, so the check holds
    for whichever model the page ran; without it, the MiniLM answer `FIRST_JUMP_B`.
    """
    if answer is None:
        print("Not answered yet. Fill in answer = a whole number: the batch size B.")
        return False
    if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)) and not (
            isinstance(answer, float) and answer.is_integer()):
        print(f"Give a whole number (a batch size), not {answer!r}.")
        return False
    right = FIRST_JUMP_B
    if similarities is not None:
        S = np.asarray(similarities, dtype=np.float64)
        right = next((b for b in range(2, len(S) + 1) if info_nce(S[:b, :b], 1 / 20) > 0.1), None)
    if int(answer) == right:
        print("Right: that pair's question (or article) is a look-alike of one already in the batch, so "
              "one row ranks a wrong article first. Who is in the batch matters as much as how many.")
        return True
    if right is not None and int(answer) > right:
        print("Too late: at scale 20, go back one batch size at a time until the loss falls to 0.1 or less.")
    else:
        print("Too early: at that B the loss is still 0.1 or less at scale 20. Move the slider up.")
    return False


def check_kept_epoch(answer) -> bool:
    """Exercise: validation MRR@5 reads 0.90, 0.88, 0.93, 0.93, 0.91 at epochs 0-4; which epoch is in best/?"""
    if answer is None:
        print("Not answered yet. Fill in answer = a whole number from 0 to 4: the epoch kept.")
        return False
    if isinstance(answer, bool) or answer not in range(5):
        print(f"Give an epoch number from 0 to 4, not {answer!r}.")
        return False
    hints = {0: "The untouched model is a candidate, but a later epoch beats it here.",
             1: "Epoch 1 scores below the untouched model: it is never saved.",
             3: "A tie is not a win: best/ is saved only when a score beats every earlier one.",
             4: "The last epoch is not kept just for being last: compare its score with the earlier ones."}
    if answer == 2:
        print("Right: epoch 2 is the first to beat every earlier score; epoch 3 only ties it, epoch 4 is lower.")
        return True
    print(hints[answer])
    return False
