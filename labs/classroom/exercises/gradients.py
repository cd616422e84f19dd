"""Answer checks of the gradients lesson: a learning rate that lands in one step, a step on a bowl, a slope, and a
training loop that forgets to clear `.grad` (the lesson's break-it exercise).

Each check takes the reader's answer, prints "Right: ..." or a hint that says how
the answer is wrong (never the answer), and returns True or False.
"""

from __future__ import annotations

import math

from labs.classroom.answers import grade_number, number_answer, numbers_answer

__all__ = ["ONE_STEP_CURVE", "BOWL_START", "FORGOT_START", "FORGOT_LR", "FORGOT_STEPS", "forgot_zero_grad_path",
           "check_one_step_lr", "check_bowl_step", "check_two_card_slope", "check_no_zero_grad"]

#: the exercise's loss L(w) = ONE_STEP_CURVE * (w - 3)**2
ONE_STEP_CURVE = 5.0
#: the exercise's bowl L(w1, w2) = (w1 - 3)**2 + 4 * (w2 - 1)**2, one step from here at learning rate 0.1
BOWL_START = (1.0, 2.0)
BOWL_LR = 0.1
#: the two-card loss L(s) = -ln(e^s / (e^s + 1)), its slope asked at this score
TWO_CARD_SCORE = -1.0
#: the break-it loop: L(w) = (w - 3)**2 from w = 1 at learning rate 0.1, with .grad never cleared, for 3 steps
FORGOT_START, FORGOT_LR, FORGOT_STEPS = 1.0, 0.1, 3


def check_one_step_lr(answer: object) -> bool:
    """The learning rate that takes L(w) = 5 (w - 3)^2 to its minimum in one step, from any start."""
    value = number_answer(answer, "Not answered yet: fill in a learning rate.")
    if value is None:
        return False
    truth = 1 / (2 * ONE_STEP_CURVE)
    return grade_number(
        value, truth, "Right: the slope is 10 (w - 3), so the step lr * 10 (w - 3) covers the whole distance "
        "to 3 exactly when lr * 10 = 1.",
        {0.5: "Not yet: that lands in one step on (w - 3)^2, whose slope is 2 (w - 3). This loss is five "
              "times steeper, so the same learning rate jumps much further.",
         2 * truth: "Not yet: at that rate every step jumps to the mirror point on the other side of 3 "
                    "and back again; it never lands."},
        "Not yet: write the slope of 5 (w - 3)^2, then ask which learning rate makes the step "
        "lr * slope equal to the whole distance w - 3.", tol=2e-3)


def _two_numbers(answer: object) -> tuple[float, float] | None:
    return numbers_answer(answer, "Not answered yet: fill in answer = (w1, w2).",
                          "Answer with two numbers (w1, w2), got {answer!r}", length=2)  # type: ignore[return-value]


def check_bowl_step(answer: object) -> bool:
    """One gradient-descent step on L(w1, w2) = (w1 - 3)^2 + 4 (w2 - 1)^2 from (1, 2) at learning rate 0.1."""
    point = _two_numbers(answer)
    if point is None:
        return False
    w1, w2 = BOWL_START
    g1, g2 = 2 * (w1 - 3), 8 * (w2 - 1)
    truth = (w1 - BOWL_LR * g1, w2 - BOWL_LR * g2)
    if all(abs(a - b) < 1e-6 for a, b in zip(point, truth)):
        print("Right: the gradient at (1, 2) is (-4, 8); minus 0.1 times it moves w1 up by 0.4 and w2 "
              "down by 0.8.")
        return True
    uphill = (w1 + BOWL_LR * g1, w2 + BOWL_LR * g2)
    if all(abs(a - b) < 1e-6 for a, b in zip(point, uphill)):
        print("Not yet: that step went uphill. The gradient points where the loss grows; a training "
              "step subtracts it.")
    elif abs(point[0] - truth[0]) < 1e-6:
        print("Half right: w1 is right. For w2, differentiate 4 (w2 - 1)^2: the 4 stays in the slope.")
    elif abs(point[1] - truth[1]) < 1e-6:
        print("Half right: w2 is right. For w1, the slope of (w1 - 3)^2 at w1 = 1 is 2 (1 - 3).")
    else:
        print("Not yet: compute both slopes at (1, 2) first, then subtract 0.1 times each from its "
              "own coordinate.")
    return False


def check_two_card_slope(answer: object) -> bool:
    """dL/ds of the two-card loss L(s) = -ln(e^s / (e^s + 1)) at s = -1 (the right card 1 below the wrong one)."""
    value = number_answer(answer, "Not answered yet: fill in the slope dL/ds.")
    if value is None:
        return False
    share = math.exp(TWO_CARD_SCORE) / (math.exp(TWO_CARD_SCORE) + 1)
    truth = share - 1
    return grade_number(
        value, truth, "Right: the right card's share is e^-1 / (e^-1 + 1), about 0.27, and the slope is "
        "share - 1: steep, because the right card is losing.",
        {-truth: "Not yet: check the sign. Raising s raises the right card's share, so the loss falls: "
                 "the slope is negative.",
         share: "Not yet: that is the right card's share itself; the slope is share - 1.",
         -share: "Not yet: that is the slope at s = +1, where the right card leads by 1. Here it "
                 "trails by 1, so its share is smaller."},
        "Not yet: find the right card's share at s = -1, then use slope = share - 1.", tol=5e-3)


def forgot_zero_grad_path(steps: int, *, start: float = FORGOT_START, lr: float = FORGOT_LR,
                          clear: bool = False) -> list[float]:
    """Weights of plain SGD on (w - 3)^2, by hand: the start, then after each step; shape (steps + 1,).

    With ``clear=False`` the step uses the running sum of every slope so far, which is what `.grad`
    holds when a loop never calls ``zero_grad()``; with ``clear=True`` it is plain gradient descent.
    """
    w, held, path = float(start), 0.0, [float(start)]
    for _ in range(steps):
        slope = 2 * (w - 3)
        held = slope if clear else held + slope
        w -= lr * held
        path.append(w)
    return path


def check_no_zero_grad(answer: object) -> bool:
    """Break it: w after 3 SGD steps on (w - 3)^2 from w = 1 at learning rate 0.1 when .grad is never cleared."""
    value = number_answer(answer, "Not answered yet: fill in the weight w after three steps.")
    if value is None:
        return False
    forgot = forgot_zero_grad_path(FORGOT_STEPS)
    cleared = forgot_zero_grad_path(FORGOT_STEPS, clear=True)
    return grade_number(
        value, forgot[-1], "Right: .grad holds -4, then -4 - 3.2 = -7.2, then -7.2 - 1.76 = -8.96, so the "
        "weight runs 1 -> 1.4 -> 2.12 -> past 3: the old slopes keep pushing after the minimum.",
        {cleared[-1]: "Not yet: that is the loop that clears .grad every step. Without zero_grad(), each step "
                      "uses the sum of every slope so far.",
         forgot[2]: "Not yet: that is where w is after two steps; take one more.",
         forgot[1]: "Not yet: that is after the first step, where nothing has piled up yet. Take two more.",
         3.0: "Not yet: the sum of old slopes does not stop at the minimum. Work the three steps out."},
        "Not yet: step by step, add the new slope 2 (w - 3) to what .grad already holds, then move w by "
        "minus 0.1 times that sum.", tol=2e-3)
