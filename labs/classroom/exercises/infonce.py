"""Answer checks of the InfoNCE lesson: the best cell to raise, and a right card twice in a batch.

Each check takes the reader's answer, prints "Right: ..." or a hint that says how
the answer is wrong (never the answer), and returns True or False.
"""

from __future__ import annotations

import numpy as np

from labs.classroom.answers import grade_number, number_answer, word_answer
from labs.lessons.duplicates import duplicate_floor
from labs.lessons.infonce import info_nce

__all__ = ["LESSON_MATRIX", "check_best_cell", "check_duplicate_floor", "check_twin_push"]


LESSON_MATRIX = ((0.8, 0.3, 0.1), (0.2, 0.7, 0.4), (0.0, 0.3, 0.6))


def check_best_cell(answer: tuple[int, int] | None, *, bump: float = 0.2, tau: float = 0.5) -> bool:
    """Exercise: which single cell of the lesson's 3x3 matrix, raised by ``bump``, lowers the batch loss most?

    ``answer`` is (row, column), counted from 1 as in the lesson's table.
    """
    if answer is None:
        print("Fill in your answer: answer = (row, column), counting from 1")
        return False
    try:
        row, col = (int(x) for x in answer)
    except (TypeError, ValueError):
        print(f"Answer with two numbers (row, column), got {answer!r}")
        return False
    if not (1 <= row <= 3 and 1 <= col <= 3):
        print(f"Rows and columns run from 1 to 3, got ({row}, {col})")
        return False
    S = np.array(LESSON_MATRIX)
    base = info_nce(S, tau)

    def raised(i: int, j: int) -> float:
        T = S.copy()
        T[i, j] += bump
        return info_nce(T, tau)

    change = raised(row - 1, col - 1) - base
    best = min((raised(i, j), (i, j)) for i in range(3) for j in range(3))[1]
    if (row - 1, col - 1) == best:
        print(f"Right: raising cell ({row}, {col}) by {bump} changes the batch loss by {change:+.3f}, the biggest drop.")
        return True
    if row != col:
        print(f"Not that one: cell ({row}, {col}) is a wrong card, so raising it makes the loss go up ({change:+.3f}).")
    else:
        print(f"Good instinct, a positive: the loss drops ({change:+.3f}), but another row has more to gain. "
              "Which row has the highest loss?")
    return False


def check_duplicate_floor(answer: float | None) -> bool:
    """Exercise: a row's right card is in the batch three times (identical); the lowest loss it can reach?"""
    value = number_answer(answer, "Not answered yet: fill in the lowest loss, a number (2 decimals are enough)")
    if value is None:
        return False
    return grade_number(
        value, duplicate_floor(3), "Right: three identical columns always score alike, so the own card's share "
        "stops at one third, and -ln(1/3) = ln 3 is as low as the row can go.",
        {0.0: "Not quite: a loss of 0 needs the own card to take the whole share. Can it, "
              "when identical columns always score the same?",
         duplicate_floor(2): "Close: that is the floor for two copies. Here the card is there three times.",
         1 / 3: "Close: that is the best *share*; the loss is minus the log of it."},
        "Hint: let the negatives fall far behind; how do the identical columns split the share?", tol=5e-3)


def check_twin_push(answer: str | None) -> bool:
    """Exercise: the look-alike twin is a distinct text that is also right; does the loss pull or push its score?"""
    word = word_answer(answer, ("pull", "push"), 'Not answered yet: fill in answer = "pull" or answer = "push"',
                       'Answer with "pull" or "push", got {answer!r}')
    if word is None:
        return False
    if word == "pull":
        print("Not quite: the twin has a column of its own and no label. Look at the sign of its "
              "derivative: share / tau.")
        return False
    print("Right: its derivative is its share / tau > 0, so a step lowers its score: the loss pushes "
          "the question away from a text that is also right.")
    return True
