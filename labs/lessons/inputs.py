"""The lesson functions' argument checks, written once: a bad argument is refused with its name.

Every public function of `labs.lessons` checks what it is given at its own edge
and trusts it after that. These are the shared checks:

- `real_number`: one real number (not a bool, a string, a complex number, nor a tensor that
  requires grad: its gradient would be lost without a word);
- `valid_tau`: a temperature is a finite number > 0;
- `valid_margin`: a margin is a finite number (negative is allowed);
- `real_array`: a table of real numbers as float64: not ragged, not complex, not booleans or
  text, and not a torch tensor that requires grad (these functions compute with NumPy, where
  autograd cannot follow: the message says to detach it, or to use the ``_torch`` twin);
- `scaled_scores`: a (B, M) similarity table with M >= B, finite, divided by tau
  without overflowing, as float64.

Booleans and strings are never numbers here, even where Python or NumPy would convert them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["real_number", "valid_tau", "valid_margin", "real_array", "scaled_scores"]


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
        raise ValueError(f"{name} must be {what}, got {value!r}") from None


def _torch_bool():
    import torch

    return torch.bool


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


def real_array(value, name: str) -> np.ndarray:
    """``value`` as a float64 NumPy array, or ValueError naming ``name``.

    Refused: ragged nesting (rows of different lengths), complex numbers, booleans, text or other
    objects, and a torch tensor that requires grad (NumPy cannot carry its gradient: detach it, or
    use the ``_torch`` form of the function). Other tensors are read as their values.
    """
    if _is_tensor(value):
        if value.requires_grad:
            raise ValueError(f"{name} is a torch tensor that requires grad: this function computes with NumPy, "
                             f"where autograd cannot follow. Pass {name}.detach() for the value, or use the "
                             "_torch form (info_nce_torch, info_nce_masked_torch) to train through it")
        if value.dtype.is_complex:
            raise ValueError(f"{name} holds complex numbers; give real scores")
        value = value.detach().cpu().numpy()
    try:
        array = np.asarray(value)
    except ValueError:
        raise ValueError(f"{name} is ragged: its rows have different lengths") from None
    except (TypeError, RuntimeError) as err:  # e.g. a list of tensors that require grad
        raise ValueError(f"{name} cannot be read as a table of real numbers: {' '.join(str(err).split())}") from None
    if array.dtype.kind == "O":  # e.g. Fractions or numbers mixed with None: real numbers only
        try:
            array = np.asarray([real_number(x, name, "real numbers") for x in array.ravel()],
                               dtype=np.float64).reshape(array.shape)
        except ValueError:
            raise ValueError(f"{name} must hold real numbers, got {next(iter(array.ravel()), None)!r:.40} and "
                             "the like") from None
    if array.dtype.kind == "c":
        raise ValueError(f"{name} holds complex numbers; give real scores")
    if array.dtype.kind not in "iuf":
        what = {"b": "booleans", "U": "text", "S": "bytes"}.get(array.dtype.kind, f"dtype {array.dtype}")
        raise ValueError(f"{name} must hold real numbers, got {what}")
    return array.astype(np.float64)


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
