"""Helpers of the command-line tests: run ``main`` in-process, run ``python -m labs`` as a process that
can be sent real signals, and list what a command left behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from labs.retrieval.cli import main

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["--epochs", "1", "--batch-size", "4", "--max-steps", "1"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """main(argv) -> (exit status, stdout, stderr); argparse's exits are caught too."""
    try:
        code = main(list(argv))
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def train_args(data_dir, out, model, *extra: str) -> list[str]:
    return ["train", "--data", str(data_dir), "--out", str(out), "--model", str(model), *SMALL, *extra]


def environment(tmp: Path) -> dict[str, str]:
    """The environment of a child ``python -m labs``: one thread, offline, its own temporary folder."""
    tmp.mkdir(exist_ok=True)
    return {**os.environ, "OMP_NUM_THREADS": "1", "TMPDIR": str(tmp), "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1", "TQDM_DISABLE": "1", "PYTHONPATH": str(ROOT)}


def start(argv: list[str], tmp: Path, *, script: str | None = None, python: tuple[str, ...] = (),
          **kwargs) -> subprocess.Popen:
    """``python -m labs ARGV`` (or ``python -c SCRIPT ARGV``) as a child whose stderr is read line by line."""
    head = [sys.executable, *python, *(["-c", script] if script else ["-m", "labs"])]
    return subprocess.Popen(head + [str(a) for a in argv], cwd=ROOT, env=environment(tmp), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def wait_for(child: subprocess.Popen, predicate, seen: list[str]) -> str:
    """Read the child's stderr until a line satisfies ``predicate``; return it (lines go to ``seen``)."""
    for line in child.stderr:
        seen.append(line.rstrip("\n"))
        if predicate(line):
            return line
    raise AssertionError(f"the child ended before the awaited line; it said: {seen[-20:]}")


def finish(child: subprocess.Popen, seen: list[str], timeout: float = 300) -> tuple[int, str, list[str]]:
    """Wait for the child; return (exit status, its stdout, every stderr line it wrote)."""
    out, err = child.communicate(timeout=timeout)
    seen += err.splitlines()
    return child.returncode, out, seen


def messages(lines: list[str]) -> list[str]:
    """The lines a user sees: without ``-X importtime`` lines and the test's own stage marks."""
    return [line for line in lines if not line.startswith(("import time:", "stage: "))]


def left_in(*folders: Path) -> list[str]:
    """Everything in ``folders`` (hidden files included), torch's own compile cache aside."""
    return sorted(str(p) for folder in folders for p in folder.iterdir() if not p.name.startswith("torchinductor"))


#: A child that prints every stage of a long command (``stage: NAME`` on stderr), so that a test
#: can send it a real signal at a chosen point; then it is the command line, as ``python -m labs``.
STAGES = """
import sys
import labs.retrieval.progress as progress
def stage(name):
    print("stage: " + name, file=sys.stderr, flush=True)
progress.stage = stage
from labs.retrieval.cli import main
sys.exit(main(sys.argv[1:]))
"""
