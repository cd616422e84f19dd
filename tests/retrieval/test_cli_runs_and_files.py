"""Every command completes or leaves things as they were: output paths checked before any work,
output built aside and moved in whole, a lock against a second writer, failed writes named with
their file (and a retry works), signals (INT, TERM, HUP) that clean up, print one line and exit
128 + N, and nothing temporary left anywhere, the system's temporary folder included.

The signal tests send real signals: to a child ``python -m labs`` from outside (while it imports,
at a stage of training), or from inside the command (``os.kill`` at a stage) in this process.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import labs.retrieval.training
from labs.retrieval import files, progress
from labs.retrieval.contract import verify_contract
from tests.retrieval.conftest import (
    ROOT, STAGES, cli, environment, finish, left_in, messages, one_line, start, train_args, wait_for,
)

pytestmark = pytest.mark.e2e  # fresh processes end to end (make e2e)


# ---- output paths, checked before any work ----------------------------------------------------------

def _bad_out(tmp_path: Path, kind: str) -> Path:
    if kind == "file":
        (tmp_path / "f").write_text("x")
        return tmp_path / "f"
    if kind == "under-a-file":
        (tmp_path / "f").write_text("x")
        return tmp_path / "f" / "run"
    if kind == "dangling-link":
        (tmp_path / "link").symlink_to(tmp_path / "gone")
        return tmp_path / "link"
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    return tmp_path / "full"


@pytest.mark.parametrize("kind, message", [("file", "is a file"), ("under-a-file", "which is a file"),
                                           ("dangling-link", "dangling link"), ("non-empty", "is not empty")])
def test_bad_out_is_refused_before_any_work(capsys, tmp_path, data_dir, tiny_bert, monkeypatch, kind, message):
    out = _bad_out(tmp_path, kind)
    monkeypatch.setattr(labs.retrieval.training, "load_dataset", lambda *_: pytest.fail("data read before --out was checked"))
    for argv in (["make-data", "--out", str(out)], train_args(data_dir, out, tiny_bert)):
        code, _, err = cli(capsys, *argv)
        assert code == 2 and message in one_line(err) and "--out" in err


def test_a_read_only_parent_is_refused(capsys, tmp_path, data_dir, tiny_bert, monkeypatch):
    """Checked with os.access (root may write anywhere, so the answer is stubbed for this folder)."""
    locked = tmp_path / "locked"
    locked.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != locked and real(p, mode))
    code, _, err = cli(capsys, *train_args(data_dir, locked / "run", tiny_bert))
    assert code == 2 and "is not writable" in one_line(err)


def test_baseline_out_is_checked_first_and_may_be_in_a_new_folder(capsys, tmp_path, data_dir):
    (tmp_path / "taken.json").write_text("{}")
    code, out, err = cli(capsys, "baseline", "--data", str(data_dir), "--out", str(tmp_path / "taken.json"))
    assert code == 2 and "exists" in one_line(err) and out == ""  # nothing computed, nothing printed
    code, out, _ = cli(capsys, "baseline", "--data", str(data_dir), "--out", str(tmp_path / "new" / "dir" / "m.json"))
    assert code == 0 and "bm25" in out
    assert json.loads((tmp_path / "new" / "dir" / "m.json").read_text())["split"] == "val"


# ---- a second writer, a failure, an interruption, a kill ---------------------------------------------

def test_a_second_train_on_the_same_out_fails_at_once(capsys, tmp_path, data_dir, tiny_bert, monkeypatch):
    monkeypatch.setattr(labs.retrieval.training, "load_dataset", lambda *_: pytest.fail("the second run read the data"))
    with files.build_atomically(tmp_path / "run"):  # the first run, still writing
        code, _, err = cli(capsys, *train_args(data_dir, tmp_path / "run", tiny_bert))
        assert code == 2 and "another process" in one_line(err)


def _fail_at(monkeypatch, name: str, error: BaseException) -> None:
    original = progress.stage

    def stage(current: str) -> None:
        original(current)
        if current == name:
            raise error

    monkeypatch.setattr(progress, "stage", stage)


def _signal_at(monkeypatch, name: str, signum: int) -> None:
    """At stage ``name``, the command sends itself ``signum`` (a real signal, through its handler)."""
    original = progress.stage

    def stage(current: str) -> None:
        original(current)
        if current == name:
            os.kill(os.getpid(), signum)

    monkeypatch.setattr(progress, "stage", stage)


@pytest.mark.parametrize("where, signum", [("loaded", None), ("loaded", signal.SIGTERM),
                                           ("scored epoch 1", signal.SIGHUP), ("written", signal.SIGINT)],
                         ids=["ctrl-c-raised", "term-loaded", "hup-scored", "int-written"])
def test_an_interrupted_train_leaves_nothing_and_out_stays_usable(capsys, tmp_path, data_dir, tiny_bert, monkeypatch,
                                                                   where, signum):
    out, scratch = tmp_path / "run", tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    if signum is None:
        _fail_at(monkeypatch, where, KeyboardInterrupt())
    else:
        _signal_at(monkeypatch, where, signum)
    code, _, err = cli(capsys, *train_args(data_dir, out, tiny_bert))
    name = signal.Signals(signum or signal.SIGINT).name
    assert code == 128 + (signum or signal.SIGINT)
    assert one_line(err) == f"interrupted by {name}; nothing was written to {out}"
    assert left_in(tmp_path) == [str(scratch)] and left_in(scratch) == [] and files.leftovers() == frozenset()
    for argv in (["search", str(out), "cancel"], ["evaluate", str(out), "--data", str(data_dir)]):
        code, _, err = cli(capsys, *argv)
        assert code == 2 and one_line(err)


def test_a_signal_after_the_output_is_in_place_changes_nothing(capsys, tmp_path, monkeypatch):
    """The output is complete and in place (make-data's folder, baseline's file, evaluate's record):
    a signal before the command returns is ignored, and the command reports success."""
    from labs.retrieval import data

    original = data.write_dataset

    def then_a_signal(*args, **kwargs):
        folder = original(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)
        return folder

    monkeypatch.setattr(data, "write_dataset", then_a_signal)
    code, out, err = cli(capsys, "make-data", "--out", str(tmp_path / "d"))
    assert code == 0 and err == "" and "wrote corpus.jsonl" in out
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["corpus.jsonl", "queries.jsonl", "train_pairs.jsonl"]
    write_json = files.write_json

    def written_then_a_signal(path, obj):
        digest = write_json(path, obj)
        os.kill(os.getpid(), signal.SIGTERM)
        return digest

    monkeypatch.setattr(files, "write_json", written_then_a_signal)
    code, out, err = cli(capsys, "baseline", "--data", str(tmp_path / "d"), "--out", str(tmp_path / "m.json"))
    assert code == 0 and err == "" and json.loads((tmp_path / "m.json").read_text())["split"] == "val"


def test_a_signal_after_evaluate_recorded_its_split_changes_nothing(capsys, run, data_dir, monkeypatch):
    from labs.retrieval import index

    move_together = index.move_together

    def moved_then_a_signal(*args):
        move_together(*args)
        os.kill(os.getpid(), signal.SIGHUP)

    monkeypatch.setattr(index, "move_together", moved_then_a_signal)
    code, out, err = run_evaluate(capsys, run, data_dir)
    assert code == 0 and err == "" and out.startswith("system")
    assert set(verify_contract(run)["evaluations"]) == {"val_metrics.json", "val_rankings.json"}


def test_a_failure_after_training_leaves_nothing(capsys, tmp_path, data_dir, tiny_bert, monkeypatch):
    out = tmp_path / "run"
    _fail_at(monkeypatch, "indexed", FloatingPointError("NaN in the corpus embeddings"))
    code, _, err = cli(capsys, *train_args(data_dir, out, tiny_bert))
    assert code == 1 and "NaN in the corpus embeddings" in one_line(err)
    assert list(tmp_path.iterdir()) == []


KILL = """
import os, signal, sys
import labs.retrieval.progress as progress
def stage(name):
    if name == sys.argv[1]:
        os.kill(os.getpid(), signal.SIGKILL)
progress.stage = stage
from labs.retrieval.cli import main
sys.exit(main(sys.argv[2:]))
"""


def test_a_killed_train_is_never_accepted_and_out_is_reusable(capsys, tmp_path, data_dir, tiny_bert):
    """SIGKILL after metrics.json is written, before the contract is written and the run moved into place:
    nothing at --out, nothing in the system's temporary folder (the trainer's scratch is inside the
    partial folder), the leftover partial folder is refused by search and evaluate, and the next
    train into the same --out succeeds and clears the leftover."""
    out, scratch = tmp_path / "run", tmp_path.parent / f"{tmp_path.name}-tmp"
    done = subprocess.run([sys.executable, "-c", KILL, "written", *train_args(data_dir, out, tiny_bert)],
                          capture_output=True, text=True, cwd=ROOT, env=environment(scratch), timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    assert not out.exists() and left_in(scratch) == []
    (partial,) = tmp_path.glob(".run.partial-*")
    assert (partial / "metrics.json").is_file() and not (partial / "index_contract.json").exists()  # unsealed
    for argv in (["search", str(partial), "cancel"], ["evaluate", str(partial), "--data", str(data_dir)]):
        code, _, err = cli(capsys, *argv)
        assert code == 2 and one_line(err)
    code, out_text, _ = cli(capsys, *train_args(data_dir, out, tiny_bert))
    assert code == 0 and "selected epoch" in out_text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    code, _, _ = cli(capsys, "search", str(out), "cancel")
    assert code == 0


# ---- real signals from outside, to a child python -m labs -----------------------------------------------

@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["int", "term"])
def test_a_signal_while_python_imports_is_one_line(tmp_path, data_dir, tiny_bert, signum):
    """Sent while torch is being imported (an exception raised inside a C++ extension's start would
    abort the process with a long trace, exit 134): one line, 128 + N, nothing made."""
    scratch = tmp_path / "tmp"
    child = start(train_args(data_dir, tmp_path / "run", tiny_bert), scratch, python=("-X", "importtime"))
    seen: list[str] = []
    wait_for(child, lambda line: line.split("|")[-1].strip() == "torch._C", seen)
    child.send_signal(signum)
    code, stdout, lines = finish(child, seen)
    (line,) = messages(lines)
    assert code == 128 + signum and stdout == ""
    assert line.startswith(f"interrupted by {signal.Signals(signum).name}; nothing was")
    assert left_in(tmp_path) == [str(scratch)] and left_in(scratch) == []


@pytest.mark.parametrize("stage, signum", [("scored epoch 0", signal.SIGTERM)], ids=["term-while-training"])
def test_a_signal_from_outside_during_train_cleans_up_everything(tmp_path, data_dir, tiny_bert, stage, signum):
    """SIGTERM from another process (a job scheduler; SIGHUP from a closed terminal is the same path,
    sent from inside in test_an_interrupted_train_leaves_nothing...) while training: one line,
    128 + N, no run folder, no lock, no partial folder, no trainer scratch anywhere."""
    scratch, out = tmp_path / "tmp", tmp_path / "run"
    child = start(train_args(data_dir, out, tiny_bert), scratch, script=STAGES)
    seen: list[str] = []
    wait_for(child, lambda line: line.strip() == f"stage: {stage}", seen)
    child.send_signal(signum)
    code, stdout, lines = finish(child, seen)
    assert code == 128 + signum, lines
    assert messages(lines) == [f"interrupted by {signal.Signals(signum).name}; nothing was written to {out}"]
    assert left_in(tmp_path) == [str(scratch)] and left_in(scratch) == []


CTRL_C_WHILE_IMPORTING_THE_CLI = """
import builtins, os, runpy, signal, sys, time
real_import = builtins.__import__
def importing(name, *args, **kwargs):
    if name == "labs.retrieval.cli":  # Ctrl-C lands while Python imports the command line
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)  # the handler runs here; reaching the import would be the failure
    return real_import(name, *args, **kwargs)
builtins.__import__ = importing
sys.argv = ["labs", "make-data", "--out", sys.argv[1]]
runpy.run_module("labs", run_name="__main__")
"""


def test_ctrl_c_before_the_command_line_is_imported_is_one_line(tmp_path):
    child = start([tmp_path / "d"], tmp_path / "tmp", script=CTRL_C_WHILE_IMPORTING_THE_CLI)
    code, _, lines = finish(child, [])
    assert code == 130 and lines == ["interrupted by SIGINT; nothing was changed"]
    assert left_in(tmp_path) == [str(tmp_path / "tmp")]


SECOND_SIGNAL = STAGES.replace("progress.stage = stage", """progress.stage = stage
import os, signal, shutil
from labs.retrieval import files
def first(name):
    stage(name)
    if name == "loaded":
        os.kill(os.getpid(), signal.SIGTERM)
progress.stage = first
remove, sent = files._remove, []
def second_while_cleaning(path, kind):
    if not sent:  # a second TERM while the first one unwinds, before anything is removed
        sent.append(path)
        os.kill(os.getpid(), signal.SIGTERM)
    remove(path, kind)
files._remove = second_while_cleaning""")


def test_a_second_signal_while_the_first_unwinds_still_leaves_nothing(tmp_path, data_dir, tiny_bert):
    scratch, out = tmp_path / "tmp", tmp_path / "run"
    child = start(train_args(data_dir, out, tiny_bert), scratch, script=SECOND_SIGNAL)
    code, stdout, lines = finish(child, [])
    assert code == 128 + signal.SIGTERM, lines
    assert messages(lines) == [f"interrupted by SIGTERM; nothing was written to {out}"]
    assert left_in(tmp_path) == [str(scratch)] and left_in(scratch) == []


# ---- failed writes: named, nothing left, a retry works ----------------------------------------------------

def _file_size_limit(size: int):
    def limit() -> None:  # runs in the child: like ``ulimit -f``
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return limit


def test_make_data_under_a_file_size_limit_names_the_file_and_a_retry_works(capsys, tmp_path):
    out = tmp_path / "new" / "data"
    child = start(["make-data", "--out", out], tmp_path / "tmp", preexec_fn=_file_size_limit(4096))
    code, stdout, lines = finish(child, [])
    (line,) = messages(lines)
    assert code == 1 and line.startswith(f"error: {out}/") and "File too large; nothing was left half-written" in line
    assert left_in(tmp_path) == [str(tmp_path / "tmp")]  # not even the new parent folder
    code, stdout, _ = cli(capsys, "make-data", "--out", str(out))
    assert code == 0 and sorted(p.name for p in out.iterdir()) == ["corpus.jsonl", "queries.jsonl", "train_pairs.jsonl"]


def test_evaluate_under_a_file_size_limit_changes_nothing_and_a_retry_works(capsys, run, data_dir, tmp_path):
    before = sorted(p.name for p in run.iterdir())
    contract = (run / "index_contract.json").read_bytes()
    child = start(["evaluate", run, "--data", data_dir], tmp_path / "tmp", preexec_fn=_file_size_limit(4096))
    code, _, lines = finish(child, [])
    (line,) = messages(lines)
    assert code == 1 and f"{run}/val_rankings.json: File too large" in line
    assert sorted(p.name for p in run.iterdir()) == before and (run / "index_contract.json").read_bytes() == contract
    assert left_in(tmp_path) == [str(run), str(tmp_path / "tmp")]
    code, out, _ = run_evaluate(capsys, run, data_dir)
    assert code == 0 and verify_contract(run)["evaluations"].keys() == {"val_metrics.json", "val_rankings.json"}


def run_evaluate(capsys, run_folder, data_dir, *extra):
    return cli(capsys, "evaluate", str(run_folder), "--data", str(data_dir), *extra)


@pytest.mark.parametrize("fail_on", [2, 3], ids=["metrics", "contract"])  # rankings: the size-limit test
def test_a_failed_evaluate_write_changes_nothing_and_the_split_can_be_evaluated_again(capsys, run, data_dir,
                                                                                      monkeypatch, fail_on):
    from labs.retrieval import index

    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    calls = []
    write_json = index.write_json

    def full_disk(path, obj):
        calls.append(path)
        if len(calls) == fail_on:
            raise OSError(28, "No space left on device", str(path))
        return write_json(path, obj)

    monkeypatch.setattr(index, "write_json", full_disk)
    code, _, err = run_evaluate(capsys, run, data_dir)
    assert code == 1 and "No space left on device; nothing was left half-written" in one_line(err)
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before
    assert left_in(run.parent) == [str(run)]
    monkeypatch.undo()
    (run.parent / ".run.eval-killed").mkdir()  # what a killed evaluate leaves: the next one removes it
    assert run_evaluate(capsys, run, data_dir)[0] == 0
    assert left_in(run.parent) == [str(run)]
    code, _, err = run_evaluate(capsys, run, data_dir)
    assert code == 2 and "the val split was evaluated already" in one_line(err)


# ---- one writer at a time ----------------------------------------------------------------------------------

def test_two_make_data_at_once_one_wins_the_other_is_refused(tmp_path):
    out = tmp_path / "data"
    children = [start(["make-data", "--out", out], tmp_path / "tmp") for _ in range(2)]
    results = sorted((finish(child, []) for child in children), key=lambda r: r[0])
    assert [code for code, _, _ in results] == [0, 2]
    (line,) = messages(results[1][2])
    assert "--out" in line and ("another process" in line or "is not empty" in line)
    assert sorted(p.name for p in out.iterdir()) == ["corpus.jsonl", "queries.jsonl", "train_pairs.jsonl"]
    assert left_in(tmp_path) == [str(out), str(tmp_path / "tmp")]


def test_a_second_evaluate_of_the_same_run_is_refused_while_the_first_runs(capsys, run, data_dir):
    with files.exclusive(run.parent / f".{run.name}.lock", "the first evaluate"):
        code, _, err = run_evaluate(capsys, run, data_dir)
        assert code == 2 and "is being written by another process now" in one_line(err)
    assert verify_contract(run)["evaluations"] == {}


def test_make_data_and_baseline_refuse_a_second_writer(capsys, tmp_path, data_dir):
    with files.build_atomically(tmp_path / "d"):
        code, _, err = cli(capsys, "make-data", "--out", str(tmp_path / "d"))
        assert code == 2 and "another process" in one_line(err)
    with files.exclusive(tmp_path / ".m.json.lock", "the first baseline"):
        code, _, err = cli(capsys, "baseline", "--data", str(data_dir), "--out", str(tmp_path / "m.json"))
        assert code == 2 and "another process" in one_line(err)
    assert not (tmp_path / "m.json").exists()


# ---- what the tool did not create, it does not change --------------------------------------------------

def test_out_dot_fills_the_working_folder_and_keeps_it(capsys, tmp_path, data_dir, tiny_bert, monkeypatch):
    """An existing empty folder (here the working folder, with its own mode) is kept: same inode, same
    mode; the files are moved into it."""
    for name, argv in (("d", ["make-data", "--out", "."]),
                       ("r", ["train", "--data", str(data_dir), "--out", ".", "--model", str(tiny_bert), "--epochs",
                              "0"])):
        folder = tmp_path / name
        folder.mkdir()
        folder.chmod(0o2750)
        before = os.stat(folder)
        monkeypatch.chdir(folder)
        code, _, err = cli(capsys, *argv)
        assert code == 0, err
        after = os.stat(folder)
        assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
        assert len(list(folder.iterdir())) >= 3 and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    verify_contract(tmp_path / "r")


@pytest.mark.parametrize("command", ["make-data", "train", "baseline"])
def test_an_out_name_too_long_for_the_file_system_is_bad_input(capsys, tmp_path, data_dir, tiny_bert, command):
    out = tmp_path / ("x" * 300)
    argv = {"make-data": ["make-data", "--out", str(out)], "train": train_args(data_dir, out, tiny_bert),
            "baseline": ["baseline", "--data", str(data_dir), "--out", str(out)]}[command]
    code, _, err = cli(capsys, *argv)
    line = one_line(err)
    assert code == 2 and "--out" in line and "the name is 300 bytes long; at most" in line
    room = tmp_path / ("y" * 237)  # the longest that leaves room for '.NAME.partial-XXXXXXXX'
    assert cli(capsys, "make-data", "--out", str(room))[0] == 0
    assert left_in(tmp_path) == [str(room)]


@pytest.mark.parametrize("out, message", [("/", "is the root folder"), ("new/..", "is not empty"),
                                          ("", "--out is empty")])
def test_out_paths_that_name_no_new_folder(capsys, tmp_path, monkeypatch, out, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("mine")
    code, _, err = cli(capsys, "make-data", "--out", out)
    assert code == 2 and message in one_line(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_missing_parent_folders_are_made_and_removed_again_when_the_command_fails(capsys, tmp_path, monkeypatch):
    from labs.retrieval import data

    monkeypatch.setattr(data, "named", lambda path: _raising(OSError(28, "No space left on device", str(path))))
    code, _, err = cli(capsys, "make-data", "--out", str(tmp_path / "a" / "b" / "data"))
    assert code == 1 and "a/b/data/corpus.jsonl: No space left on device" in one_line(err)
    assert list(tmp_path.iterdir()) == []


class _raising:
    """A context manager that raises ``error`` when entered."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __enter__(self):
        raise self.error

    def __exit__(self, *exc) -> bool:
        return False


def test_the_command_line_runs_from_a_thread_that_cannot_set_signal_handlers(tmp_path):
    import threading

    from labs.retrieval.cli import main

    codes = []
    worker = threading.Thread(target=lambda: codes.append(main(["make-data", "--out", str(tmp_path / "d")])))
    worker.start()
    worker.join()
    assert codes == [0] and len(list((tmp_path / "d").iterdir())) == 3


def test_baseline_removes_what_a_killed_baseline_left_and_writes_whole(capsys, tmp_path, data_dir):
    (tmp_path / ".m.json.tmp-99999").write_text('{"half": ')
    code, _, _ = cli(capsys, "baseline", "--data", str(data_dir), "--out", str(tmp_path / "m.json"))
    assert code == 0 and left_in(tmp_path) == [str(tmp_path / "m.json")]


def test_a_reader_that_goes_away_stops_the_command_quietly(tmp_path, monkeypatch, capsys):
    """``python -m labs search RUN q | head -1``: the pipe closes; exit 141 (128 + SIGPIPE) without a
    traceback, and what was written stays whole."""
    from labs.retrieval.cli import main

    class ClosedPipe:
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            pass

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["make-data", "--out", str(tmp_path / "d")]) == 141
    monkeypatch.undo()
    assert capsys.readouterr().err == "" and len(list((tmp_path / "d").iterdir())) == 3
