"""Answer checks of the lesson beyond one vector: short vectors, cross-encoders, rerank.

Each check takes the reader's answer, prints "Right: ..." or a hint that says how
the answer is wrong (never the answer), and returns True or False.
"""

from __future__ import annotations

from labs.classroom.answers import grade_number, number_answer

__all__ = ["check_short_vector_bytes", "check_cross_encoder_reason", "PARAPHRASE_RANK", "check_smallest_shortlist", "check_rerank_ceiling"]


def check_cross_encoder_reason(answer: object) -> bool:
    """Why can a cross-encoder separate 'must' from 'must not' when a bi-encoder cannot? Pick a letter."""
    if answer is None:
        print("Not answered yet: fill in one letter, 'a', 'b', 'c' or 'd'.")
        return False
    text = str(answer).strip().lower().rstrip(").")
    if text == "b":
        print("Right: it reads question and passage in one input, so attention links 'have to' "
              "with 'must not'.")
        return True
    hints = {
        "a": "Not yet: both models here start from the same 384-dimensional MiniLM.",
        "c": "Not yet: the bi-encoder was trained on far more pairs than our cross-encoder.",
        "d": "Not yet: the cross-encoder gives one score per pair; it has no vector to normalize.",
    }
    print(hints.get(text, "Answer with one letter: 'a', 'b', 'c' or 'd'."))
    return False


def check_rerank_ceiling(answer: object) -> bool:
    """A shortlist of 20 holds the right passage for 70 of 100 questions: the best Recall@1 after reranking?"""
    value = number_answer(answer, "Not answered yet: fill in a number between 0 and 1.",
                          "Give a number between 0 and 1, not {answer!r}.")
    if value is None:
        return False
    if value > 1:
        value /= 100  # a percentage
    if abs(value - 0.7) < 1e-6:
        print("Right: a reranker only reorders the shortlist; the 30 it never saw stay missed.")
        return True
    if value > 0.7:
        print("Not yet: the reranker sees only the 20 shortlisted passages. Can it place a "
              "passage it never received?")
    else:
        print("Not yet: a perfect reranker puts the right passage first whenever it is in the "
              "shortlist. How often is it there?")
    return False


#: The head-protection paraphrase's rank among `collection()` for the first helmet question,
#: by all-MiniLM-L6-v2's cosine (tests/test_rerank.py recomputes it; the cosines around it
#: are 0.1 apart, so it holds on any CPU).
PARAPHRASE_RANK = 9


def check_smallest_shortlist(answer: object) -> bool:
    """The smallest shortlist size k at which the paraphrase can reach the reranked list."""
    hint = "Give a whole number, not {answer!r}."
    value = number_answer(answer, "Not answered yet: fill in a whole number, a shortlist size k.", hint)
    if value is None:
        return False
    if value != int(value):
        print(hint.format(answer=answer))
        return False
    if int(value) == PARAPHRASE_RANK:
        print("Right: below that size the retriever never hands the paraphrase over, and the "
              "reranker cannot score what it does not see.")
        return True
    if value < PARAPHRASE_RANK:
        print("Not yet: at that size, is the paraphrase in the bi-encoder's shortlist at all? "
              "Look at the line that says whether it was shortlisted.")
    else:
        print("Not yet: it reaches the list earlier. Move the slider down one step at a time.")
    return False


def check_short_vector_bytes(answer: object) -> bool:
    """Bytes of one float32 vector cut to its first 64 numbers."""
    value = number_answer(answer, "Not answered yet: fill in a whole number of bytes.",
                          "Give a number of bytes, not {answer!r}.")
    if value is None:
        return False
    return grade_number(
        value, 256, "Right: 64 numbers x 4 bytes. A sixth of the full vector's size.",
        {64: "Not yet: that is the count of numbers; each float32 number takes 4 bytes."},
        "Not yet: multiply the numbers kept by the bytes of one float32 number.", tol=1e-9)
