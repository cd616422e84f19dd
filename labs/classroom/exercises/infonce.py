"""Answer checks of the InfoNCE lesson: one cell's gradient, the floor of a thrice-copied card, a triplet loss,
and the loss of a batch whose labels are off by one (the lesson's "break it").

Each check takes the reader's answer, prints "Right: ..." or a hint that says how
the answer is wrong (never the answer), and returns True or False.
"""

from __future__ import annotations

import math

import numpy as np

from labs.classroom.answers import grade_number, number_answer
from labs.lessons.duplicates import duplicate_floor

__all__ = ["LESSON_MATRIX", "GRADIENT_CELL", "TRIPLET_MARGIN", "SHIFTED_LABELS", "cell_gradient",
           "triplet_batch_loss", "labelled_batch_loss", "check_cell_gradient", "check_duplicate_floor",
           "check_triplet_batch_loss", "check_shifted_labels_loss"]


LESSON_MATRIX = ((0.8, 0.3, 0.1), (0.2, 0.7, 0.4), (0.0, 0.3, 0.6))
#: the cell (row, column), counted from 1, whose gradient the slider exercise asks for, at tau 0.5
GRADIENT_CELL = (2, 3)
#: the margin of the triplet exercise (the lesson shows 0.2)
TRIPLET_MARGIN = 0.4
#: the "break it" exercise's labels: question i is told that question i + 1's card is its own
SHIFTED_LABELS = (1, 2, 0)


def cell_gradient(row: int, column: int, tau: float = 0.5) -> float:
    """d(batch loss)/d S[row, column] of the lesson's 3x3 table (counted from 1): (share - [own]) / (tau B)."""
    S = np.asarray(LESSON_MATRIX)
    Z = S[row - 1] / tau
    shares = np.exp(Z - Z.max()) / np.exp(Z - Z.max()).sum()
    return float((shares[column - 1] - (row == column)) / (tau * S.shape[0]))


def triplet_batch_loss(margin: float) -> float:
    """Mean of max(0, margin - (S[i, i] - S[i, j])) over the six (question i, negative j) pairs of the table."""
    S = np.asarray(LESSON_MATRIX)
    terms = [max(0.0, margin - (S[i, i] - S[i, j])) for i in range(3) for j in range(3) if i != j]
    return float(np.mean(terms))


def labelled_batch_loss(labels, tau: float = 0.5) -> float:
    """Cross-entropy of the lesson's 3x3 table at ``tau`` with row i's right card at column ``labels[i]``."""
    Z = np.asarray(LESSON_MATRIX) / tau
    top = Z.max(axis=1, keepdims=True)
    log_shares = Z - top - np.log(np.exp(Z - top).sum(axis=1, keepdims=True))
    return float(-np.mean(log_shares[np.arange(3), list(labels)]))


def check_cell_gradient(answer: object) -> bool:
    """Exercise: the slope of the batch loss (tau = 0.5) with respect to cell (2, 3), question 2's negative card 3."""
    value = number_answer(answer, "Not answered yet: fill in the slope, a number.")
    if value is None:
        return False
    row, col = GRADIENT_CELL
    truth = cell_gradient(row, col)
    share = truth * 0.5 * 3
    return grade_number(
        value, truth, "Right: card 3 takes about 0.29 of row 2's share; a negative's slope is share / tau, "
        "and the batch loss averages 3 rows, so 0.29 / (0.5 x 3).",
        {-truth: "Not yet: check the sign. Raising a wrong card's score makes the loss worse, so the slope "
                 "is positive.",
         3 * truth: "Close: that is the slope of row 2's own loss. The batch loss is the mean of three "
                    "rows, so each cell's slope is divided by the number of rows.",
         share: "Close: that is card 3's share of row 2. The slope divides it by tau, and by the number "
                "of rows the batch loss averages.",
         share / 3: "Close: you averaged over the rows, but the scores are divided by tau before the "
                    "softmax, so the slope is divided by tau too."},
        "Not yet: either read the batch loss at +0.1 and -0.1 on the slider and divide the difference by "
        "0.2, or use share / tau for a wrong card, divided by the 3 rows.", tol=5e-3)


def check_duplicate_floor(answer: object) -> bool:
    """Exercise: a row's right card is in the batch three times (identical); the lowest loss it can reach?"""
    value = number_answer(answer, "Not answered yet: fill in the lowest loss.")
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


def check_triplet_batch_loss(answer: object) -> bool:
    """Exercise: the mean triplet loss of the lesson's table over its six (question, negative) pairs, margin 0.4."""
    value = number_answer(answer, "Not answered yet: fill in the mean loss.")
    if value is None:
        return False
    truth = triplet_batch_loss(TRIPLET_MARGIN)
    return grade_number(
        value, truth, "Right: only two pairs lead by less than 0.4 (row 2 over card 3 and row 3 over card 2, "
        "both by 0.3); each costs 0.1, and 0.2 over six triplets is the mean.",
        {0.0: "Not yet: at margin 0.2 every pair is satisfied; at 0.4, check each lead again: some are "
              "only 0.3.",
         2 * truth * 3: "Close: that is the sum over the triplets. The batch loss is their mean.",
         truth * 6 / 3: "Close: that averages over the 3 questions. Average over all six (question, "
                        "negative) triplets."},
        "Not yet: for each question and each of its two negatives, compute max(0, 0.4 - lead), then "
        "average the six numbers.", tol=2e-3)


def check_shifted_labels_loss(answer: object) -> bool:
    """Break it: the batch loss of the 3x3 table at tau = 0.5 when the labels are (1, 2, 0), off by one."""
    value = number_answer(answer, "Not answered yet: fill in the batch loss.")
    if value is None:
        return False
    truth = labelled_batch_loss(SHIFTED_LABELS)
    return grade_number(
        value, truth, "Right: each row now pays minus the log of a wrong card's share, and all three sit "
        "above ln 3, the loss of a blind guess among three cards: the labels point the pull at wrong cards.",
        {labelled_batch_loss((0, 1, 2)): "Not yet: that is the loss with the right labels (the diagonal). "
                                          "Shift each row's label one column to the right.",
         math.log(3): "Close: ln 3 is the loss of a guess that scores every card alike. These rows do not "
                      "score alike: take each row's own numbers.",
         3 * truth: "Close: that is the sum of the three rows. The batch loss is their mean.",
         labelled_batch_loss((2, 0, 1)): "Not yet: that shifts the labels the other way (row 1 to card 3). "
                                          "Row 1's label is 1: card 2."},
        "Not yet: for each row take minus the log of the labelled card's share (its exponential over the "
        "row's sum, the sums printed above), then average the three rows.", tol=5e-3, wrap=True)
