"""The tool's argument checks, written once: a bad setting becomes one ValueError that names it.

The edges of the tool call these: the command line, `labs.retrieval.training.TrainConfig`,
and the public functions a notebook calls directly (`search`, `evaluate`, `load_dataset`,
...). The functions they call after that trust what they are given.

- `integer`, `positive`, `choice`: a number or a word in its allowed range.
- `device`: the one device rule: ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` for a GPU torch sees.
- `attention`: an attention kernel that exists here.
- `new_path`: an output path that can be created without overwriting anything; `folder`: an
  existing folder to read (an empty string is not the working folder).
- `text`: a string that is real text (no lone surrogate from bytes that are not UTF-8).
- `scores`: a table of real numbers (not complex, bool, text, ragged or a tensor that needs grad).
- `texts`, `ids`: a list of strings; ids also distinct.
"""

from __future__ import annotations

import errno
import math
import os
from pathlib import Path

__all__ = ["ATTENTION", "integer", "positive", "choice", "device", "attention", "new_path", "folder", "text", "scores",
           "texts", "ids", "TEMPORARY_SUFFIX"]

#: The longest suffix the tool adds to an output name for its temporary siblings
#: (``.NAME.partial-XXXXXXXX``, ``.NAME.lock``, ``.NAME.tmp-PID``): a name must leave room for it.
TEMPORARY_SUFFIX = len("..partial-") + 8

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
    """The one device rule: ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (N a GPU torch can see). A name of
    the wrong form is refused before torch is imported, so the refusal is quick."""
    kind, sep, index = value.partition(":") if isinstance(value, str) else ("", "", "")
    if kind not in ("cpu", "cuda") or (sep and (kind == "cpu" or not index.isdigit())):
        raise ValueError(f"{name} must be 'cpu', 'cuda' or 'cuda:N', got {value!r}")
    if kind == "cuda":
        import torch

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
    file, a name too long for the file system (with room for the tool's temporary siblings), and
    a nearest existing parent that is not writable, and a path inside a finished run folder (one
    with ``index_contract.json``: only ``evaluate`` adds to a sealed run). ``.`` and ``..`` are read
    as the folders they name. Nothing is created.
    """
    if isinstance(path, str):
        text(what, path)
    elif not isinstance(path, Path):
        raise ValueError(f"{what} must be a path, got {type(path).__name__}")
    if str(path) == "":
        raise ValueError(f"{what} is empty")
    p = Path(path)
    full = Path(os.path.abspath(p))  # '.' and '..' resolved as written
    if full == full.parent:
        raise ValueError(f"{what} {str(p)!r} is the root folder: choose a new folder")
    _fits(p, full, what)  # first: a name too long cannot even be looked at
    if p.is_symlink():
        state = "a dangling link" if not p.exists() else "a symbolic link"
        raise ValueError(f"{what} {str(p)!r} is {state} (to {os.readlink(p)!r}): give the real path")
    parent = full.parent
    while not parent.exists():
        if parent.is_symlink():
            raise ValueError(f"{what} {str(p)!r} is under a dangling link {str(parent)!r}")
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"{what} {str(p)!r} is under {str(parent)!r}, which is a file, not a folder")
    sealed = next((f for f in full.parents if os.path.isfile(f / SEALED)), None)
    if sealed is not None:
        raise ValueError(f"{what} {str(p)!r} is inside the finished run folder {str(sealed)!r}: a sealed run is "
                         "not written by another command (only evaluate adds to it); choose a path outside it")
    if full.exists():
        if folder and not full.is_dir():
            raise ValueError(f"{what} {str(p)!r} is a file, not a folder: choose a new folder")
        if not folder:
            raise ValueError(f"{what} {str(p)!r} exists: nothing was overwritten")
        if any(full.iterdir()):
            raise ValueError(f"{what} {str(p)!r} is not empty: choose a new one, nothing was overwritten"
                             f"{_partial_beside(full)}")
    target = full if full.exists() else parent
    if not os.access(target, os.W_OK | os.X_OK):
        raise ValueError(f"{what} {str(p)!r}: folder {str(target)!r} is not writable")
    return p


#: The file that marks a finished run folder (`labs.retrieval.contract.CONTRACT`).
SEALED = "index_contract.json"


def _partial_beside(full: Path) -> str:
    """A hint when a killed command left the rest of ``full``'s output in a partial folder beside it."""
    import glob

    partial = sorted(glob.glob(os.path.join(glob.escape(str(full.parent)), f".{glob.escape(full.name)}.partial-*")))
    if not partial:
        return ""
    return (f" (a command killed while moving its finished output in left part of it here and the rest in "
            f"{partial[0]!r}: remove both, or move the rest in by hand, then run it again)")


def _short(path) -> str:
    text = str(path)
    return repr(text) if len(text) <= 60 else repr(text[:30]) + "..." + repr(text[-20:])


def _fits(p: Path, full: Path, what: str) -> None:
    """Every name in ``full`` fits the file system (the last one with room for a temporary suffix)."""
    limits = full.parent
    while len(limits.parts) > 1 and not os.path.isdir(limits):  # isdir never raises
        limits = limits.parent
    try:
        name_max = os.pathconf(limits, "PC_NAME_MAX")
        path_max = os.pathconf(limits, "PC_PATH_MAX")
    except (AttributeError, OSError, ValueError):  # no pathconf (Windows): the usual limits
        name_max, path_max = 255, 4096
    for part in full.parts[1:-1]:
        if len(os.fsencode(part)) > name_max:
            raise ValueError(f"{what} {_short(p)}: the folder name {_short(part)} is "
                             f"{len(os.fsencode(part))} bytes long; this file system allows {name_max}")
    size, room = len(os.fsencode(full.name)), name_max - TEMPORARY_SUFFIX
    if size > room:
        raise ValueError(f"{what} {_short(p)}: the name is {size} bytes long; at most {room} fit here "
                         f"({name_max} allowed by the file system, less room for a temporary sibling)")
    if len(os.fsencode(str(full))) + TEMPORARY_SUFFIX >= path_max:
        raise ValueError(f"{what} {_short(p)}: the path is {len(os.fsencode(str(full)))} bytes long; at "
                         f"most {path_max - TEMPORARY_SUFFIX - 1} fit here")


def folder(name: str, value) -> Path:
    """``value`` as a Path if it names an existing folder; ValueError naming ``name`` otherwise (an
    empty string is refused: as a Path it would be the working folder)."""
    if isinstance(value, str) and value == "":
        raise ValueError(f"the {name} is empty ('')")
    if not isinstance(value, (str, Path)):
        raise ValueError(f"the {name} must be a path, got {type(value).__name__}")
    path = Path(value)
    if not path.is_dir():
        what = "is not a folder" if path.exists() else dangling(path) or "does not exist"
        raise ValueError(f"{name} {str(path)!r} {what}")
    return path


def dangling(path: Path) -> str:
    """Why a path that does not exist as such is there all the same: '' if it is not there at all,
    else what a symbolic link on the way does (it leads in a loop, or to nothing)."""
    try:
        os.stat(path)
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "is a loop of symbolic links (each leads back to another)"
        if os.path.lexists(path):
            return f"is a symbolic link to {os.readlink(path)!r}, which does not exist"
    return ""


def text(name: str, value) -> str:
    """``value`` if it is a string that is real text: a lone surrogate (a byte that was not UTF-8 in a
    command-line argument, or ``\\ud800`` in JSON) is refused, naming ``name``."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be text, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        bad = value[err.start]
        raise ValueError(f"{name} holds {bad!r} at character {err.start + 1}: bytes that are not UTF-8 (or an "
                         "unpaired surrogate); give it as UTF-8 text") from None
    return value


def scores(name: str, value, ndim: int = 2):
    """``value`` as a float64 NumPy array of ``ndim`` dimensions, or ValueError naming ``name``.

    Refused: a ragged list (rows of different lengths), complex numbers, booleans, text or other
    objects, a torch tensor that requires grad (detach it first: these numbers are only ranked).
    """
    import numpy as np

    if type(value).__module__.startswith("torch") and hasattr(value, "requires_grad"):
        if value.requires_grad:
            raise ValueError(f"{name} is a tensor that requires grad: pass {name}.detach() (ranking needs only "
                             "its values)")
        value = value.detach().cpu().numpy()
    try:
        array = np.asarray(value)
    except ValueError:
        raise ValueError(f"{name} is ragged: its rows have different lengths") from None
    if array.dtype.kind == "O":
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must hold real numbers (a rectangular table), got objects such as "
                             f"{array.flat[0]!r:.40}") from None
    if array.dtype.kind == "c":
        raise ValueError(f"{name} holds complex numbers; give real scores")
    if array.dtype.kind not in "iuf":
        what = {"b": "booleans", "U": "text", "S": "bytes"}.get(array.dtype.kind, f"dtype {array.dtype}")
        raise ValueError(f"{name} must hold real numbers, got {what}")
    if array.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {array.shape}")
    return array.astype(np.float64)


def ids(name: str, values) -> list[str]:
    """``values`` as a list of distinct strings, or ValueError naming ``name`` and the first offender
    (an integer id is refused, not converted: 1 and '1' would become one id)."""
    out = texts(name, values, "id strings", "convert them yourself, so that 1 and '1' cannot become one id")
    seen: set[str] = set()
    for value in out:
        if value in seen:
            raise ValueError(f"{name} lists {value!r} twice: ids must be unique")
        seen.add(value)
    return out


def texts(name: str, values, what: str = "texts", advice: str = "convert them yourself") -> list[str]:
    """``values`` as a list of strings; a single string (a list of its characters) or anything else
    is refused, naming ``name``."""
    if isinstance(values, (str, bytes, set, frozenset)) or not hasattr(values, "__len__") \
            or not hasattr(values, "__iter__") or hasattr(values, "keys"):
        why = " (a set has no order)" if isinstance(values, (set, frozenset)) else ""
        raise ValueError(f"{name} must be a list of {what}, got {type(values).__name__}{why}")
    out = list(values)
    bad = next((v for v in out if not isinstance(v, str)), None)
    if bad is not None:
        raise ValueError(f"{name} holds {bad!r} ({type(bad).__name__}): {name} must be {what}; {advice}")
    return out
