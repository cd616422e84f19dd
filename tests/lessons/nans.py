"""Whether a lesson function's result holds a NaN anywhere (the fuzz tests' "no silent NaN")."""

from __future__ import annotations

import numpy as np
import torch


def has_nan(result) -> bool:
    """A NaN in ``result``: a float tensor or array, a float, or any of them inside dicts, tuples and lists."""
    if isinstance(result, dict):
        return any(has_nan(v) for v in result.values())
    if isinstance(result, (tuple, list)):
        return any(has_nan(v) for v in result)
    if isinstance(result, torch.Tensor):
        return bool(torch.is_floating_point(result) and torch.isnan(result.detach()).any())
    if isinstance(result, (np.ndarray, float, np.floating)):
        array = np.asarray(result)
        return array.dtype.kind in "fc" and bool(np.isnan(array).any())
    return False
