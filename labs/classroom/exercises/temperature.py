"""Answer checks of the temperature lesson.

Each check takes the reader's answer, prints "Right: ..." or a hint that says how
the answer is wrong (never the answer), and returns True or False.
"""

from __future__ import annotations

from labs.classroom.answers import number_answer, word_answer
from labs.lessons.infonce import positive_share
from labs.lessons.inputs import valid_tau

__all__ = ["check_sharper_tau", "check_share_threshold", "check_scale_for_tau"]


def check_sharper_tau(answer: float | None) -> bool:
    """Exercise: the largest tau (to 2 decimals) at which a 0.2 cosine lead over three negatives earns >= 90%."""
    if answer is None:
        print("Not answered yet: fill in a temperature, e.g. answer = 0.5")
        return False
    try:
        tau = valid_tau(answer, "answer")
    except ValueError as err:
        print(f"Not a temperature: {err}")
        return False
    share = positive_share(0.8, [0.6] * 3, tau)
    share_up = positive_share(0.8, [0.6] * 3, tau + 0.01)
    if share < 0.9:
        print(f"Not yet: at tau = {tau:g} the right card earns {share:.1%}, under 90%. Go sharper (smaller).")
        return False
    if share_up >= 0.9:
        print(f"Close: {tau:g} works, but a slightly warmer tau still reaches 90%. Find the largest one.")
        return False
    print(f"Right: at tau = {tau:g} the right card earns {share:.1%}; one step warmer it drops under 90%.")
    return True


def check_share_threshold(answer: str | None) -> bool:
    """Exercise: when the cosine gap shrinks, must tau go up or down to keep the same share?"""
    word = word_answer(answer, ("up", "down"), 'Not answered yet: fill in answer = "up" or answer = "down"',
                       'Answer with "up" or "down", got {answer!r}')
    if word is None:
        return False
    if word == "up":
        print("Not quite: try it on the slider. Halve the gap and watch what a warmer tau does to the share.")
        return False
    print("Right: the share depends on gap / tau, so a smaller gap needs a smaller tau for the same share.")
    return True


def check_scale_for_tau(answer: float | None) -> bool:
    """Exercise: CLIP starts at tau = 0.07; what `scale` gives MultipleNegativesRankingLoss that temperature?"""
    value = number_answer(answer, "Not answered yet: fill in answer = the scale, a number (1 decimal is enough)",
                          refuse_bool=True)
    if value is None:
        return False
    if abs(value - 1 / 0.07) < 0.05:
        print(f"Right: scale = 1 / tau, so tau = 0.07 is a scale of {value:.1f}.")
        return True
    if abs(value - 0.07) < 1e-9:
        print("Not quite: that is the temperature itself; the library takes its reciprocal.")
    elif abs(value - 0.07 * 20) < 1e-6 or abs(value - 20) < 1e-9:
        print("Hint: 20 is the default scale (tau = 0.05). Which scale is tau = 0.07?")
    else:
        print("Hint: scale and tau are reciprocals: scale = 1 / tau.")
    return False
