"""Answer checks of the fine-tuning lesson (notebooks/07_finetuning.ipynb).

Each check takes the reader's answer, prints "Right: ..." or a hint that says how
the answer is wrong (never the answer), and returns True or False. Every question
asks for a step of reasoning that the page does not print.
"""

from __future__ import annotations

import math

from labs.classroom.answers import fill, grade_number, number_answer

__all__ = ["NDCG_RANKING", "NDCG_RIGHT", "VAL_QUESTIONS", "GAP", "GAP_SCALE", "GAP_BATCH",
           "SORTED_BATCH", "SORTED_MOVED", "SORTED_SCALE",
           "check_ndcg_by_hand", "check_mrr_step", "check_gap_loss", "check_chance_loss",
           "check_sorted_batch_loss"]

NDCG_RANKING = ("d4", "d1", "d3", "d2", "d5")  # the exercise's ranking, best first
NDCG_RIGHT = frozenset({"d2", "d4"})          # its right articles


def _ndcg(ranking, right, k: int) -> float:
    dcg = sum(1 / math.log2(i + 1) for i, d in enumerate(ranking[:k], start=1) if d in right)
    ideal = sum(1 / math.log2(i + 1) for i in range(1, min(len(right), k) + 1))
    return dcg / ideal


def check_ndcg_by_hand(answer) -> bool:
    """Exercise: nDCG@5 of the ranking d4, d1, d3, d2, d5 when d2 and d4 are the right articles."""
    value = number_answer(answer, "Not answered yet. Fill in answer = the nDCG@5.")
    if value is None:
        return False
    truth = _ndcg(NDCG_RANKING, NDCG_RIGHT, 5)
    dcg = sum(1 / math.log2(i + 1) for i, d in enumerate(NDCG_RANKING, start=1) if d in NDCG_RIGHT)
    return grade_number(
        value, truth,
        "Right: the right articles sit at positions 1 and 4, worth 1/log2(2) + 1/log2(5); the best ranking puts "
        "them at 1 and 2, worth 1/log2(2) + 1/log2(3); nDCG is the first over the second.",
        {1.0: "Both right articles are in the top 5, but not at the top two places: nDCG is below 1 here.",
         dcg: "That is the DCG. Divide it by the DCG of the best possible ranking (both right articles on top).",
         _ndcg(NDCG_RANKING, NDCG_RIGHT, 3): "That is nDCG@3. At k = 5, position 4 is inside the cut-off and counts.",
         0.5: "Half of the right articles are not missing: both are in the top 5. Use the DCG formula."},
        "Not quite. Add 1/log2(i + 1) for each position i that holds a right article, then divide by the same "
        "sum for a ranking with both right articles on top.", tol=5e-3)


VAL_QUESTIONS = 36  # the fixture's validation questions (two products, six articles, three wordings)


def check_mrr_step(answer) -> bool:
    """Exercise: the change of validation MRR@5 when one of 36 questions' right article moves from rank 2 to 1."""
    value = number_answer(answer, "Not answered yet. Fill in answer = the change.")
    if value is None:
        return False
    truth = (1 - 1 / 2) / VAL_QUESTIONS
    return grade_number(
        value, truth,
        "Right: that question's reciprocal rank goes from 1/2 to 1, and MRR@5 is the mean over the 36 "
        "questions, so the mean moves by a 36th of one half.",
        {0.5: "That is the change for that one question. MRR@5 is a mean over all the validation questions.",
         1 / VAL_QUESTIONS: "Close, but the question's reciprocal rank does not go from 0 to 1: where did it start?",
         -truth: "The sign: moving up from rank 2 to rank 1 raises the reciprocal rank, so MRR@5 goes up."},
        "Not quite. Write the question's reciprocal rank before and after, then remember that MRR@5 averages "
        "over every validation question.", tol=1e-3)


GAP, GAP_SCALE, GAP_BATCH = 0.3, 5.0, 32  # own article 0.3 above each of the other 31, scale 5, B = 32


def check_gap_loss(answer) -> bool:
    """Exercise (slider): the loss at scale 5 of a batch of 32 whose every row scores its own article
    0.3 above each of the 31 others."""
    value = number_answer(answer, "Not answered yet. Fill in answer = the loss.")
    if value is None:
        return False
    truth = math.log(1 + (GAP_BATCH - 1) * math.exp(-GAP_SCALE * GAP))
    return grade_number(
        value, truth,
        "Right: every row gives its own article the share 1 / (1 + 31 e^(-5 x 0.3)), and the loss is minus the "
        "log of that share, the same for every row. A clear gap still leaves a large loss at a low scale: "
        "31 wrong articles each keep a share.",
        {math.log(1 + math.exp(-GAP_SCALE * GAP)): "That is a row with one wrong article. This row has 31 of them.",
         math.log(1 + (GAP_BATCH - 1) * math.exp(-20 * GAP)): "That is at scale 20. The question asks for scale 5.",
         math.log(1 + (GAP_BATCH - 1) * math.exp(-GAP)): "Multiply the cosine gap by the scale before the "
                                                          "exponential: the softmax reads scale x cosine.",
         1 / (1 + (GAP_BATCH - 1) * math.exp(-GAP_SCALE * GAP)): "That is the share of the own article; the loss "
                                                                 "is minus its natural log."},
        "Not quite. Write the row's softmax: the own article has e^(5c), each of the 31 others e^(5(c - 0.3)). "
        "Divide through by e^(5c), then take minus the log of the own article's share.", tol=5e-3)


def check_chance_loss(answer) -> bool:
    """Exercise: four accumulated batches of 16 pairs, a model that gives every question the same cosine with
    every article; the loss each question's row is computed with."""
    value = number_answer(answer, "Not answered yet. Fill in answer = the loss.",
                          "Give a number, not {answer!r}.")
    if value is None:
        return False
    right = math.log(16)
    if abs(value - right) <= 0.01:
        print("Right: each loss is still computed inside its own batch of 16, every candidate gets probability "
              "1/16, and the loss is minus the log of that. Accumulation adds gradients; it never makes a "
              "64-way question.")
        return True
    if abs(value - math.log(64)) <= 0.01:
        print("That would be one 64-way question. Accumulation adds the gradients of separate batches: how many "
              "candidates does each row's softmax see?")
    elif abs(value - 1 / 16) <= 0.01:
        print("That is the probability the softmax gives the right document; the loss is minus its log.")
    elif abs(value - math.log2(16)) <= 0.01:
        print("Cross-entropy uses the natural logarithm, not log base 2.")
    elif value <= 0:
        print("A cross-entropy loss is never negative: the right document's probability is at most 1.")
    else:
        print("Not quite. The scale does not matter when all scores are equal: what probability does each "
              "candidate of one batch get, and what is minus its log?")
    return False


SORTED_BATCH, SORTED_MOVED, SORTED_SCALE = 4, 3, 20.0  # break it: the sort moved 3 of the 4 articles


def _row_loss(own: float, others: list[float], scale: float) -> float:
    """Minus the log of the softmax share of ``own`` among ``own`` and ``others``, at ``scale``."""
    top = max([own, *others])
    return -(scale * (own - top)) + math.log(sum(math.exp(scale * (c - top)) for c in (own, *others)))


def check_sorted_batch_loss(answer: object) -> bool:
    """Break it: a perfect model (cosine 1 with its own article, 0 with every other) on a batch of four whose
    articles were sorted, moving three of them to another question's row; the batch's loss at scale 20."""
    value = number_answer(answer, fill("Not answered yet. Fill in answer = the loss."),
                          fill("Give a number, not {answer!r}."), refuse_bool=True)
    if value is None:
        return False
    others = [0.0] * (SORTED_BATCH - 1)
    moved = _row_loss(0.0, [1.0, *others[1:]], SORTED_SCALE)  # the row's target is a wrong article at 0
    kept = _row_loss(1.0, others, SORTED_SCALE)              # the one row the sort left in place
    truth = (SORTED_MOVED * moved + (SORTED_BATCH - SORTED_MOVED) * kept) / SORTED_BATCH
    return grade_number(
        value, truth,
        "Right: each moved row must pick an article at cosine 0 while its own sits at 1, a loss of about "
        "scale x 1 = 20; the row left in place costs almost nothing; the batch averages the four rows. The "
        "better the model, the larger the loss: training on this batch would unlearn it.",
        {moved: "That is one moved row. Average over all four rows, the one left in place included.",
         0.0: "A perfect model has loss 0 only when every row's target is its own article. The sort moved three.",
         math.log(SORTED_BATCH): "That is a model that cannot tell the articles apart. This one ranks them "
                                 "perfectly; the targets are what is wrong.",
         moved / SORTED_BATCH: "That counts one moved row. The sort moved three of the four."},
        "Not quite. For each row, its target is the article now in its column: at cosine 0 for a moved row, "
        "1 for the row left in place. Take minus the log of the target's share at scale 20, then average.",
        tol=0.01, wrap=True)
