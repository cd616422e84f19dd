"""Writing output without ever leaving half of it: locks, whole folders, whole files, nothing left behind.

- `build_atomically` builds a folder in a temporary sibling and renames it into place
  only when everything is written; a lock refuses a second builder at once.
- `exclusive`: a lock file held for one process, removed when it is done; `output_lock`: the one
  lock of an output (``.NAME.lock`` beside it) that every writer of it takes (make-data, baseline,
  train with all its torchrun processes, evaluate); `new_parents`: missing folders made for an
  output, removed again if the command fails.
- `temporary_folder`: a scratch folder that is removed whatever happens; `move_together`: files
  written there moved into a folder, all or none, the last one the commit.
- `write_json`: a whole JSON file or none, returning the SHA-256 of what it wrote;
  `file_sha256`: the SHA-256 of a file's bytes; `named`: a failed write names its file.
- `remove_leftovers`: removes whatever this process made and did not finish (the command line
  calls it when a signal stops a command, and at the end of every command).

Every temporary thing (lock file, partial folder, scratch folder, hidden ``.tmp-`` file, a
missing parent folder made for ``--out``) is created with the stop signals held and recorded at
once, so a signal can never leave one behind unrecorded. Output paths are checked before any
work by `labs.retrieval.machine.new_path`.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


__all__ = ["RunLocked", "COMMITTED", "exclusive", "output_lock", "new_parents", "build_atomically", "temporary_folder",
           "move_together", "write_json", "file_sha256", "named", "STOP_SIGNALS", "stop_signals", "signals_held",
           "held", "leftovers", "remove_leftovers", "remove_stale"]

#: Every output put in place in this process (a folder by `build_atomically`, files by `move_together`,
#: a file by the command line): from then on it is complete, and a signal that arrives before the
#: command returns has nothing left to stop.
COMMITTED: list[Path] = []

#: What this process has made and not yet finished, oldest first: path -> "tree" (a folder and its
#: contents), "file", or "dir" (a folder made for a missing parent, removed only while empty).
_LEFT: dict[str, str] = {}


class RunLocked(ValueError):
    """Another process is building the same output folder."""


#: The signals that stop a command, by name: Ctrl-C, kill's default, a closed terminal, Ctrl-\\, the
#: user signals and alarms (whose default is to end the process too) and a CPU-time limit.
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGXCPU")


def stop_signals() -> list:
    """The `STOP_SIGNALS` this platform has, as signal numbers."""
    import signal

    return [getattr(signal, name) for name in STOP_SIGNALS if hasattr(signal, name)]


#: How many `signals_held` blocks are open, and the stop signals that arrived meanwhile.
_HOLDING: list[int] = []


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold the stop signals for a few steps that must not be cut in half (creating and recording a
    temporary file, renames, writing and recording finished output): a signal that arrives
    meanwhile is noted by the handler (`held`) and raised again when the block ends.

    This is done in Python, not with the signal mask: in a process with other threads (torch's,
    the tokenizers'), the kernel hands a signal to any thread that does not block it, and Python
    runs its handler in the main thread all the same."""
    _HOLDING.append(0)
    try:
        yield
    finally:
        _HOLDING.pop()
        if not _HOLDING and _PENDING:
            import signal

            signum = _PENDING[0]
            _PENDING.clear()
            signal.raise_signal(signum)  # now it may stop the command (or find it complete)


_PENDING: list[int] = []


def held(signum: int) -> bool:
    """For a signal handler: True (and the signal noted, to be raised again) inside `signals_held`."""
    if _HOLDING:
        if signum not in _PENDING:
            _PENDING.append(signum)
        return True
    return False


def _remove(path: str, kind: str) -> None:
    with contextlib.suppress(OSError):
        if kind == "tree":
            shutil.rmtree(path)
        elif kind == "file":
            os.unlink(path)
        else:
            os.rmdir(path)  # a parent folder this process made: only while it is still empty
    _LEFT.pop(path, None)


def leftovers() -> frozenset[str]:
    """What this process has made and not yet finished, now (paths)."""
    return frozenset(_LEFT)


def remove_leftovers(keep: frozenset[str] = frozenset()) -> None:
    """Remove everything this process made and did not finish (newest first), except ``keep`` (what
    was already there when a command started, made by its caller): what a stopped command leaves.
    Safe to call at any time; finished output is never in the list."""
    for path, kind in reversed(list(_LEFT.items())):
        if path not in keep:
            _remove(path, kind)


@contextlib.contextmanager
def named(path: str | Path) -> Iterator[None]:
    """An OSError raised inside (a full disk, a file size limit) names ``path`` if it names no file."""
    try:
        yield
    except OSError as err:
        if err.filename is not None:
            raise
        if err.errno is None:
            raise OSError(f"{path}: {err}") from err
        raise OSError(err.errno, err.strerror or str(err), str(path)) from err


def _grab(handle) -> None:
    """Lock an open file for this process without waiting; OSError if another process holds it."""
    try:
        import fcntl  # Unix
    except ImportError:  # Windows: lock one byte of the file
        import msvcrt

        msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
    else:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


#: Lock files this process holds to share with its own later steps (absolute path -> how many
#: `exclusive` blocks hold it): a command that took its output's lock early (train, before torch is
#: imported, with ``share=True``) passes through the same lock again further in. Any other second
#: `exclusive` of a held lock, in this process or another, is refused.
_SHARED: dict[str, int] = {}


def _launch_id() -> str:
    """The id torchrun (and accelerate, which runs it) gives every process of one launch; '' alone."""
    return os.environ.get("TORCHELASTIC_RUN_ID", "")


@contextlib.contextmanager
def exclusive(path: Path, what: str, share: bool = False) -> Iterator[None]:
    """Hold the lock file ``path`` for this process, or raise `RunLocked` naming ``what`` at once.

    The file is removed at the end, whatever happens; the kernel releases the lock if the process
    dies (a stale file is taken over by the next process). With ``share``, a later `exclusive` of
    the same file in this process, while this one holds it, passes through. The file records the holder's process id and launch id
    (`_launch_id`), so that the other processes of a torchrun launch recognise their own lock."""
    path = Path(path)
    key = os.path.abspath(path)
    if key in _SHARED:
        _SHARED[key] += 1
        try:
            yield
        finally:
            _SHARED[key] -= 1
        return
    with signals_held():
        try:
            handle = open(path, "a+")
        except OSError as err:
            raise ValueError(f"{what}: cannot create files in {str(path.parent)!r} ({err.strerror})") from None
        try:
            _grab(handle)
            if not path.exists() or os.stat(path).st_ino != os.fstat(handle.fileno()).st_ino:
                raise OSError("the lock file was removed by its last holder")
        except OSError:
            handle.close()
            raise RunLocked(f"{what} is being written by another process now ({path.name} is held); wait "
                            "for it or choose another folder") from None
        _LEFT[str(path)] = "file"
        if share:
            _SHARED[key] = 1
    with contextlib.suppress(OSError):  # who holds it, for the other processes of this launch
        handle.truncate(0)
        handle.write(f"{os.getpid()} {_launch_id()}\n")
        handle.flush()
    try:
        yield
    finally:
        with signals_held():
            _SHARED.pop(key, None)
            _remove(str(path), "file")  # while still held: a later process makes a fresh one
            handle.close()


def _held_by_another_launch(path: Path) -> bool:
    """For a process of a torchrun launch other than rank 0: whether the lock file ``path`` is held
    now by a process that is not of this launch (a lock not yet taken, or taken by this launch's
    rank 0, is not)."""
    try:
        handle = open(path, "r")
    except OSError:
        return False  # no lock yet: rank 0 takes it, or is refused, in a moment
    with handle:
        try:
            _grab(handle)
        except OSError:  # held: by whom?
            holder = handle.read().split()
            return not (_launch_id() and holder[1:2] == [_launch_id()])
        return False  # a stale file: nobody holds it (closing the handle releases it again)


@contextlib.contextmanager
def output_lock(out: str | Path, what: str = "--out", share: bool = False) -> Iterator[Path]:
    """The lock of the output ``out``: ``.NAME.lock`` beside it, held for the block (its missing
    parent folders are made, and removed again if the block fails); yields ``out`` as an absolute path.
    Every writer of an output takes it, so a second writer is refused at once (`RunLocked`),
    whatever the command. Under torchrun only process 0 writes and holds it; the others are refused
    at once if another launch holds it, and otherwise pass. ``share``: see `exclusive`."""
    out = Path(os.path.abspath(out))
    lock = out.parent / f".{out.name}.lock"
    label = f"{what} {str(out)!r}"
    if int(os.environ.get("RANK", "0") or 0) > 0:
        if _held_by_another_launch(lock):
            raise RunLocked(f"{label} is being written by another process now ({lock.name} is held); wait "
                            "for it or choose another folder")
        yield out
        return
    with new_parents(out.parent), exclusive(lock, label, share):
        yield out


@contextlib.contextmanager
def new_parents(folder: Path) -> Iterator[None]:
    """Make the missing folders down to ``folder``; if the block fails, remove the ones made here
    (those still empty), so a failed command leaves no new folder behind."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    made = []
    try:
        for path in reversed(missing):
            with signals_held():
                try:
                    path.mkdir()
                except FileExistsError:
                    continue  # made by someone else meanwhile: not ours to remove
                _LEFT[str(path)] = "dir"
                made.append(str(path))
        yield
    except BaseException:
        for path in reversed(made):
            _remove(path, "dir")
        raise
    for path in made:  # the output is in place inside them: they are the user's now
        _LEFT.pop(path, None)


@contextlib.contextmanager
def temporary_folder(prefix: str, parent: str | Path | None = None,
                     stands_for: str | Path | None = None) -> Iterator[Path]:
    """A new private folder (in the system's temporary folder unless ``parent`` is given), removed
    with everything in it when the block ends, however it ends. With ``stands_for``, a failed
    write inside names its file as it would be in that folder (where the user will look)."""
    with signals_held():
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        _LEFT[str(path)] = "tree"
    try:
        yield path
    except OSError as err:
        moved = err if stands_for is None else _relocated(err, path, Path(stands_for))
        if moved is err:
            raise
        raise moved from err
    finally:
        _remove(str(path), "tree")


def remove_stale(folder: Path, prefix: str) -> None:
    """Remove what a killed process left in ``folder`` under ``prefix`` (a partial folder, a staging
    folder, a hidden temporary file). Call it only while holding the lock of that output: then no
    living process is writing under that prefix."""
    for stale in Path(folder).glob(f"{glob.escape(prefix)}*"):
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                stale.unlink()


def _relocated(err: OSError, inside: Path, to: Path) -> OSError:
    """``err`` naming the file under ``to`` that it named under the temporary folder ``inside``."""
    name = str(err.filename or "")
    if not name.startswith(str(inside)) or err.errno is None:
        return err
    return OSError(err.errno, err.strerror, str(to) + name[len(str(inside)):])


@contextlib.contextmanager
def build_atomically(out: str | Path, what: str = "--out", last: str | None = None) -> Iterator[Path]:
    """Yield a new temporary folder next to ``out``; move it into place when the block ends normally.

    A lock file ``.NAME.lock`` next to ``out`` makes a second builder of the same ``out`` fail at
    once (`RunLocked`). If the block raises or the process is interrupted, ``out`` is left as it
    was, the temporary folder is removed, and so are the missing parent folders made for it; one
    left by a killed process (``.NAME.partial-*``) is removed by the next builder. An ``out`` that
    does not exist is created by renaming the finished folder; an existing empty folder is kept as
    it is (its mode, its owner, a shell standing in it) and receives the finished files. A failed
    write names the file as it would have been in ``out``. ``out`` was checked by the caller
    (`labs.retrieval.machine.new_path`); only a race with another writer is checked here.

    Every file and folder built gets the mode a new one gets here (the umask's), whatever the
    library that wrote it chose, so that another user can read the output as they read the rest.
    Into an existing folder the entries move one by one, ``last`` (a run's contract) after all the
    others: a crash in the middle never leaves the entry that declares the output complete beside
    only part of it (the rest stays in the ``.NAME.partial-*`` folder, which the next command on
    ``out`` names).
    """
    with output_lock(out, what) as out:
        if out.exists() and (not out.is_dir() or any(out.iterdir())):  # another writer finished first
            raise ValueError(f"{what} {str(out)!r} was written by another process meanwhile; nothing was "
                             "overwritten")
        remove_stale(out.parent, f".{out.name}.partial-")
        with temporary_folder(f".{out.name}.partial-", out.parent, stands_for=out) as tmp:
            if not out.exists():
                umask = os.umask(0o22)
                os.umask(umask)
                tmp.chmod(0o777 & ~umask)  # mkdtemp makes it private; a new folder gets the usual mode
            yield tmp
            _usual_modes(tmp)
            with signals_held():
                if out.exists():
                    for child in sorted(tmp.iterdir(), key=lambda child: (child.name == last, child.name)):
                        child.rename(out / child.name)
                else:
                    tmp.rename(out)
                COMMITTED.append(out)


def _usual_modes(folder: Path) -> None:
    """Give every file and folder under ``folder`` the mode a new one gets from the umask (a library
    that wrote a file private, 0600, does not keep another user from reading the output)."""
    umask = os.umask(0o22)
    os.umask(umask)
    for root, dirs, names in os.walk(folder):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o777 & ~umask, follow_symlinks=False)
        for name in names:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, (0o777 if os.stat(path).st_mode & 0o100 else 0o666) & ~umask)


def move_together(staged: Path, folder: Path, names: list[str]) -> None:
    """Move the files ``names`` from ``staged`` into ``folder`` (replacing any there), in order, with
    the stop signals held. The last one is the commit: if a move fails, the ones already moved are
    removed again, so ``folder`` gains nothing (its last file, replaced atomically, is unchanged)."""
    moved = []
    with signals_held():
        try:
            for name in names:
                os.replace(staged / name, folder / name)
                moved.append(folder / name)
            COMMITTED.append(folder)
        except OSError as err:
            for path in moved:
                with contextlib.suppress(OSError):
                    path.unlink()
            raise _relocated(err, staged, folder) from err


def write_json(path: Path, obj) -> str:
    """Write ``obj`` as indented UTF-8 JSON with a final newline, whole or not at all (a hidden
    sibling renamed into place); return the SHA-256 of the bytes written. A failed write names
    ``path`` and leaves nothing."""
    path = Path(path)
    data = (json.dumps(obj, indent=1, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with signals_held():
            f = open(tmp, "xb")
            _LEFT[str(tmp)] = "file"
        with named(path), f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        with signals_held():
            os.replace(tmp, path)
            _LEFT.pop(str(tmp), None)
    except OSError as err:
        moved = _relocated(err, tmp, path)
        if moved is err:
            raise
        raise moved from err
    finally:
        if str(tmp) in _LEFT:
            _remove(str(tmp), "file")
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: str | Path) -> str:
    """SHA-256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
