"""Answer checks of the CLIP lesson (notebooks/09_clip.ipynb).

Each check takes the reader's answer, prints "Right: ..." or a hint that says how
the answer is wrong (never the answer), and returns True or False. Every question
asks for a step of reasoning that the page does not print.
"""

from __future__ import annotations

import math

import numpy as np

from labs.classroom.answers import fill, fraction_answer, grade_number, number_answer
from labs.lessons.clip_batches import false_negative_floor
from labs.lessons.infonce import clip_loss

__all__ = ["HUB_TABLE", "check_hub_table_loss", "FLOOR_BATCH", "check_false_negative_floor",
           "SHARE_BATCH", "SHARE_TAU", "check_best_share", "SWAPPED_DIGITS", "check_swapped_captions"]

HUB_TABLE = ((1.0, 0.0), (1.0, 0.0))  # both images score caption 1 highest: caption 1 is a hub


def check_hub_table_loss(answer) -> bool:
    """Exercise: the CLIP loss at tau = 1 of the table [[1, 0], [1, 0]] (rows images, columns captions)."""
    value = number_answer(answer, "Not answered yet. Fill in answer = the loss.")
    if value is None:
        return False
    S = np.array(HUB_TABLE)
    truth = clip_loss(S, 1.0)
    rows = (math.log(1 + math.exp(-1)) + math.log(1 + math.e)) / 2
    return grade_number(
        value, truth,
        "Right: along the rows, image 1 is fine (ln(1 + 1/e)) and image 2 prefers the wrong caption "
        "(ln(1 + e)); down the columns each caption sees two equal scores, a share of one half (ln 2 each). "
        "The CLIP loss averages the two directions.",
        {rows: "That is the row direction alone (images picking captions). Now let each caption pick its image "
               "down its column, and average the two directions.",
         math.log(2): "That is the column direction alone. Add the rows (images picking captions) and average.",
         2 * truth: "That is the sum of the two directions; the CLIP loss is their average.",
         math.log(1 + math.e): "That is image 2's row alone. Average over both rows, then over both directions."},
        "Hint: do each row (an image picking among the 2 captions) and each column (a caption picking among the "
        "2 images) at tau = 1, average each direction over its 2 rows, then average the two directions.",
        tol=5e-3)


FLOOR_BATCH = (7, 7, 7, 1, 1, 3)  # the exercise's batch: six images, three sevens and two ones


def check_false_negative_floor(answer) -> bool:
    """Exercise: the false-negative floor (the lowest mean row loss) of a batch of digits 7, 7, 7, 1, 1, 3."""
    value = number_answer(answer, "Not answered yet. Fill in answer = the floor.")
    if value is None:
        return False
    batch = np.array(FLOOR_BATCH)
    truth = false_negative_floor(batch)
    sevens, ones = math.log(3), math.log(2)
    return grade_number(
        value, truth,
        "Right: each seven's row splits its share three ways (ln 3), each one's row two ways (ln 2), the 3's "
        "row has nobody to share with (0), and the floor is the mean over the six rows.",
        {len(batch) * truth: "Close: that is the sum over the rows; the loss is their mean.",
         (sevens + ones) / 2: "Every row counts, not every digit: there are three sevens' rows, two ones' rows "
                              "and one row for the 3. Average over the six rows.",
         sevens: "That is one seven's row. The other rows can go lower: average all six.",
         (3 * math.log(2) + 2 * math.log(2)) / 6: "A seven's row shares with two other sevens, so its own "
                                                  "caption is one of three alike, not one of two."},
        "Hint: if an image cannot tell its own caption from the other captions of its digit, the best it can do "
        "is an equal share among them. Work out each row's loss, then average over the rows.", tol=5e-3)


SHARE_BATCH, SHARE_TAU = 32, 1.0  # the toy's batch and the slider's largest temperature


def check_best_share(answer) -> bool:
    """Exercise (slider): at tau = 1 in a batch of 32, the largest share a row can give its own caption
    (cosines lie between -1 and 1)."""
    value = fraction_answer(answer, "Not answered yet. Fill in answer = the share.")
    if value is None:
        return False
    best, worst = 1 / SHARE_TAU, -1 / SHARE_TAU
    truth = math.exp(best) / (math.exp(best) + (SHARE_BATCH - 1) * math.exp(worst))
    return grade_number(
        value, truth,
        "Right: the best a row can do is cosine 1 with its own caption and -1 with all 31 others, and at "
        "tau = 1 the softmax reads those cosines as they are: e / (e + 31/e). No row can pass that share, so "
        "the loss can never fall below minus its log, however well the encoders are trained.",
        {1.0: "A share of 1 needs the other captions infinitely far below. At tau = 1 the scores only span "
              "-1 to 1.",
         1 / SHARE_BATCH: "That is the share when every caption scores alike, the worst case. Give the row its "
                          "best case: cosine 1 for its own caption, -1 for the others.",
         math.e / (math.e + SHARE_BATCH - 1): "That puts the other 31 captions at cosine 0. They can go "
                                              "lower: to -1.",
         math.e / (math.e + 1 / math.e): "That is a batch of two. This batch has 31 wrong captions."},
        "Hint: the largest share comes with the largest own cosine and the smallest other cosines. Cosines lie "
        "between -1 and 1; at tau = 1 they enter the softmax unchanged.", tol=5e-3)


SWAPPED_DIGITS = (3, 8)  # break it: only these two digits' captions are swapped, of ten digits


def check_swapped_captions(answer) -> bool:
    """Break it: a bug swaps the captions of 3 and 8 only, and the tower learns the pairs it is given
    perfectly; zero-shot accuracy on a test set with as many images of each of the ten digits."""
    value = fraction_answer(answer, fill("Not answered yet. Fill in answer = the accuracy."),
                            fill("Give a number between 0 and 1, not {answer!r}."), refuse_bool=True)
    if value is None:
        return False
    digits = 10
    truth = (digits - len(SWAPPED_DIGITS)) / digits
    return grade_number(
        value, truth,
        "Right: the eight other digits are paired as before and read right; every 3 was taught the "
        "eight-captions and every 8 the three-captions, so zero-shot, which compares with the true captions, "
        "reads each 3 as 'eight' and each 8 as 'three'. The training loss would not notice.",
        {0.0: "That is the shift of every digit above. Here only two digits' captions are wrong.",
         1.0: "The loss cannot notice a consistent swap, but zero-shot compares with the true captions.",
         (digits - 1) / digits: "Both swapped digits are misread, not one: each 3 reads as 'eight' and each 8 "
                                "as 'three'.",
         len(SWAPPED_DIGITS) / digits: "That is the share misread. The question asks for the share read right."},
        "Not quite. Which digits' images are paired with their own captions, and what does zero-shot call the "
        "others? Count the share of the test images read right.", tol=0.005, wrap=True)
