"""Writing output without ever leaving half of it: locks, whole folders, whole files.

- `build_atomically` builds a folder in a temporary sibling and renames it into place
  only when everything is written; a lock refuses a second builder at once.
- `write_json`: a whole JSON file or none, returning the SHA-256 of what it wrote;
  `file_sha256`: the SHA-256 of a file's bytes.

Output paths are checked before any work by `labs.retrieval.validate.new_path`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


__all__ = ["RunLocked", "COMMITTED", "exclusive", "build_atomically", "write_json", "file_sha256"]

#: Every folder `build_atomically` has moved into place in this process: from then on it is complete,
#: and a signal that arrives before the command returns has nothing left to stop.
COMMITTED: list[Path] = []


class RunLocked(ValueError):
    """Another process is building the same output folder."""


@contextlib.contextmanager
def exclusive(path: Path, what: str) -> Iterator[None]:
    """Hold the lock file ``path`` for this process, or raise `RunLocked` naming ``what`` at once.

    The file is removed at the end; the kernel releases the lock if the process dies (a stale
    file is taken over by the next process)."""
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
            raise RunLocked(f"{what} is being written by another process now ({path.name} is held); wait "
                            "for it or choose another folder") from None
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                path.unlink()  # while still held: a later process makes a fresh one
    finally:
        handle.close()


@contextlib.contextmanager
def build_atomically(out: str | Path, what: str = "--out") -> Iterator[Path]:
    """Yield a new temporary folder next to ``out``; move it into place when the block ends normally.

    A lock file ``.NAME.lock`` next to ``out`` makes a second builder of the same ``out`` fail at
    once (`RunLocked`). If the block raises or the process is interrupted, ``out`` is left as it
    was and the temporary folder is removed; one left by a killed process (``.NAME.partial-*``)
    is removed by the next builder. An ``out`` that does not exist is created by renaming the
    finished folder; an existing empty folder is kept as it is (its mode, its owner, a shell
    standing in it) and receives the finished files. ``out`` was checked by the caller
    (`labs.retrieval.validate.new_path`); only a race with another writer is checked here.
    """
    out = Path(out).absolute()
    out.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(out.parent / f".{out.name}.lock", f"{what} {str(out)!r}"):
        if out.exists() and (not out.is_dir() or any(out.iterdir())):  # another writer finished first
            raise ValueError(f"{what} {str(out)!r} was written by another process meanwhile; nothing was "
                             "overwritten")
        for stale in out.parent.glob(f".{out.name}.partial-*"):
            shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
        try:
            if not out.exists():
                umask = os.umask(0o22)
                os.umask(umask)
                tmp.chmod(0o777 & ~umask)  # mkdtemp makes it private; a new folder gets the usual mode
            yield tmp
            with _signals_held():
                if out.exists():
                    for child in sorted(tmp.iterdir()):
                        child.rename(out / child.name)
                else:
                    tmp.rename(out)
                COMMITTED.append(out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP for a few renames that must not be cut in half (Unix, main thread)."""
    import signal
    import threading

    held = {signal.SIGINT, signal.SIGTERM} | ({signal.SIGHUP} if hasattr(signal, "SIGHUP") else set())
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def write_json(path: Path, obj) -> str:
    """Write ``obj`` as indented UTF-8 JSON with a final newline, whole or not at all (a hidden
    sibling renamed into place); return the SHA-256 of the bytes written."""
    data = (json.dumps(obj, indent=1, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: str | Path) -> str:
    """SHA-256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
