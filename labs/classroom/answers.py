"""The grading helpers every exercise check uses: read the reader's answer, then say right or how it is wrong.

A check answers any Python value with "Right: ...", a hint, or "Not answered yet ... fill in"
and never raises: the readers below are where a check meets the reader's value, and each one
turns whatever it is given into what the check needs, or prints why it cannot and gives None.

- `number_answer`: one real, finite number: an int or float, a numeric string, a NumPy or
  torch scalar, a 0-d array or tensor (detached first), a Fraction or Decimal. Not a complex
  number, a container, NaN or an infinity (nor a bool, with ``refuse_bool``).
- `fraction_answer`: a number that is a fraction, read as a percentage above 1 (63 -> 0.63).
- `numbers_answer`: a tuple, list, 1-d array or tensor of such numbers, as a tuple of floats.
- `word_answer`: one of the given words.
- `function_answer`, `call_answer`, `array_answer`: a function the reader wrote: given and
  callable; its result for some arguments, or the error it raised in one line; a result as a
  NumPy array of a given shape.
- `grade_number` then prints "Right: ...", the hint for a known wrong number, or a
  general hint. A check never prints the answer itself.
- `shown`: a value as a short line of text, whatever its ``repr`` does; a hint's ``{answer!r}``
  is shown so.
- `say`, `fill`: a check's message in lines of at most `PHONE_WIDTH` characters, so it reads
  whole in a phone's output box (``grade_number(..., wrap=True)`` wraps its messages the same way).
"""

from __future__ import annotations

import itertools
import math
import textwrap
import warnings
from collections.abc import Callable, Mapping

__all__ = ["ONE_NUMBER", "PHONE_WIDTH", "fill", "say", "shown", "number_answer", "fraction_answer",
           "numbers_answer", "word_answer", "function_answer", "call_answer", "array_answer", "grade_number"]

PHONE_WIDTH = 46  # monospace characters a phone's output box shows
SHOWN_WIDTH = 60  # the longest a reader's value is shown in a message
MANY = 64  # the most numbers a tuple answer is read to


def fill(text: str) -> str:
    """``text`` in lines of at most `PHONE_WIDTH` characters."""
    return textwrap.fill(text, PHONE_WIDTH)


def say(text: str) -> None:
    """Print ``text`` in lines of at most `PHONE_WIDTH` characters."""
    print(fill(text))


def shown(value: object) -> str:
    """``repr(value)`` on one line, cut to `SHOWN_WIDTH` characters; a value whose repr fails is named by its type."""
    try:
        text = " ".join(repr(value).split())
    except Exception:  # the reader's object: its __repr__ may raise anything
        return f"<a {type(value).__name__} that cannot be shown>"
    return text if len(text) <= SHOWN_WIDTH else text[:SHOWN_WIDTH - 3] + "..."


class _Shown:
    """A reader's value in a hint template: ``{answer!r}`` and ``{answer}`` both give `shown`."""

    def __init__(self, value: object) -> None:
        self.text = shown(value)

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__


def _hint(template: str, answer: object) -> str:
    return template.format(answer=_Shown(answer))


def _torch_tensor(value: object) -> bool:
    return type(value).__module__.startswith("torch") and callable(getattr(value, "detach", None))


def _real(value: object, *, refuse_bool: bool) -> float | None:
    """``value`` as a finite float, or None: no complex, no container, nothing that warns on the way."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a conversion that warns (complex to real, ...) is refused
            if _torch_tensor(value):
                if value.is_complex():
                    return None
                value = value.detach()
            if isinstance(value, bool) or str(getattr(value, "dtype", "")) in ("bool", "torch.bool"):
                if refuse_bool:
                    return None
            if isinstance(value, complex) or getattr(value, "ndim", 0) != 0 \
                    or getattr(getattr(value, "dtype", None), "kind", "") == "c":
                return None
            number = float(value)  # type: ignore[arg-type]
    except Exception:  # the reader's value: its __float__ may raise anything
        return None
    return number if type(number) is float and math.isfinite(number) else None


ONE_NUMBER = "Hint: the answer is one number, got {answer!r}"  # the usual `number_answer` hint


def number_answer(answer: object, not_answered: str, hint: str = ONE_NUMBER, *,
                  refuse_bool: bool = False) -> float | None:
    """``answer`` as one finite float, or None after printing why there is no number to check.

    None prints ``not_answered``; anything else that is not one real, finite number (or a
    bool, with ``refuse_bool``) prints ``hint``, where ``{answer!r}`` stands for the answer
    (`shown`).
    """
    if answer is None:
        print(not_answered)
        return None
    value = _real(answer, refuse_bool=refuse_bool)
    if value is None:
        print(_hint(hint, answer))
    return value


def fraction_answer(answer: object, not_answered: str, hint: str = ONE_NUMBER, *,
                    refuse_bool: bool = False) -> float | None:
    """`number_answer`, read as a fraction: a number above 1 is a percentage (63 -> 0.63)."""
    value = number_answer(answer, not_answered, hint, refuse_bool=refuse_bool)
    if value is not None and value > 1:
        value /= 100  # a percentage
    return value


def numbers_answer(answer: object, not_answered: str, hint: str, *, length: int | None = None,
                   whole: bool = False, wrap: bool = False) -> tuple[float, ...] | None:
    """``answer`` as a tuple of finite floats (a tuple, list, 1-d array or tensor of numbers,
    not a bool among them), or None after printing why not.

    None prints ``not_answered``; anything else prints ``hint`` (``{answer!r}`` stands for the
    answer): text, a mapping or a set, a number alone, more than `MANY` items, an item that is
    not a real, finite number; with ``length``, another count; with ``whole``, a fraction.
    With ``wrap`` both messages are printed in lines of `PHONE_WIDTH`.
    """
    show = say if wrap else print
    if answer is None:
        show(not_answered)
        return None
    numbers: tuple[float | None, ...] | None = None
    if not isinstance(answer, (str, bytes, bytearray, Mapping, set, frozenset)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                if _torch_tensor(answer):
                    answer_items = answer.detach()
                else:
                    answer_items = answer
                numbers = tuple(_real(v, refuse_bool=True)
                                for v in itertools.islice(iter(answer_items), MANY + 1))  # type: ignore[call-overload]
        except Exception:  # not iterable, or its iteration raised
            numbers = None
    if (numbers is None or len(numbers) > MANY or any(v is None for v in numbers)
            or (length is not None and len(numbers) != length)
            or (whole and not all(float(v).is_integer() for v in numbers))):  # type: ignore[arg-type]
        show(_hint(hint, answer))
        return None
    return numbers  # type: ignore[return-value]


def word_answer(answer: object, words: tuple[str, ...], not_answered: str, hint: str) -> str | None:
    """``answer`` stripped and lower-cased if it is one of ``words``, or None after printing why not.

    None prints ``not_answered``; anything else prints ``hint``, where ``{answer!r}`` stands for the answer.
    """
    if answer is None:
        print(not_answered)
        return None
    word = answer.strip().lower() if isinstance(answer, str) else None
    if word not in words:
        print(_hint(hint, answer))
        return None
    return word


def function_answer(fn: object, name: str) -> bool:
    """Whether ``fn`` is a function to check; if not, say what to do (``name``: the check's own, e.g. ``mask``)."""
    if fn is None:
        say(f"Not answered yet: fill in your {name} function and run the cell again.")
        return False
    if not callable(fn):
        say(f"Pass the function itself, e.g. check_{name}(my_{name}), not a {type(fn).__name__}.")
        return False
    return True


def call_answer(fn: Callable, *args: object) -> tuple[object, str | None]:
    """``(fn(*args), None)``, or ``(None, "TypeName: message")`` (one line) if the reader's function raised."""
    try:
        return fn(*args), None
    except (Exception, SystemExit) as err:  # the reader's code (exit() too): report it, do not crash the notebook
        try:
            message = " ".join(str(err).split())
        except Exception:
            message = ""
        if len(message) > 3 * SHOWN_WIDTH:  # a whole sentence of the reader's own error, not a wall
            message = message[:3 * SHOWN_WIDTH - 3] + "..."
        return None, f"{type(err).__name__}: {message}" if message else type(err).__name__


def array_answer(value: object, shape: tuple[int, ...], *, bools: bool = False):
    """``value`` as a NumPy array of ``shape`` (float64, finite; with ``bools``, a True/False
    table, numbers read as nonzero), or a short description of what it is instead (a str):
    ``"a table of shape (2,)"``, ``"a str"``, ``"numbers that are not finite"``."""
    import numpy as np

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            array = np.asarray(value.detach().cpu() if _torch_tensor(value) else value)  # type: ignore[attr-defined]
            if array.dtype.kind not in "biuf":
                return f"a {type(value).__name__}" if array.ndim == 0 else "a table of things that are not numbers"
            if array.shape != shape:
                return f"a table of shape {array.shape}"
            if bools:
                return array.astype(bool)
            array = array.astype(np.float64)
            if not np.isfinite(array).all():
                return "numbers that are not finite"
            return array
    except Exception:  # the reader's value: its __array__ or __len__ may raise anything
        return f"a {type(value).__name__} that is not a table of numbers"


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
