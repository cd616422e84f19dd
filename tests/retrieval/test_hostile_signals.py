"""Stop signals at random moments of every writing command: make-data, baseline --out, train,
search --queries --out and evaluate each get SIGINT or SIGTERM after a delay drawn from a seeded
generator, from the first milliseconds (Python still importing) to past their end.

Whenever it lands, the command either finished (exit 0, its output whole) or stopped with one
line and 128 + the signal's number (or, in the interpreter's own first milliseconds, before any
line of the package runs, was ended by the signal itself), leaving its output absent and nothing else behind (no lock, no
partial folder, nothing in the temporary folder); and the next command on the same output does
what it would have done anyway: completes, or refuses to overwrite a finished output.

One seed per command runs in ``make test``; ``LABS_SIGNAL_SEEDS=N`` runs N per command.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path

import pytest

from labs.retrieval.contract import verify_contract
from tests.retrieval.conftest import environment, finish, left_in, messages, start, train_args

SEEDS = range(int(os.environ.get("LABS_SIGNAL_SEEDS", "1")))

#: command -> the longest delay drawn, in seconds (about its length on a loaded 2-core machine; a
#: faster machine finishes first more often, which the test checks as well)
LONGEST = {"make-data": 3.0, "baseline": 5.0, "search": 15.0, "evaluate": 20.0, "train": 40.0}


def _argv(command: str, tmp_path: Path, data_dir: Path, run: Path, tiny_qwen: Path) -> tuple[list, Path]:
    """The command's arguments and the output it writes."""
    if command == "make-data":
        out = tmp_path / "data"
        return ["make-data", "--out", out], out
    if command == "baseline":
        out = tmp_path / "m.json"
        return ["baseline", "--data", data_dir, "--out", out], out
    if command == "search":
        asked = tmp_path / "ask.jsonl"
        asked.write_text("".join(json.dumps({"id": f"q{i}", "text": f"reset my password {i}"}) + "\n"
                                 for i in range(20)))
        out = tmp_path / "results.jsonl"
        return ["search", run, "--queries", asked, "--out", out, "--k", "3"], out
    if command == "evaluate":
        return ["evaluate", run, "--data", data_dir], run / "val_metrics.json"
    out = tmp_path / "trained"  # (tmp_path / "run" is the sealed run's copy)
    return train_args(data_dir, out, tiny_qwen), out


def _whole(command: str, out: Path) -> bool:
    """Whether ``out`` is there, complete."""
    if not out.exists():
        return False
    if command == "make-data":
        assert sorted(p.name for p in out.iterdir()) == ["corpus.jsonl", "queries.jsonl", "train_pairs.jsonl"]
    elif command in ("baseline", "evaluate"):
        assert json.loads(out.read_text())
    elif command == "search":
        assert len(out.read_text().splitlines()) == 20
    else:
        verify_contract(out)
    if command == "evaluate":
        verify_contract(out.parent)  # the evaluation recorded in the contract
    return True


def _left(folder: Path, keep: set[str]) -> list[str]:
    return [p for p in left_in(folder) if Path(p).name not in keep]


@pytest.mark.e2e
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("command", list(LONGEST))
def test_a_signal_at_a_random_moment_leaves_the_output_whole_or_absent(tmp_path, data_dir, run, tiny_qwen,
                                                                       command, seed):
    rng = random.Random(f"{command}-{seed}")
    signum = rng.choice([signal.SIGINT, signal.SIGTERM])
    delay = rng.uniform(0.0, LONGEST[command])
    argv, out = _argv(command, tmp_path, data_dir, run, tiny_qwen)
    tmp = tmp_path / "tmp"
    before = set(os.listdir(out.parent)) | {"tmp", "tmp2", "val_rankings.json"}  # evaluate writes two files
    child = start(argv, tmp)
    time.sleep(delay)
    child.send_signal(signum)
    code, _, lines = finish(child, [])
    said = messages(lines)
    where = f"{command}, {signal.Signals(signum).name} after {delay:.3f} s: exit {code}, said {said[-5:]}"
    assert "Traceback" not in "\n".join(lines), where
    if code == 0:  # it had finished: the signal changed nothing
        assert _whole(command, out), where
    elif code == -signum:  # before Python ran a line of it (the interpreter starting): killed, nothing made
        assert said == [] and not out.exists(), where
    else:
        assert code == 128 + signum and len([s for s in said if s.startswith("interrupted by")]) == 1, where
        assert said[-1].startswith(f"interrupted by {signal.Signals(signum).name}"), where
        assert not _whole(command, out), where
    assert _left(out.parent, before | {out.name}) == [] and left_in(tmp) == [], where

    # the next command on the same output: completes, or refuses to overwrite what is finished
    again = start(argv, tmp_path / "tmp2")
    code2, _, lines2 = finish(again, [])
    if code == 0:
        assert code2 == 2 and len(messages(lines2)) >= 1, (where, lines2[-3:])
    else:
        assert code2 == 0, (where, lines2[-5:])
    assert _whole(command, out), where
    assert _left(out.parent, before | {out.name}) == [] and left_in(tmp_path / "tmp2") == [], where
