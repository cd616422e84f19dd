"""Answer checks of the lesson beyond one vector: cheaper vectors, the cross-encoder's loss, rerank.

Each check takes the reader's answer, prints "Right: ..." or a hint that says how
the answer is wrong (never the answer), and returns True or False.
"""

from __future__ import annotations

import math

from labs.classroom.answers import fill, fraction_answer, grade_number, number_answer, say

__all__ = ["check_index_gigabytes", "check_bce_probability", "check_best_shortlist_recall",
           "check_clipped_int8_values"]


def check_index_gigabytes(answer: object) -> bool:
    """10 million vectors cut to their first 128 numbers and stored as int8: how many GB (10^9 bytes)?"""
    value = number_answer(answer, fill("Not answered yet: fill in a number of gigabytes."),
                          fill("Give a number of gigabytes, not {answer!r}."), refuse_bool=True)
    if value is None:
        return False
    return grade_number(
        value, 1.28, "Right: 128 numbers x 1 byte x 10 million vectors, 1.28 billion bytes.",
        {5.12: "Not yet: that is 128 numbers in float32 (4 bytes each). What does int8 take?",
         3.84: "Not yet: that keeps all 384 numbers. The vectors are cut first.",
         15.36: "Not yet: that is the full float32 vector. Cut it, then quantise it.",
         0.16: "Not yet: that is one bit per number; int8 keeps a whole byte.",
         1.28e9: "Not yet: that is the number of bytes. Give it in gigabytes (10^9 bytes)."},
        "Not yet: multiply the numbers kept, the bytes per number and the number of vectors.", tol=0.005, wrap=True)


def check_bce_probability(answer: object) -> bool:
    """A row labelled 0 ('no') costs the cross-encoder a loss of 2.0: what probability of 'yes' did it give?"""
    value = fraction_answer(answer, fill("Not answered yet: fill in a probability between 0 and 1."),
                            fill("Give a probability between 0 and 1, not {answer!r}."), refuse_bool=True)
    if value is None:
        return False
    if not 0 <= value <= 1:
        say("Not yet: a probability lies between 0 and 1.")
        return False
    return grade_number(
        value, 1 - math.exp(-2.0), "Right: 2 = -ln(1 - p), so 1 - p = e^-2 and the model said 'yes' "
        "with that probability, confidently wrong.",
        {math.exp(-2.0): "Not yet: that would be the probability of a row labelled 1 (yes) with this loss. "
                         "A row labelled 0 pays -ln(1 - p).",
         1 / (1 + math.exp(-2.0)): "Not yet: 2.0 is the loss, not the raw output. Undo the logarithm.",
         0.5: "Not yet: a 50/50 answer costs ln 2 on either label, much less than 2.0."},
        "Not yet: for a row labelled 0 the loss is -ln(1 - p). Solve it for p.", tol=0.005, wrap=True)


#: The retriever's Recall@k, and the reranker's hit rate given the right passage is in the
#: shortlist, for shortlists of 5, 10, 20 and 50 (a made-up pipeline for the exercise).
SHORTLISTS = {5: (0.60, 0.95), 10: (0.70, 0.90), 20: (0.75, 0.80), 50: (0.80, 0.70)}


def check_best_shortlist_recall(answer: object) -> bool:
    """The best Recall@1 a retrieve-then-rerank pipeline reaches over the shortlist lengths in SHORTLISTS."""
    value = fraction_answer(answer, fill("Not answered yet: fill in a Recall@1, a number between 0 and 1."),
                            fill("Give a number between 0 and 1, not {answer!r}."), refuse_bool=True)
    if value is None:
        return False
    results = {k: recall * hit for k, (recall, hit) in SHORTLISTS.items()}
    best = max(results.values())
    misses = {recall: "Not yet: that is a retriever's ceiling alone; the reranker also misses some "
                      "of the passages it is given." for recall, _ in SHORTLISTS.values()}
    misses.update({r: "Not yet: that is one shortlist length. Work out all four and keep the best."
                   for k, r in results.items() if r != best})
    return grade_number(value, best, "Right: Recall@1 = Recall@k x the reranker's hit rate; a longer "
                        "shortlist raises the first and lowers the second, and the best is in between.",
                        misses, "Not yet: the reranker can only put first a passage it was given. Multiply "
                        "the two rates for each length.", tol=0.003, wrap=True)


def check_clipped_int8_values(answer: object) -> bool:
    """Break it: int8 whose scale is the smallest absolute value of the vectors instead of the largest. How
    many different values can a stored number then take?"""
    value = number_answer(answer, fill("Not answered yet: fill in a count of values."),
                          fill("Give a whole number, not {answer!r}."), refuse_bool=True)
    if value is None:
        return False
    return grade_number(
        value, 2, "Right: no number is smaller than the smallest, so x * 127 / scale is at least 127 in size "
        "for every number, and each is clipped to +127 or -127. Only its sign is left: one bit stored in a "
        "byte, and the ranking of the one-bit format at eight times the size.",
        {255: "Not yet: that is int8 with a scale that fits, -127 to 127. With the smallest number as the "
              "scale, how large is x * 127 / scale for the others?",
         256: "Not yet: int8 here uses -127 to 127. And with the smallest number as the scale, how large is "
              "x * 127 / scale for the others?",
         3: "Not yet: 0 would need a number smaller than the smallest. What is left of each number?",
         1: "Not yet: the sign survives the clipping. How many signs are there?"},
        "Not yet: divide each number by the smallest size, multiply by 127, then clip to -127..127. Which "
        "results are possible?", tol=0.5, wrap=True)
