"""The grading helpers every exercise check uses: read the reader's answer, then say right or how it is wrong.

- `number_answer`, `word_answer`: the first step of every check. An answer not given
  yet, or not a number (not one of the words), prints the check's own message and
  gives None.
- `grade_number` then prints "Right: ...", the hint for a known wrong number, or a
  general hint. A check never prints the answer itself.
- `say`, `fill`: a check's message in lines of at most `PHONE_WIDTH` characters, so it reads
  whole in a phone's output box (``grade_number(..., wrap=True)`` wraps its messages the same way).
"""

from __future__ import annotations

import textwrap

__all__ = ["ONE_NUMBER", "PHONE_WIDTH", "fill", "say", "number_answer", "word_answer", "grade_number"]

PHONE_WIDTH = 46  # monospace characters a phone's output box shows


def fill(text: str) -> str:
    """``text`` in lines of at most `PHONE_WIDTH` characters."""
    return textwrap.fill(text, PHONE_WIDTH)


def say(text: str) -> None:
    """Print ``text`` in lines of at most `PHONE_WIDTH` characters."""
    print(fill(text))


ONE_NUMBER = "Hint: the answer is one number, got {answer!r}"  # the usual `number_answer` hint


def number_answer(answer: object, not_answered: str, hint: str = ONE_NUMBER, *,
                  refuse_bool: bool = False) -> float | None:
    """``float(answer)``, or None after printing why there is no number to check.

    None prints ``not_answered``; an answer ``float`` refuses (or a bool, with
    ``refuse_bool``) prints ``hint``, where ``{answer!r}`` stands for the answer.
    """
    if answer is None:
        print(not_answered)
        return None
    if not (refuse_bool and isinstance(answer, bool)):
        try:
            return float(answer)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            pass
    print(hint.format(answer=answer))
    return None


def word_answer(answer: object, words: tuple[str, ...], not_answered: str, hint: str) -> str | None:
    """``answer`` stripped and lower-cased if it is one of ``words``, or None after printing why not.

    None prints ``not_answered``; another word prints ``hint``, where ``{answer!r}`` stands for the answer.
    """
    if answer is None:
        print(not_answered)
        return None
    word = str(answer).strip().lower()
    if word not in words:
        print(hint.format(answer=answer))
        return None
    return word


def grade_number(value: float, truth: float, right: str, misses: dict[float, str], otherwise: str, *,
                 tol: float, wrap: bool = False) -> bool:
    """Print ``right`` and give True if ``value`` is within ``tol`` of ``truth``; else give False after printing
    the hint of the first known wrong number in ``misses`` within ``tol`` of it, or ``otherwise``. With
    ``wrap``, every message is printed in lines of at most `PHONE_WIDTH` characters."""
    show = say if wrap else print
    if abs(value - truth) < tol:
        show(right)
        return True
    show(next((hint for wrong, hint in misses.items() if abs(value - wrong) < tol), otherwise))
    return False
