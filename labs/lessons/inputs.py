"""The lesson functions' argument checks, written once: a bad argument is refused with its name.

Every public function of `labs.lessons` checks what it is given at its own edge
and trusts it after that. These are the shared checks:

- `real_number`: one real number (not a bool, a string, a complex number, nor a tensor that
  requires grad: its gradient would be lost without a word);
- `valid_tau`: a temperature is a finite number > 0;
- `valid_margin`: a margin is a finite number (negative is allowed);
- `real_array`: a table of real numbers as float64: not ragged, not complex, not booleans or
  text, and not a torch tensor that requires grad (these functions compute with NumPy, where
  autograd cannot follow: the message says to detach it, or names the torch form to train with);
- `finite_array`: `real_array`, and no NaN or infinite entry;
- `scaled_scores`: a (B, M) similarity table with M >= B, finite, divided by tau
  without overflowing, as float64;
- `whole_number`: one integer (Python's or NumPy's, not a bool, not a float such as 2.0);
- `whole_array`: a table of integers (labels, digits) as int64: not booleans, floats (even 3.0),
  complex numbers, text, ragged nesting nor a masked array;
- `real_tensor`: a table of real numbers for a function that computes with torch: a floating-point
  tensor as it is (dtype, device and autograd graph kept), anything else as `real_array` reads it;
- `one_bool`: True or False (not a string, not a number);
- `text_list`: a list of strings, not one string (which would be read letter by letter).

Booleans and strings are never numbers here, even where Python or NumPy would convert them.
A NumPy masked array is refused: NumPy would hand its masked entries over as numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["real_number", "valid_tau", "valid_margin", "real_array", "finite_array", "scaled_scores",
           "whole_number", "whole_array", "real_tensor", "one_bool", "text_list"]


def _is_tensor(value) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "requires_grad")


def real_number(value, name: str, what: str) -> float:
    """``float(value)``, or ValueError "{name} must be {what}": bools, strings, complex numbers and
    tensors that are not one real number are refused (NumPy's and torch's too)."""
    if _is_tensor(value):
        if value.numel() != 1 or value.dtype.is_complex or value.dtype == _torch_bool():
            raise ValueError(f"{name} must be {what}, got a tensor of dtype {value.dtype} and shape "
                             f"{tuple(value.shape)}")
        if value.requires_grad:
            raise ValueError(f"{name} is a tensor that requires grad, but only its value is used here: no "
                             f"gradient would reach it. Pass float({name}) if a number is meant")
        value = value.cpu().item()
    if isinstance(value, (bool, np.bool_, str, bytes, complex, np.complexfloating)):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {what}, got {value!r:.60}") from None
    except OverflowError:  # an int beyond float64's range (about 1.8e308)
        raise ValueError(f"{name} must be {what}, got {value!r:.20}..., too large for a float") from None


def _torch_bool():
    import torch

    return torch.bool


def _torch_bfloat16():
    import torch

    return torch.bfloat16


def valid_tau(tau: float, name: str = "tau") -> float:
    """Return ``tau`` as a float, or raise ValueError if it is not a finite number > 0."""
    value = real_number(tau, name, "a number > 0")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {tau!r}")
    return value


def valid_margin(margin: float) -> float:
    """Return ``margin`` as a float, or raise ValueError if it is not a finite number."""
    value = real_number(margin, "margin", "a finite number")
    if not math.isfinite(value):
        raise ValueError(f"margin must be a finite number, got {margin!r}")
    return value


_INFONCE_TWINS = "the _torch form (info_nce_torch, info_nce_masked_torch)"


def real_array(value, name: str, *, train_with: str | None = _INFONCE_TWINS) -> np.ndarray:
    """``value`` as a float64 NumPy array, or ValueError naming ``name``.

    Refused: ragged nesting (rows of different lengths), complex numbers, booleans, text or other
    objects, a NumPy masked array, and a torch tensor that requires grad (NumPy cannot carry its
    gradient: detach it, or use ``train_with``, the torch form that autograd can follow, which the
    message names when given). Other tensors are read as their values (bfloat16 as float32).
    """
    if _is_tensor(value):
        if value.requires_grad:
            raise ValueError(f"{name} is a torch tensor that requires grad: this function computes with NumPy, "
                             f"where autograd cannot follow. Pass {name}.detach() for the value"
                             + (f", or use {train_with} to train through it" if train_with else ""))
        if value.dtype.is_complex:
            raise ValueError(f"{name} holds complex numbers; give real numbers")
        if value.dtype == _torch_bfloat16():  # NumPy has no bfloat16: read it as float32, exactly
            value = value.float()
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ma.MaskedArray):
        raise ValueError(f"{name} is a masked array: NumPy would use its masked entries as numbers. Pass only "
                         f"the entries to keep (or {name}.filled(value) to say what a masked entry counts as)")
    try:
        array = np.asarray(value)
    except ValueError:
        raise ValueError(f"{name} is ragged: its rows have different lengths") from None
    except (TypeError, RuntimeError) as err:  # e.g. a list of tensors that require grad
        raise ValueError(f"{name} cannot be read as a table of real numbers: {' '.join(str(err).split())}") from None
    if array.dtype.kind == "O":  # e.g. Fractions or numbers mixed with None: real numbers only
        numbers = []
        for x in array.ravel():
            try:
                numbers.append(real_number(x, name, "real numbers"))
            except ValueError:
                too_large = isinstance(x, int) and not isinstance(x, bool)  # other ints convert
                raise ValueError(f"{name} must hold real numbers, got {x!r:.40}"
                                 + (" (too large for a float)" if too_large else "")) from None
        array = np.asarray(numbers, dtype=np.float64).reshape(array.shape)
    if array.dtype.kind == "c":
        raise ValueError(f"{name} holds complex numbers; give real numbers")
    if array.dtype.kind not in "iuf":
        what = {"b": "booleans", "U": "text", "S": "bytes"}.get(array.dtype.kind, f"dtype {array.dtype}")
        raise ValueError(f"{name} must hold real numbers, got {what}")
    return array.astype(np.float64)


def finite_array(value, name: str, *, train_with: str | None = None) -> np.ndarray:
    """`real_array`, and ValueError "{name} contains NaN or infinite entries" if any entry is not finite."""
    array = real_array(value, name, train_with=train_with)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    return array


def scaled_scores(S: np.ndarray | Sequence, tau: float, name: str = "S") -> np.ndarray:
    """Validate a (B, M) similarity table and return S / tau as float64."""
    tau = valid_tau(tau)
    A = real_array(S, name)
    if A.ndim != 2:
        raise ValueError(f"{name} must be 2-D (B queries x M documents), got shape {A.shape}")
    B, M = A.shape
    if B == 0:
        raise ValueError(f"{name} has no rows: a batch needs at least one query")
    if M < B:
        raise ValueError(
            f"{name} has {M} columns but {B} rows: every row i needs its positive in column i, so M >= B"
        )
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    with np.errstate(over="ignore"):
        scaled = A / tau
    if not np.all(np.isfinite(scaled)):
        raise ValueError(f"tau={tau!r} is too small for these scores: {name} / tau overflows")
    return scaled


def whole_number(value, name: str, minimum: int | None = None) -> int:
    """``int(value)`` for a Python or NumPy integer (at least ``minimum`` if given), or ValueError naming
    ``name``: bools, floats (even 2.0), strings and tensors are refused."""
    wanted = "an integer" if minimum is None else f"an integer >= {minimum}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be {wanted}, got {value!r:.60}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    return int(value)


def whole_array(value, name: str) -> np.ndarray:
    """``value`` as an int64 NumPy array (labels, digits, indices), or ValueError naming ``name``.

    Refused: booleans, floats (even 3.0: a label read from a float column is a mistake worth
    hearing about), complex numbers, text, None, ragged nesting, a masked array, and integers
    beyond int64. Python, NumPy and torch integers are read as they are; an empty list is an
    empty array (its size is the caller's to check).
    """
    if _is_tensor(value):
        if value.dtype.is_floating_point or value.dtype.is_complex or value.dtype == _torch_bool():
            raise ValueError(f"{name} must hold integers, got a tensor of dtype {value.dtype}")
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ma.MaskedArray):
        raise ValueError(f"{name} is a masked array: NumPy would use its masked entries. Pass only the "
                         f"entries to keep")
    try:
        array = np.asarray(value)
    except ValueError:
        raise ValueError(f"{name} is ragged: its rows have different lengths") from None
    except (TypeError, RuntimeError) as err:
        raise ValueError(f"{name} cannot be read as integers: {' '.join(str(err).split())}") from None
    if array.size == 0:
        return np.zeros(array.shape, dtype=np.int64)
    if array.dtype.kind == "O":  # e.g. Python ints too large for int64, or numbers mixed with None
        for x in array.ravel():
            if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
                raise ValueError(f"{name} must hold integers, got {x!r:.40}")
            if not -2**63 <= x < 2**63:
                raise ValueError(f"{name} must hold integers that fit int64, got {x!r:.40}")
        array = array.astype(np.int64)
    if array.dtype.kind == "u" and array.max() >= 2**63:
        raise ValueError(f"{name} must hold integers that fit int64, got {array.max()!r}")
    if array.dtype.kind not in "iu":
        what = {"b": "booleans", "f": "floats (give whole numbers as integers)", "c": "complex numbers",
                "U": "text", "S": "bytes"}.get(array.dtype.kind, f"dtype {array.dtype}")
        raise ValueError(f"{name} must hold integers, got {what}")
    return array.astype(np.int64)


def real_tensor(value, name: str):
    """``value`` as a torch tensor of real numbers, for a function that computes with torch, or
    ValueError naming ``name``.

    A floating-point tensor is returned as it is: its dtype, device and autograd graph are kept
    (torch can follow a gradient). An integer tensor becomes float64; a boolean or complex tensor
    is refused. Anything else is read by `real_array` (so the same refusals) as a float64 tensor.
    NaN and infinite entries are the caller's to check (``torch.isfinite``).
    """
    import torch

    if _is_tensor(value):
        if value.dtype.is_complex:
            raise ValueError(f"{name} holds complex numbers; give real numbers")
        if value.dtype == torch.bool:
            raise ValueError(f"{name} must hold real numbers, got booleans")
        return value if value.is_floating_point() else value.to(torch.float64)
    return torch.from_numpy(real_array(value, name, train_with=None))


def one_bool(value, name: str) -> bool:
    """``value`` as a bool if it is True or False (NumPy's too), or ValueError naming ``name``: a string
    such as "no" or a number would otherwise count as true or false without a word."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r:.60}")
    return bool(value)


def text_list(value, name: str) -> list[str]:
    """``value`` as a list of strings, or ValueError naming ``name``: one string (which would be read
    letter by letter), None, or an entry that is not a string."""
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be a list of strings, not one string; wrap it: [{value!r:.40}]")
    try:
        texts = list(value)
    except TypeError:
        raise ValueError(f"{name} must be a list of strings, got {type(value).__name__}") from None
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"{name}[{i}] must be a string, got {text!r:.40}")
    return texts
