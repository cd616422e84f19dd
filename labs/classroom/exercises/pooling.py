"""Answer checks of the pooling lesson.

Each check takes the reader's answer, prints "Right: ..." or a hint that says how
the answer is wrong (never the answer), and returns True or False.
"""

from __future__ import annotations

from labs.classroom.answers import grade_number, number_answer

__all__ = ["check_unmasked_mean", "check_padding_safe_mode"]


def check_unmasked_mean(answer: object) -> bool:
    """Tokens with first coordinates 2, 4, 6 plus one padding token (0), averaged WITHOUT the mask."""
    value = number_answer(answer, "Not answered yet: fill in a number, the first coordinate of the unmasked mean.",
                          "Give a number, not {answer!r}.")
    if value is None:
        return False
    return grade_number(
        value, 3.0, "Right: the padding zero joins the sum and the count, so the mean is pulled towards 0.",
        {4.0: "Not yet: that is the masked mean. Without the mask the padding token is counted too."},
        "Not yet: add all four first coordinates (the padding one is 0) and divide by four.", tol=1e-6)


def check_padding_safe_mode(answer: object) -> bool:
    """Which pooling mode gives the same vector with the mask off, in a right-padded batch?"""
    if answer is None:
        print("Not answered yet: fill in one of 'mean', 'cls', 'last'.")
        return False
    text = str(answer).strip().lower().replace("-", " ").replace("_", " ")
    if text in ("cls", "cls token", "first", "first token"):
        print("Right: with right padding position 0 is always a real token, so CLS never reads a pad.")
        return True
    if text in ("mean", "average"):
        print("Not yet: switch the mask off and watch the short text's row; the pads join the average.")
    elif text in ("last", "last token", "lasttoken"):
        print("Not yet: without the mask the last position of a short text is a padding token.")
    else:
        print("Answer with one of 'mean', 'cls', 'last'.")
    return False
