"""Answer checks of the CLIP lesson.

Each check takes the reader's answer, prints "Right: ..." or a hint that says how
the answer is wrong (never the answer), and returns True or False.
"""

from __future__ import annotations

import math

import numpy as np

from labs.classroom.answers import grade_number, number_answer
from labs.lessons.clip import steps_to_reach, train_clip_toy
from labs.lessons.infonce import clip_loss
from labs.lessons.clip_batches import false_negative_floor

__all__ = ["check_uniform_table_loss", "check_steps_to_90", "FLOOR_BATCH", "check_false_negative_floor"]


def check_uniform_table_loss(answer: float | None) -> bool:
    """Exercise: B = 3 pairs whose table has the same cosine everywhere; the CLIP loss at any tau?"""
    value = number_answer(answer, "Not answered yet: fill in answer = the loss as a number (3 decimals are enough)")
    if value is None:
        return False
    truth = clip_loss(np.full((3, 3), 0.4), 0.1)
    if abs(value - truth) < 5e-3:
        print("Right: every row and every column splits its softmax evenly, a third each, so each "
              "direction loses -ln(1/3) and so does their average, whatever tau is.")
        return True
    if value <= 0:
        print("Hint: a loss of 0 needs the right card to take the whole share; here it takes an equal share.")
    elif abs(value - 1 / 3) < 5e-3:
        print("Hint: 1/3 is the share of the right caption; the loss is minus the log of that share.")
    else:
        print("Hint: with equal scores the softmax gives each of the 3 captions the same share. "
              "What is minus the log of that share?")
    return False


def check_steps_to_90(answer: int | None) -> bool:
    """Exercise: on seed 0 at tau = 1.0, the fewest steps that lift zero-shot accuracy to >= 90%?"""
    if answer is None:
        print("Not answered yet: fill in answer = a whole number of training steps")
        return False
    if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)) or answer < 0:
        print(f"Hint: the answer is a whole number of steps (0 or more), got {answer!r}")
        return False
    truth = steps_to_reach(0.9, tau=1.0, seed=0)
    accuracy = train_clip_toy(seed=0, steps=int(answer), tau=1.0).zero_shot_accuracy
    if answer == truth:
        print(f"Right: at {answer} steps the accuracy is {accuracy:.0%}, and every smaller number of steps "
              "stays below 90%.")
        return True
    if accuracy < 0.9:
        print(f"Not yet: at {answer} steps (tau = 1.0) the accuracy is {accuracy:.0%}, below 90%. Try more steps.")
    else:
        print(f"Close: {answer} steps reach {accuracy:.0%}, but fewer steps already reach 90%. Try fewer.")
    return False


FLOOR_BATCH = (7, 7, 3, 1)  # the exercise's batch: four images, two of them sevens


def check_false_negative_floor(answer: float | None) -> bool:
    """Exercise: the false-negative floor (mean row loss) of a batch whose images show 7, 7, 3 and 1."""
    value = number_answer(answer, "Not answered yet: fill in answer = the floor, a number (2 decimals are enough)")
    if value is None:
        return False
    truth = false_negative_floor(np.array(FLOOR_BATCH))
    return grade_number(
        value, truth, "Right: each seven splits its share with the other seven's caption (ln 2 each), "
        "the 3 and the 1 are alone (0 each), and the floor is the mean over the four rows.",
        {len(FLOOR_BATCH) * truth: "Close: that is the sum of the rows; the loss is their mean.",
         math.log(2): "Close: that is the floor of one seven's row; the other two rows can reach 0. "
                      "Average all four."},
        "Hint: a row whose digit appears n times in the batch can do no better than ln n. "
        "Count per row, then average.", tol=5e-3)
