"""The tool's argument checks, written once: a bad setting becomes one ValueError that names it.

The edges of the tool call these: the command line, `labs.retrieval.training.TrainConfig`,
and the public functions a notebook calls directly (`search`, `evaluate`, `load_dataset`,
...). The functions they call after that trust what they are given.

- `integer`, `positive`, `choice`: a number or a word in its allowed range.
- `device`: the one device rule: ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` for a GPU torch sees.
- `attention`: an attention kernel that exists here.
- `new_path`: an output path that can be created without overwriting anything.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

__all__ = ["ATTENTION", "integer", "positive", "choice", "device", "attention", "new_path"]

#: The attention kernels transformers can run: PyTorch's fused SDPA, FlashAttention 2 (a CUDA
#: package), or plain matrix products.
ATTENTION = ("sdpa", "flash_attention_2", "eager")


def integer(name: str, value, minimum: int = 0, maximum: int | None = None) -> int:
    """``value`` if it is an integer in [minimum, maximum]; else ValueError naming ``name`` and the range."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum \
            or (maximum is not None and value > maximum):
        allowed = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        raise ValueError(f"{name} must be an integer {allowed}, got {value!r}")
    return value


def positive(name: str, value, maximum: float | None = None) -> float:
    """``value`` as a float if it is a finite number > 0 (and at most ``maximum``); else ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0 \
            or (maximum is not None and value > maximum):
        allowed = "> 0" if maximum is None else f"> 0 and at most {maximum:g}"
        raise ValueError(f"{name} must be a finite number {allowed}, got {value!r}")
    return float(value)


def choice(name: str, value, allowed: tuple) -> object:
    """``value`` if it is one of ``allowed``; else ValueError listing them."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(str, allowed))}; got {value!r}")
    return value


def device(name: str, value) -> str:
    """The one device rule: ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (N a GPU torch can see)."""
    import torch

    kind, sep, index = value.partition(":") if isinstance(value, str) else ("", "", "")
    if kind not in ("cpu", "cuda") or (sep and (kind == "cpu" or not index.isdigit())):
        raise ValueError(f"{name} must be 'cpu', 'cuda' or 'cuda:N', got {value!r}")
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"{name} {value}: torch sees no CUDA GPU here (a CPU build or no driver); use cpu")
        count = torch.cuda.device_count()
        if sep and int(index) >= count:
            raise ValueError(f"{name} {value}: torch sees {count} GPU(s), numbered 0 to {count - 1}")
    return value


def attention(name: str, value) -> str:
    """``value`` if it is one of `ATTENTION` and usable here (flash_attention_2 needs its package)."""
    choice(name, value, ATTENTION)
    if value == "flash_attention_2":
        from transformers.utils import is_flash_attn_2_available

        if not is_flash_attn_2_available():
            raise ValueError(f"{name} flash_attention_2 needs the flash-attn package and a CUDA GPU; neither is "
                             "usable here, use sdpa")
    return value


def new_path(path: str | Path, what: str = "--out", *, folder: bool = True) -> Path:
    """Refuse, with one line naming ``what``, an output path that cannot be created or would overwrite.

    Refused: an empty path, a symbolic link (dangling or not), a file where a folder is wanted
    (or a folder where a file is), an existing file, a folder with anything in it, a path under a
    file, and a nearest existing parent that is not writable. Nothing is created.
    """
    p = Path(path)
    if str(path) == "":
        raise ValueError(f"{what} is empty")
    if p.is_symlink():
        state = "a dangling link" if not p.exists() else "a symbolic link"
        raise ValueError(f"{what} {str(p)!r} is {state} (to {os.readlink(p)!r}): give the real path")
    if p.exists():
        if folder and not p.is_dir():
            raise ValueError(f"{what} {str(p)!r} is a file, not a folder: choose a new folder")
        if not folder:
            raise ValueError(f"{what} {str(p)!r} exists: nothing was overwritten")
        if any(p.iterdir()):
            raise ValueError(f"{what} {str(p)!r} is not empty: choose a new one, nothing was overwritten")
    parent = p.absolute().parent
    while not parent.exists():
        if parent.is_symlink():
            raise ValueError(f"{what} {str(p)!r} is under a dangling link {str(parent)!r}")
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"{what} {str(p)!r} is under {str(parent)!r}, which is a file, not a folder")
    target = p if p.exists() else parent
    if not os.access(target, os.W_OK | os.X_OK):
        raise ValueError(f"{what} {str(p)!r}: folder {str(target)!r} is not writable")
    return p
