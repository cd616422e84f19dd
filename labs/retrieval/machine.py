"""The tool's machine side: the paths, folders, devices and attention kernels a run may use.

In plain terms: a setting that names something on this machine (an output path, a folder to read,
a device, an attention kernel) is checked here once, at the edge, and refused as one ValueError
that names the flag or argument. Each check is called as ``check(value, name)``, as the words of
`labs.checks` are, which the tool uses for every value that is only a value (integers, numbers,
choices, texts, ids, score tables).

- `device`: the one device rule: ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` for a GPU torch sees.
- `attention`: an attention kernel (`ATTENTION`) that exists here.
- `new_path`: an output path that can be created without overwriting anything; `folder`: an
  existing folder to read (an empty string is not the working folder); `dangling`: why a path that
  is not there is there all the same (a symbolic link to nothing, or a loop).

Relations: the callers are the command line (`labs.retrieval.cli`), `TrainConfig`
(`labs.retrieval.config`) and the public functions a notebook calls directly (`search`,
`evaluate`, `load_dataset`, ...); the files these paths become are written by `labs.retrieval.files`.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from labs import checks

__all__ = ["ATTENTION", "SEALED", "TEMPORARY_SUFFIX", "device", "attention", "new_path", "folder", "dangling"]

#: The longest suffix the tool adds to an output name for its temporary siblings
#: (``.NAME.partial-XXXXXXXX``, ``.NAME.lock``, ``.NAME.tmp-PID``): a name must leave room for it.
TEMPORARY_SUFFIX = len("..partial-") + 8

#: The attention kernels transformers can run: PyTorch's fused SDPA, FlashAttention 2 (a CUDA
#: package), or plain matrix products.
ATTENTION = ("sdpa", "flash_attention_2", "eager")


def device(value, name: str = "device") -> str:
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


def attention(value, name: str = "attention") -> str:
    """``value`` if it is one of `ATTENTION` and usable here (flash_attention_2 needs its package)."""
    checks.choice(value, name, ATTENTION)
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
        checks.text(path, what)
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


def folder(value, name: str) -> Path:
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
