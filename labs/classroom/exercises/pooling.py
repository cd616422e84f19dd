"""Answer checks of the pooling lesson: a mean that forgot its mask, where CLS pooling reads in a left-padded batch, and
the shape a mean over the wrong axis gives (the lesson's break-it exercise).

Each check takes the reader's answer, prints "Right: ..." or a hint that says how
the answer is wrong (never the answer), and returns True or False.
"""

from __future__ import annotations

from labs.classroom.answers import grade_number, number_answer, numbers_answer, shown

__all__ = ["TOY_TOKENS", "TOY_PAD_ROW", "TOY_PADS", "LEFT_BATCH_LENGTHS", "LESSON_GRID", "check_unmasked_mean",
           "check_left_padded_cls", "check_wrong_axis"]

#: the lesson's toy: three real tokens' vectors, and the vector the transformer gave each padding position
TOY_TOKENS = ((2.0, 1.0), (4.0, 3.0), (6.0, 2.0))
TOY_PAD_ROW = (-2.0, 2.0)
TOY_PADS = 2
#: token counts ([CLS] and [SEP] included) of a batch padded on the left to the longest
LEFT_BATCH_LENGTHS = (9, 6, 4)
#: the shape of the lesson's token grid: 3 texts, 9 token positions (padding included), 384 numbers per token
LESSON_GRID = (3, 9, 384)


def check_unmasked_mean(answer: object) -> bool:
    """Exercise: first coordinate of the mean of the toy's three tokens plus two padding rows (-2, 2), mask forgotten."""
    value = number_answer(answer, "Not answered yet: fill in a number.",
                          "Give a number, not {answer!r}.")
    if value is None:
        return False
    real = [t[0] for t in TOY_TOKENS]
    pads = [TOY_PAD_ROW[0]] * TOY_PADS
    truth = sum(real + pads) / (len(real) + len(pads))
    return grade_number(
        value, truth, "Right: the padding rows join the sum and the count: (2 + 4 + 6 - 2 - 2) / 5.",
        {sum(real) / len(real): "Not yet: that is the masked mean. Without the mask the padding rows are "
                                "averaged in too.",
         sum(real) / (len(real) + len(pads)): "Close: you counted the padding positions, but as zeros. The "
                                              "transformer's padding rows are not zero here.",
         sum(real + pads[:1]) / (len(real) + 1): "Close: there are two padding rows, not one."},
        "Not yet: add the first coordinates of all five rows (the three tokens and both padding rows) and "
        "divide by how many rows there are.", tol=1e-6)


def check_left_padded_cls(answer: object) -> bool:
    """Exercise: in a left-padded batch of texts with 9, 6 and 4 tokens, the position (from 0) cls_pool reads per row."""
    given = numbers_answer(answer, "Not answered yet: fill in answer = (a, b, c).",
                           "Answer with three whole numbers (a, b, c), got {answer!r}", whole=True)
    if given is None:
        return False
    longest = max(LEFT_BATCH_LENGTHS)
    truth = tuple(longest - n for n in LEFT_BATCH_LENGTHS)
    if given == truth:
        print("Right: with left padding each text starts after its padding, so its [CLS] sits at position "
              "(longest length - its length).")
        return True
    if len(given) != len(LEFT_BATCH_LENGTHS):
        print("Give one position per text: three numbers.")
    elif given == (0,) * len(given):
        print("Not yet: position 0 holds [CLS] only for the longest text. In a left-padded row the padding "
              "comes first.")
    elif given == tuple(n - 1 for n in LEFT_BATCH_LENGTHS):
        print("Not yet: those are the last real tokens of a right-padded batch. Here the padding is on "
              "the left, and CLS pooling wants the first real token.")
    elif given == tuple(t + 1 for t in truth):
        print("Almost: count positions from 0, as Python does.")
    else:
        print("Not yet: for each text, count how many padding tokens come before it; its [CLS] is the "
              "first position after them.")
    return False


def _shape(answer: object) -> tuple[int, ...] | None:
    if isinstance(answer, int) and not isinstance(answer, bool):
        answer = (answer,)
    given = numbers_answer(answer, "Not answered yet: fill in answer = a shape, such as (2, 5).",
                           "Answer with a shape: a tuple of whole numbers such as (2, 5), got {answer!r}",
                           whole=True)
    if given == ():
        print(f"Answer with a shape: a tuple of whole numbers such as (2, 5), got {shown(answer)}")
    return tuple(int(v) for v in given) if given else None


def check_wrong_axis(answer: object) -> bool:
    """Break it: the shape of the lesson's (3, 9, 384) grid times its mask, summed over dim=2 (the wrong axis)."""
    given = _shape(answer)
    if given is None:
        return False
    texts, tokens, dims = LESSON_GRID
    truth = (texts, tokens)
    if given == truth:
        print("Right: summing over dim=2 adds up each token's numbers, so one number per token is left: "
              "(texts, tokens). The division by the mask's (texts, 1) sums still broadcasts, so nothing "
              "complains.")
        return True
    hints = {
        (texts, dims): "Not yet: that is the shape of the right pooling, which removes the token axis (dim=1). "
                       "The bug removes the other one.",
        (tokens, dims): "Not yet: that removed the text axis (dim=0). Count the axes from 0: texts, tokens, "
                        "numbers.",
        LESSON_GRID: "Not yet: a sum over an axis removes that axis (unless keepdim=True).",
        (texts, tokens, 1): "Close, but a plain sum drops the axis it adds up; only keepdim=True keeps it "
                            "as size 1.",
        (texts,): "Not yet: the sum runs over one axis only; the other two stay.",
        (tokens, texts): "Almost: the axes that stay keep their order.",
    }
    print(hints.get(given, "Not yet: write the grid's shape (texts, tokens, numbers) and cross out the axis "
                           "the sum runs over, dim=2."))
    return False
