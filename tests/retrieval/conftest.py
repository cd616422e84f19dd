"""Fixtures of the retrieval tests: a sealed run folder built without training, and a fresh copy of
it for each test that breaks something.

The run is built by the same library calls as `labs.retrieval.training.train` (save the model,
`write_index`, validation rankings, metrics.json, `seal_run`) on a tiny random Qwen3.

Beside them, the helpers of the command-line tests: run ``main`` in-process (`cli`), run
``python -m labs`` as a process that can be sent real signals (`start`, `wait_for`, `finish`), and
list what a command left behind (`left_in`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from labs.retrieval.cli import main

INSTRUCTION = "Find the help article"


@pytest.fixture(scope="session")
def sealed(tmp_path_factory, tiny_qwen, data_dir) -> Path:
    from labs.retrieval.contract import seal_run
    from labs.retrieval.data import load_dataset
    from labs.retrieval.files import write_json
    from labs.retrieval.index import write_index
    from labs.retrieval.instruction import format_query
    from labs.retrieval.qwen3 import build_qwen3

    model = build_qwen3(tiny_qwen, max_length=64)
    run = tmp_path_factory.mktemp("runs") / "sealed"
    run.mkdir()
    model.prompts = {"query": format_query("", INSTRUCTION), "document": ""}
    model.save(str(run / "best"), create_model_card=False)
    data = load_dataset(data_dir)
    index = write_index(run, model, instruction=INSTRUCTION, max_length=64, source="tiny", revision=None,
                        corpus=data.corpus, corpus_sha256=data.sha256["corpus.jsonl"])
    run_files = {"validation_rankings.json": write_json(run / "validation_rankings.json", {}),
                 "metrics.json": write_json(run / "metrics.json", {"data_sha256": data.sha256})}
    seal_run(run, index.contract, data.sha256, run_files)
    return run


@pytest.fixture()
def data(tmp_path) -> Path:
    """A fresh help-desk data folder (the three JSONL files) to edit."""
    from labs.retrieval.data import write_dataset
    from labs.retrieval.helpdesk import make_helpdesk

    return write_dataset(make_helpdesk(), tmp_path / "data")


def rows_of(folder: Path, name: str) -> list[dict]:
    """The rows of one JSONL file of a data folder."""
    return [json.loads(line) for line in (folder / name).read_text(encoding="utf-8").splitlines()]


def write_rows(folder: Path, name: str, rows: list[dict]) -> None:
    """Rewrite one JSONL file of a data folder (UTF-8, characters as they are)."""
    (folder / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture()
def run(sealed, tmp_path) -> Path:
    """A fresh copy of the sealed run for one test to break."""
    return Path(shutil.copytree(sealed, tmp_path / "run"))


# ---- the command-line tests' helpers ----------------------------------------------------
ROOT = Path(__file__).resolve().parents[2]
SMALL = ["--epochs", "1", "--batch-size", "4", "--max-steps", "1"]


def cli(capsys, *argv: str) -> tuple[int, str, str]:
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
    env = kwargs.pop("env", None) or environment(tmp)
    return subprocess.Popen(head + [str(a) for a in argv], cwd=ROOT, env=env, stdout=subprocess.PIPE,
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
