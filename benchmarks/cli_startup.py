"""Benchmark: how long ``python -m labs`` takes to print its help, its version or a refusal,
beside ``python -c pass`` (the interpreter alone) in the same run.

The command line imports torch, transformers and sentence-transformers only when a command
needs them, so each of these should cost a few times the bare interpreter, not the 2 s torch
takes to import (tests/retrieval/test_cli_flags.py checks that none of them imports torch).
One run each, in a fresh process, after one unmeasured warm-up of each (the disk cache).

    python benchmarks/cli_startup.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, check=False)
    return time.perf_counter() - start


def main() -> int:
    out = Path(tempfile.mkdtemp(prefix="cli-startup-")) / "run"
    cases = {
        "python -c pass": ["-c", "pass"],
        "python -m labs --help": ["-m", "labs", "--help"],
        "python -m labs --version": ["-m", "labs", "--version"],
        "python -m labs train --help": ["-m", "labs", "train", "--help"],
        "python -m labs train --bogus (refused)": ["-m", "labs", "train", "--bogus"],
        "python -m labs train ... --lr inf (refused)": ["-m", "labs", "train", "--data", "d", "--out", str(out),
                                                         "--lr", "inf"],
    }
    for argv in cases.values():  # warm-up: the files in the disk cache, as on a second call
        seconds(argv)
    timed = {name: seconds(argv) for name, argv in cases.items()}
    bare = timed["python -c pass"]
    print(f"{'command':46} {'seconds':>8} {'x python -c pass':>17}")
    for name, took in timed.items():
        print(f"{name:46} {took:8.3f} {took / bare:17.1f}")
    print(f"slowest refusal or help: {max(v for k, v in timed.items() if k != 'python -c pass'):.3f} s "
          "(the aim: under 0.5 s on the course's 2-core machine)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
