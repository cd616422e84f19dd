"""Run one command and record its wall and CPU time for `make test`'s performance summary.

    python tools/timed.py FOLDER KEY COMMAND [ARG ...]

Writes FOLDER/KEY.json, ``{"KEY_s": wall seconds, "KEY_cpu_s": CPU seconds}``, and exits with the
command's status. The CPU time is user plus system time of the command and of every process it
waited for (``getrusage(RUSAGE_CHILDREN)``), on all cores together: on a loaded machine the wall
time grows and the CPU time barely moves, so a change can be judged by it. A process left to run
after its parent ended (a daemon) is not counted. Standard library only: `make test` runs it before
the course's environment exists.
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
import time
from pathlib import Path


def cpu_of_children() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def main(argv: list[str]) -> int:
    if len(argv) < 3 or not re.fullmatch(r"[a-z_]+", argv[1]):
        print("usage: python tools/timed.py FOLDER KEY COMMAND [ARG ...] (KEY: lower-case letters and '_')",
              file=sys.stderr)
        return 2
    folder, key, command = Path(argv[0]), argv[1], argv[2:]
    start, cpu = time.monotonic(), cpu_of_children()
    try:
        code = subprocess.call(command)
    except OSError as err:
        print(f"tools/timed.py: cannot run {command[0]!r}: {err.strerror}", file=sys.stderr)
        return 127
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
