"""Shared plumbing: offline set-up, output folders, argument checks, memory probes, progress.

Nothing here is a lesson; these are the small pieces every command, training path
and benchmark needs once, written once.

- `offline` sets the Hugging Face offline switches (unless already set).
- `check_int`, `check_positive` turn a bad setting into one ValueError naming it.
- `check_new_path`, `refuse_non_empty` check an output path before any work:
  a file, a path under a file, a dangling link, a read-only parent or a folder
  with files in it is refused with one line.
- `build_atomically` builds a folder in a temporary sibling and renames it into
  place only when everything is written; a lock refuses a second builder at once.
- `status_kib`, `reset_peak`, `peak_rss_mib`, `memory_report`: the per-process
  resident peak (Linux ``VmHWM``, resettable), never the lifetime ``ru_maxrss``
  unless nothing better exists (see `labs.scaling`).
- `show_progress`, `progress`, `stage`: quiet bars under TQDM_DISABLE; named
  stages a test can hook.
- `number_answer`, `word_answer`: the first step of every exercise check: an
  answer not given yet, or not a number (not one of the words), prints the
  check's own message and gives None. `grade_number` then prints "right", the
  hint for a known wrong number, or a general hint.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "OFFLINE_VARIABLES",
    "offline",
    "check_int",
    "check_positive",
    "check_new_path",
    "refuse_non_empty",
    "RunLocked",
    "build_atomically",
    "status_kib",
    "reset_peak",
    "peak_rss_mib",
    "memory_report",
    "versions",
    "show_progress",
    "progress",
    "stage",
    "ONE_NUMBER",
    "number_answer",
    "word_answer",
    "grade_number",
]

OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")


def offline() -> None:
    """Keep the Hugging Face libraries off the network (each variable set to 1 unless already set)."""
    for name in OFFLINE_VARIABLES:
        os.environ.setdefault(name, "1")


# ---- argument checks ----------------------------------------------------------------------------

def check_int(name: str, value, minimum: int = 0, maximum: int | None = None) -> int:
    """``value`` if it is an integer in [minimum, maximum]; else ValueError naming ``name`` and the range."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum \
            or (maximum is not None and value > maximum):
        allowed = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        raise ValueError(f"{name} must be an integer {allowed}, got {value!r}")
    return value


def check_positive(name: str, value) -> float:
    """``value`` as a float if it is a finite number > 0; else ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


# ---- output paths -------------------------------------------------------------------------------

def check_new_path(path: str | Path, what: str = "--out", *, folder: bool = True) -> Path:
    """Refuse, with one line naming ``what``, an output path that cannot be created or would overwrite.

    Refused: a symbolic link (dangling or not), a file where a folder is wanted (or a folder where a file
    is), an existing file, a folder with files in it, a path under a file, and a
    nearest existing parent that is not writable. Nothing is created.
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
        refuse_non_empty(p, what)
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


def refuse_non_empty(folder: str | Path, what: str = "folder") -> None:
    """ValueError if ``folder`` exists and has anything in it: nothing is ever overwritten."""
    folder = Path(folder)
    if folder.is_dir() and any(folder.iterdir()):
        raise ValueError(f"{what} {str(folder)!r} is not empty: choose a new one, nothing was overwritten")


class RunLocked(ValueError):
    """Another process is building the same output folder."""


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    """An exclusive lock file for this process, removed at the end; the kernel releases it if the
    process dies (a stale file is taken over by the next process)."""
    handle = open(path, "a+")
    try:
        try:
            import fcntl  # Unix
        except ImportError:  # Windows: lock one byte of the file
            import msvcrt

            def grab() -> None:
                msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        else:
            def grab() -> None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        try:
            grab()
            if not path.exists() or os.stat(path).st_ino != os.fstat(handle.fileno()).st_ino:
                raise OSError("the lock file was removed by its last holder")
        except OSError:
            raise RunLocked(f"{path.name}: another process is writing this output now") from None
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                path.unlink()  # while still held: a later process makes a fresh one
    finally:
        handle.close()


@contextlib.contextmanager
def build_atomically(out: str | Path, what: str = "--out") -> Iterator[Path]:
    """Yield a new temporary folder next to ``out``; rename it to ``out`` when the block ends normally.

    A lock file ``.NAME.lock`` next to ``out`` makes a second builder of the same
    ``out`` fail at once (RunLocked). If the block raises or the process is
    interrupted, ``out`` is left as it was (absent or empty) and the temporary
    folder is removed; one left by a killed process (``.NAME.partial-*``) is
    removed by the next builder. ``out`` itself is checked with `check_new_path`.
    """
    out = check_new_path(out, what).absolute()
    out.parent.mkdir(parents=True, exist_ok=True)
    lock = out.parent / f".{out.name}.lock"
    try:
        with _lock(lock):
            check_new_path(out, what)  # again, now that no other builder can race us
            for stale in out.parent.glob(f".{out.name}.partial-*"):
                shutil.rmtree(stale, ignore_errors=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
            umask = os.umask(0o22)
            os.umask(umask)
            tmp.chmod(0o777 & ~umask)  # mkdtemp makes it private; the finished folder gets the usual mode
            try:
                yield tmp
                if out.is_dir():
                    out.rmdir()  # empty (checked): replaced by the finished folder
                tmp.rename(out)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    except RunLocked as err:
        raise RunLocked(f"{what} {str(out)!r} is being written by another process now ({err}); "
                        "wait for it or choose another folder") from None


# ---- memory -------------------------------------------------------------------------------------

def status_kib(field: str) -> int:
    """A field of Linux ``/proc/self/status`` in KiB (``VmRSS`` now, ``VmHWM`` the peak since reset)."""
    return int(re.search(rf"{field}:\s+(\d+)", Path("/proc/self/status").read_text()).group(1))


def reset_peak() -> bool:
    """Reset this process's resident high-water mark (Linux clear_refs '5'); False where not allowed."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mib() -> tuple[float, str]:
    """(peak resident MiB of this process, how it was measured).

    Linux: ``VmHWM``, the peak since the last `reset_peak` (or since start). Elsewhere
    the lifetime ``ru_maxrss`` (KiB on Linux, bytes on macOS), or psutil's current
    resident size on Windows, which has neither.
    """
    try:
        return status_kib("VmHWM") / 1024, "VmHWM"
    except (OSError, AttributeError):
        pass
    try:
        import resource  # Unix only
        import sys

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (2**20 if sys.platform == "darwin" else 1024), "ru_maxrss (lifetime)"
    except ImportError:
        import psutil

        return psutil.Process().memory_info().rss / 2**20, "psutil rss (current, not a peak)"


def memory_report(device: str) -> dict:
    """Peak CPU resident memory of this process, and CUDA's peak allocated/reserved on ``device`` cuda."""
    mib, method = peak_rss_mib()
    out = {"cpu_peak_rss_mib": round(mib, 1), "cpu_peak_method": method}
    if str(device).startswith("cuda"):
        import torch

        out["cuda_peak_allocated_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 3)
        out["cuda_peak_reserved_gib"] = round(torch.cuda.max_memory_reserved() / 2**30, 3)
    return out


def versions() -> dict:
    """torch, transformers and sentence-transformers versions, for a run's metrics."""
    import sentence_transformers
    import torch
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "sentence_transformers": sentence_transformers.__version__}


# ---- progress -----------------------------------------------------------------------------------

def show_progress() -> bool:
    """Progress bars on, unless TQDM_DISABLE is set (CI and nbval set it)."""
    return os.environ.get("TQDM_DISABLE", "").lower() not in ("1", "true", "yes")


def progress(items, desc: str):
    """``items`` wrapped in a tqdm bar (hidden under TQDM_DISABLE)."""
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, disable=not show_progress(), leave=False)


def stage(name: str) -> None:
    """Mark a named stage of a long job (``python -m labs train`` marks each); logged at debug level.

    Tests replace it to interrupt a run at a chosen stage.
    """
    import logging

    logging.getLogger("labs").debug("stage: %s", name)


# ---- exercise answers ---------------------------------------------------------------------------

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
                 tol: float) -> bool:
    """Print ``right`` and give True if ``value`` is within ``tol`` of ``truth``; else give False after printing
    the hint of the first known wrong number in ``misses`` within ``tol`` of it, or ``otherwise``."""
    if abs(value - truth) < tol:
        print(right)
        return True
    print(next((hint for wrong, hint in misses.items() if abs(value - wrong) < tol), otherwise))
    return False
