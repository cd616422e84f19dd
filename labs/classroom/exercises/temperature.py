"""Answer checks of the temperature lesson.

Each check takes the reader's answer, prints "Right: ..." or a hint that says how
the answer is wrong (never the answer), and returns True or False.
"""

from __future__ import annotations

import math

from labs.classroom.answers import fill, number_answer, say
from labs.lessons.infonce import positive_share

__all__ = ["check_halved_gap_tau", "check_batch_tau", "check_pull_ratio", "scale_bug_loss", "check_scale_bug_loss"]


def temperature_answer(answer: object) -> float | None:
    """The reader's answer as a temperature (a number above 0), or None after saying what is wrong."""
    value = number_answer(answer, fill("Not answered yet: fill in a temperature, e.g. answer = 0.5"),
                          fill("Hint: the answer is one number, got {answer!r}"), refuse_bool=True)
    if value is not None and value <= 0:
        say("Not a temperature: a temperature is a number above 0.")
        return None
    if value is not None:
        try:
            positive_share(0.8, [0.6] * 31, value)  # the largest score either check divides by tau
        except ValueError:
            say(f"Not a temperature these checks can use: at tau = {value:g} a score divided by tau is "
                "beyond the largest number a computer holds. Try a temperature such as 0.05.")
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


def scale_bug_loss(wrong_cards: int = 31, lead: float = 0.2, tau: float = 20.0) -> float:
    """The row's loss, -ln share, when the right card leads ``wrong_cards`` equal wrong cards by ``lead``."""
    return math.log1p(wrong_cards * math.exp(-lead / tau))


def check_scale_bug_loss(answer: object) -> bool:
    """Break it: ``scale=0.05`` (so tau = 20) on a batch of 32 whose right card leads all 31 wrong cards by
    0.2. The row's loss, to three decimals?"""
    value = number_answer(answer, fill("Not answered yet: fill in the row's loss, a number."),
                          fill("Hint: the answer is one number, got {answer!r}"), refuse_bool=True)
    if value is None:
        return False
    truth = scale_bug_loss()
    if abs(value - truth) < 1.5e-3:
        say(f"Right: {value:.3f}, a hair below ln 32 = {math.log(32):.3f}, the loss of a blind guess among 32 "
            "cards. At tau = 20 a lead of 0.2 is worth almost nothing.")
        return True
    if abs(value - math.log(32)) < 1.5e-3:
        say("Close: ln 32 is the loss of a guess that scores all 32 cards alike. The lead still counts a "
            "little at tau = 20: put it in the share.")
    elif abs(value - scale_bug_loss(tau=0.05)) < 1.5e-3:
        say("Not yet: that is the loss at the intended tau = 0.05. The bug passes scale = 0.05, and the "
            "library divides the scores by 1 / scale.")
    elif abs(value - scale_bug_loss(wrong_cards=3)) < 1.5e-3:
        say("Not yet: that is the slider's row with three wrong cards. A batch of 32 has 31.")
    else:
        say("Not yet: with every wrong card level, the share is 1 / (1 + 31 e^(-lead / tau)); the loss is "
            "minus its log.")
    return False
