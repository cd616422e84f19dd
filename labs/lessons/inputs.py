"""The lesson functions' argument checks, written once: a bad argument is refused with its name.

Every public function of `labs.lessons` checks what it is given at its own edge
and trusts it after that. These are the shared checks:

- `valid_tau`: a temperature is a finite number > 0;
- `valid_margin`: a margin is a finite number (negative is allowed);
- `scaled_scores`: a (B, M) similarity table with M >= B, finite, divided by tau
  without overflowing, as float64.

Booleans and strings are never numbers here, even where Python would convert them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["real_number", "valid_tau", "valid_margin", "scaled_scores"]


def real_number(value, name: str, what: str) -> float:
    """``float(value)``, or ValueError "{name} must be {what}" (bools and strings are not numbers here)."""
    try:
        if isinstance(value, (bool, str)):
            raise TypeError(value)
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {what}, got {value!r}") from None


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


def scaled_scores(S: np.ndarray | Sequence, tau: float, name: str = "S") -> np.ndarray:
    """Validate a (B, M) similarity table and return S / tau as float64."""
    tau = valid_tau(tau)
    A = np.asarray(S, dtype=np.float64)
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
