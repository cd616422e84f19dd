"""Run one command and record its wall and CPU time for `make test`'s performance summary.

    python tools/timed.py FOLDER KEY COMMAND [ARG ...]

Writes FOLDER/KEY.json, ``{"KEY_s": wall seconds, "KEY_cpu_s": CPU seconds}``, and exits with the
command's status. The CPU time is user plus system time of the command and of every process below
it, on all cores together: on a loaded machine the wall time grows and the CPU time barely moves, so
a change can be judged by it.

"Every process below it" includes the ones their parent never waited for. Chromium's renderers
hang below a zygote process that Chromium double-forks away from itself, so neither Playwright
nor pytest ever waits for them, and ``getrusage(RUSAGE_CHILDREN)`` alone left them out: the
browser checks' CPU read 12 s where the machine was busy for 43 s. On Linux this process makes
itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``): such orphans are handed to it instead
of to init, it reaps them as they end, and their time counts. Orphans still running a few seconds
after the command ended (a daemon) are left to run, uncounted. Standard library only: `make test`
runs it before the course's environment exists.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
LINGER_S = 5.0               # how long orphans still running after the command may take to end


def cpu_of_children() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def become_subreaper() -> bool:
    """Adopt the orphans below this process (Linux 3.4+); False where that is not possible."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def wait_for(proc: subprocess.Popen) -> int:
    """Reap every child until ``proc`` ends (adopted orphans included); its exit status."""
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode


def reap_orphans(linger: float = LINGER_S) -> None:
    """Reap the adopted orphans that end within ``linger`` seconds; leave the rest running."""
    deadline = time.monotonic() + linger
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # none left
        if pid == 0:
            if time.monotonic() >= deadline:
                return
            time.sleep(0.05)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or not re.fullmatch(r"[a-z_]+", argv[1]):
        print("usage: python tools/timed.py FOLDER KEY COMMAND [ARG ...] (KEY: lower-case letters and '_')",
              file=sys.stderr)
        return 2
    folder, key, command = Path(argv[0]), argv[1], argv[2:]
    adopts = become_subreaper()
    start, cpu = time.monotonic(), cpu_of_children()
    try:
        proc = subprocess.Popen(command)
    except OSError as err:
        print(f"tools/timed.py: cannot run {command[0]!r}: {err.strerror}", file=sys.stderr)
        return 127
    try:
        code = wait_for(proc) if adopts else proc.wait()
        if adopts:
            reap_orphans()
    except KeyboardInterrupt:
        return 130
    if code < 0:  # stopped by a signal: the shell's convention
        code = 128 - code
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{key}.json").write_text(json.dumps(
        {f"{key}_s": round(time.monotonic() - start, 1), f"{key}_cpu_s": round(cpu_of_children() - cpu, 1)}))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
