"""Answer checks of the temperature lesson.

Each check takes the reader's answer, prints "Right: ..." or a hint that says how
the answer is wrong (never the answer), and returns True or False.
"""

from __future__ import annotations

import math

from labs.classroom.answers import fill, number_answer, say
from labs.lessons.infonce import positive_share

__all__ = ["check_halved_gap_tau", "check_batch_tau", "check_pull_ratio"]


def temperature_answer(answer: object) -> float | None:
    """The reader's answer as a temperature (a number above 0), or None after saying what is wrong."""
    value = number_answer(answer, fill("Not answered yet: fill in a temperature, e.g. answer = 0.5"),
                          fill("Hint: the answer is one number, got {answer!r}"), refuse_bool=True)
    if value is not None and value <= 0:
        say("Not a temperature: a temperature is a number above 0.")
        return None
    return value


def check_halved_gap_tau(answer: float | None) -> bool:
    """A 0.2 lead at tau = 0.05 earns some share; at which tau does a 0.1 lead earn the same share?"""
    value = temperature_answer(answer)
    if value is None:
        return False
    target = positive_share(0.8, [0.6] * 3, 0.05)
    share = positive_share(0.7, [0.6] * 3, value)
    if abs(value - 0.025) < 2e-4:
        say(f"Right: at tau = {value:g} the 0.1 lead earns {share:.1%}, the same share as before.")
        return True
    if value >= 0.05:
        say(f"Not yet: at tau = {value:g} the smaller lead earns {share:.1%}, less than {target:.1%}. "
              "A smaller lead needs a sharper (smaller) temperature.")
    elif share > target:
        say(f"Not yet: at tau = {value:g} the smaller lead earns {share:.1%}, more than {target:.1%}: "
              "too sharp. Look at what the formula does with the lead and tau together.")
    else:
        say(f"Not yet: at tau = {value:g} the smaller lead earns {share:.1%}, less than {target:.1%}. "
              "Look at what the formula does with the lead and tau together.")
    return False


def check_batch_tau(answer: float | None) -> bool:
    """The largest tau (3 decimals) at which a 0.2 lead over 31 wrong cards at 0.6 still earns >= 90%."""
    value = temperature_answer(answer)
    if value is None:
        return False
    share = positive_share(0.8, [0.6] * 31, value)
    if 0.0350 <= value <= 0.03552:
        say(f"Right: at tau = {value:g} the right card earns {share:.1%} of the softmax against 31 wrong cards.")
        return True
    if share < 0.9:
        three_cards = 0.2 / math.log(9 * 3)  # the same question with the slider's three wrong cards
        extra = (" That is about where three wrong cards would reach 90%; here there are 31."
                 if abs(value - three_cards) < 0.002 else " Go sharper (smaller).")
        say(f"Not yet: at tau = {value:g} the right card earns {share:.1%}, under 90%.{extra}")
    else:
        say(f"Not yet: at tau = {value:g} the right card earns {share:.1%}, so a slightly warmer tau "
              "still reaches 90%. Find the largest one.")
    return False


def check_pull_ratio(answer: float | None) -> bool:
    """At tau = 0.01, how many times harder is a row trailing its one wrong card by 0.05 pulled than a
    row leading it by 0.05?"""
    value = number_answer(answer, fill("Not answered yet: fill in a number, how many times harder"),
                          fill("Hint: the answer is one number, got {answer!r}"), refuse_bool=True)
    if value is None:
        return False
    truth = math.exp(5)  # missing shares e^5 / (1 + e^5) behind and 1 / (1 + e^5) ahead; 1/tau cancels
    if abs(value - truth) < 0.03 * truth:
        say(f"Right: the 1/tau cancels, and the missing shares differ by a factor e^5, about {value:.0f}.")
        return True
    if abs(value - 100) < 3 or abs(value - 1) < 0.05:
        say("Not yet: 1/tau = 100 multiplies both rows alike, so it cancels in the ratio. "
              "Compare how much of the share each right card is still missing.")
    elif abs(value - math.exp(10)) < 0.03 * math.exp(10):
        say("Not yet: the exponent is the gap divided by tau, and each row's gap is 0.05, not 0.1.")
    else:
        say("Not yet: the pull is (1 - share) / tau. Work out each row's share with one wrong card, "
              "then divide the two pulls.")
    return False
