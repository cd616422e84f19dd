"""Outputs a hostile-but-realistic user could still lose or damage, and the command line's last
tracebacks: a sealed run written by another command, writers of one output that did not share its
lock (torchrun's other processes included), a closed standard output, a crash in the middle of moving
a finished run into an existing folder, a private model file, compile caches left in the system's
temporary folder, an endless plan of epochs, and stop signals at the edges of a command's life."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import labs.retrieval.training
from labs.retrieval import files
from labs.retrieval.contract import verify_contract
from labs.retrieval.training import MAX_PLANNED_PAIRS
from tests.retrieval.conftest import ROOT, cli, environment, finish, left_in, messages, one_line, start, train_args


# ---- a sealed run is written only by evaluate ----------------------------------------------------


@pytest.mark.parametrize("command", ["baseline", "make-data", "train"])
def test_no_command_writes_into_a_sealed_run(capsys, run, data_dir, tiny_qwen, monkeypatch, command):
    monkeypatch.setattr(labs.retrieval.training, "train", lambda *_: pytest.fail("train started"))
    argv = {"baseline": ["baseline", "--data", str(data_dir), "--out", str(run / "baseline.json")],
            "make-data": ["make-data", "--out", str(run / "best" / "data")],
            "train": train_args(data_dir, run / "again", tiny_qwen)}[command]
    code, _, err = cli(capsys, *argv)
    assert code == 2 and f"is inside the finished run folder '{run}'" in one_line(err)
    verify_contract(run)  # untouched: still searchable


# ---- one lock per output, whoever writes it --------------------------------------------------------

HOLD = """
import sys
from pathlib import Path
from labs.retrieval import files
out = Path(sys.argv[1])
with files.exclusive(out.parent / f".{out.name}.lock", "--out"):
    print("held", flush=True)
    sys.stdin.read()
"""


def _holder(out: Path, tmp: Path, launch: str = "") -> subprocess.Popen:
    """Another process holding ``out``'s lock (as a running train does) until its stdin closes."""
    env = {**environment(tmp), "TORCHELASTIC_RUN_ID": launch, "RANK": "0"}
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    return child


@pytest.mark.parametrize("command", ["make-data", "baseline", "train"])
def test_every_writer_is_refused_at_once_while_another_process_holds_the_output(capsys, tmp_path, data_dir,
                                                                                  tiny_qwen, monkeypatch, command):
    """Before anything is read or loaded: baseline used to score first and train to import torch and
    its trainer first, so that a make-data started meanwhile finished and the run was lost at its end."""
    monkeypatch.setattr(labs.retrieval.training, "train", lambda *_: pytest.fail("train started"))
    out = tmp_path / ("m.json" if command == "baseline" else "out")
    holder = _holder(out, tmp_path / "tmp")
    try:
        argv = {"make-data": ["make-data", "--out", str(out)],
                "baseline": ["baseline", "--data", str(tmp_path / "no-data-yet"), "--out", str(out)],
                "train": train_args(data_dir, out, tiny_qwen)}[command]
        code, _, err = cli(capsys, *argv)
    finally:
        holder.communicate("")
    assert code == 2 and "is being written by another process now" in one_line(err)
    assert not out.exists()


def test_torchrun_processes_other_than_rank_0_check_the_lock_at_start(capsys, tmp_path, data_dir, tiny_qwen,
                                                                      monkeypatch):
    """Rank 1 of a launch is refused at once when another launch holds --out; its own rank 0's lock
    (the same launch id) lets it pass."""
    started = []
    monkeypatch.setattr(labs.retrieval.training, "train", lambda config: started.append(config) or None)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "launch-a")
    out = tmp_path / "run"
    holder = _holder(out, tmp_path / "tmp", launch="launch-b")
    try:
        code, _, err = cli(capsys, *train_args(data_dir, out, tiny_qwen))
    finally:
        holder.communicate("")
    assert code == 2 and "is being written by another process now" in one_line(err) and not started
    holder = _holder(out, tmp_path / "tmp", launch="launch-a")
    try:
        code, _, err = cli(capsys, *train_args(data_dir, out, tiny_qwen))
    finally:
        holder.communicate("")
    assert code == 0 and err == "" and len(started) == 1


# ---- a closed standard output ----------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.parametrize("command", ["make-data", "baseline"])
def test_a_closed_standard_output_is_no_error(tmp_path, data_dir, command):
    """``>&-``: the command writes its output and exits 0 (what it prints goes nowhere), no traceback,
    and nothing the command opens takes the closed descriptor's number."""
    out = tmp_path / ("m.json" if command == "baseline" else "d")
    argv = ["make-data", "--out", out] if command == "make-data" else ["baseline", "--data", data_dir, "--out", out]
    child = subprocess.run([sys.executable, "-m", "labs", *map(str, argv)], cwd=ROOT, env=environment(tmp_path / "t"),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           preexec_fn=lambda: os.close(1), timeout=300)
    assert child.returncode == 0 and child.stderr == ""
    if command == "baseline":
        assert json.loads(out.read_text())["split"] == "val"
    else:
        assert sorted(p.name for p in out.iterdir()) == ["corpus.jsonl", "queries.jsonl", "train_pairs.jsonl"]


# ---- a finished run moved into an existing folder: the contract last; modes as usual --------------------


def test_the_contract_moves_into_an_existing_out_after_everything_it_lists(tmp_path, monkeypatch):
    out = tmp_path / "run"
    out.mkdir()
    moved = []
    rename = Path.rename
    monkeypatch.setattr(Path, "rename", lambda self, target: moved.append(Path(target).name) or rename(self, target))
    with files.build_atomically(out, "--out", last="index_contract.json") as tmp:
        for name in ("best", "corpus_ids.json", "index_contract.json", "metrics.json", "validation_rankings.json"):
            (tmp / name).write_text("x")
    assert moved[-1] == "index_contract.json" and len(moved) == 5
    assert labs.retrieval.training.CONTRACT == "index_contract.json"


def test_a_run_split_by_a_crash_in_its_move_is_named_on_the_next_run(capsys, tmp_path, data_dir, tiny_qwen,
                                                                     monkeypatch):
    monkeypatch.setattr(labs.retrieval.training, "train", lambda *_: pytest.fail("train started"))
    out = tmp_path / "run"
    out.mkdir()
    (out / "best").mkdir()  # moved in before the crash ...
    partial = tmp_path / ".run.partial-k2j4x9"
    partial.mkdir()
    (partial / "metrics.json").write_text("{}")  # ... the rest still in the partial folder
    code, _, err = cli(capsys, *train_args(data_dir, out, tiny_qwen))
    line = one_line(err)
    assert code == 2 and "is not empty" in line and str(partial) in line and "remove both" in line


def test_a_file_a_library_wrote_private_gets_the_usual_mode(tmp_path):
    umask = os.umask(0o22)
    os.umask(umask)
    with files.build_atomically(tmp_path / "out") as tmp:
        (tmp / "sub").mkdir(mode=0o700)
        (tmp / "sub" / "model.safetensors").write_bytes(b"w")
        os.chmod(tmp / "sub" / "model.safetensors", 0o600)
        (tmp / "metrics.json").write_text("{}")
    for path in (tmp_path / "out" / "sub" / "model.safetensors", tmp_path / "out" / "metrics.json"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE((tmp_path / "out" / "sub").stat().st_mode) == 0o777 & ~umask


def test_a_trained_run_has_one_file_mode(run_dir):
    modes = {stat.S_IMODE(p.stat().st_mode) for p in run_dir.rglob("*") if p.is_file()}
    assert len(modes) == 1, modes


def test_trains_compile_caches_live_in_its_own_scratch_folder(capsys, tmp_path, data_dir, tiny_qwen, monkeypatch):
    for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    seen = {}

    def train(config):
        seen.update((name, os.environ.get(name)) for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"))
        Path(seen["TORCHINDUCTOR_CACHE_DIR"]).mkdir(parents=True)  # as torch does when it compiles
        return None

    monkeypatch.setattr(labs.retrieval.training, "train", train)
    code, _, err = cli(capsys, *train_args(data_dir, tmp_path / "run", tiny_qwen))
    assert code == 0 and err == "" and all(seen.values())
    assert not any(Path(path).exists() for path in seen.values())  # removed with the command's scratch
    assert "TORCHINDUCTOR_CACHE_DIR" not in os.environ


# ---- an endless plan of epochs ------------------------------------------------------------------------


@pytest.mark.parametrize("extra, message", [
    ([], "--epochs 100000000 plan "),
    (["--max-steps", "1000000000"], "--epochs 100000000 and --max-steps 1000000000 plan "),
])
def test_epochs_beyond_what_can_be_planned_are_refused_at_once(capsys, tmp_path, data_dir, tiny_qwen, monkeypatch,
                                                               extra, message):
    monkeypatch.setattr(labs.retrieval.training, "load_encoder", lambda *_: pytest.fail("the model was loaded"))
    argv = ["train", "--data", str(data_dir), "--out", str(tmp_path / "run"), "--model", str(tiny_qwen),
            "--epochs", "100000000", "--batch-size", "4", *extra]
    code, _, err = cli(capsys, *argv)
    line = one_line(err)
    per_epoch = 36  # the fixture's distinct positives, in batches of 4
    assert code == 2 and message in line and f"--epochs {MAX_PLANNED_PAIRS // per_epoch} or fewer" in line
    assert left_in(tmp_path) == []


# ---- stop signals at the edges of a command's life ----------------------------------------------------

CTRL_C_WHILE_MAIN_IMPORTS_SIGNAL = """
import builtins, os, runpy, sys, time
import _signal
real_import = builtins.__import__
def importing(name, globals=None, *args, **kwargs):
    if name == "signal" and (globals or {}).get("__name__") == "__main__":  # labs/__main__.py's first imports
        os.kill(os.getpid(), _signal.SIGINT)
        time.sleep(5)  # the handler runs here; reaching the import would be the failure
    return real_import(name, globals, *args, **kwargs)
builtins.__import__ = importing
sys.argv = ["labs", "make-data", "--out", sys.argv[1]]
runpy.run_module("labs", run_name="__main__")
"""


@pytest.mark.e2e
def test_ctrl_c_while_the_entry_point_imports_is_one_line(tmp_path):
    child = start([tmp_path / "d"], tmp_path / "tmp", script=CTRL_C_WHILE_MAIN_IMPORTS_SIGNAL)
    code, _, lines = finish(child, [])
    assert code == 130 and lines == ["interrupted by SIGINT; nothing was changed"]
    assert left_in(tmp_path) == [str(tmp_path / "tmp")]


@pytest.mark.parametrize("env, said", [({}, True), ({"TORCHELASTIC_RUN_ID": "r", "LOCAL_RANK": "0"}, True),
                                       ({"TORCHELASTIC_RUN_ID": "r", "LOCAL_RANK": "1"}, False),
                                       ({"TORCHELASTIC_RUN_ID": "r", "LOCAL_RANK": "0", "LABS_LAUNCHED": "1"}, False)],
                         ids=["alone", "torchrun-first", "torchrun-second", "launched"])
def test_a_stop_while_starting_is_said_by_the_process_the_command_line_would_let_speak(env, said):
    """A launched process stopped by its launcher while it still imports said "interrupted by SIGTERM"
    beside the first process's refusal (a second line; seen under load): the start-up handler follows
    the command line's rule (labs.retrieval.cli._speaks)."""
    from labs.retrieval import cli as cli_module

    assert cli_module._LAUNCHED == "LABS_LAUNCHED"
    clean = {k: v for k, v in os.environ.items() if k not in ("TORCHELASTIC_RUN_ID", "LOCAL_RANK", "LABS_LAUNCHED")}
    run = subprocess.run([sys.executable, "-c", "import labs.__main__ as m; m._stopped_while_starting(15, None)"],
                         capture_output=True, text=True, env={**clean, **env}, cwd=ROOT, timeout=60)
    assert run.returncode == 143
    assert run.stderr == ("interrupted by SIGTERM; nothing was changed\n" if said else "")


@pytest.mark.e2e
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["int", "term"])
def test_signals_after_search_printed_its_result_change_nothing(sealed, tmp_path, signum):
    """search has printed its result; signals while Python shuts down (torch's threads, module
    teardown) leave the exit status 0 and say nothing: the work was done."""
    child = start(["search", sealed, "How do I reset my password?", "--k", "2"], tmp_path / "tmp")
    first = child.stdout.readline()
    assert first.startswith(" 1. ")
    deadline = time.monotonic() + 60
    while child.poll() is None and time.monotonic() < deadline:
        child.send_signal(signum)
        time.sleep(0.002)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 0 and messages(err.splitlines()) == [], (child.returncode, err[-500:])


# ---- messages that name the flag, in words ----------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["search", "{run}", "q", "--k", "0"], "error: --k must be an integer >= 1, got 0"),
    (["evaluate", "{run}", "--data", "{data}", "--batch-size", "0"], "error: --batch-size must be an integer >= 1"),
    (["search", "{run}", "q", "--device", "gpu"], "error: --device must be 'cpu', 'cuda' or 'cuda:N'"),
    (["make-data", "--from-docs", "--splits", "numpy=TRAIN", "--out", "{tmp}/d"],
     "error: --splits gives 'numpy' the split 'TRAIN'; a split is train, val or test"),
])
def test_flags_are_named_as_flags(capsys, run, data_dir, tmp_path, argv, message):
    argv = [a.format(run=run, data=data_dir, tmp=tmp_path) for a in argv]
    code, _, err = cli(capsys, *argv)
    assert code == 2 and one_line(err).startswith(message)


def test_a_pickled_vectors_file_is_refused_in_words(capsys, run):
    import numpy as np

    from labs.retrieval.contract import CONTRACT, contract_digest

    np.save(run / "corpus_embeddings.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    contract = json.loads((run / CONTRACT).read_text())  # a hostile user who also rewrites the contract
    contract["files"]["corpus_embeddings.npy"] = files.file_sha256(run / "corpus_embeddings.npy")
    contract["contract_sha256"] = contract_digest(contract)
    (run / CONTRACT).write_text(json.dumps(contract))
    code, _, err = cli(capsys, "search", str(run), "reset my password")
    line = err.strip().splitlines()[-1]  # after the model's loading bar, shown unless TQDM_DISABLE is set
    assert "Traceback" not in err
    assert code == 2 and "corpus_embeddings.npy is not an array of numbers (a pickled object array" in line
    assert "allow_pickle" not in line


@pytest.mark.e2e
def test_the_qwen_hub_id_offline_and_not_cached_is_one_line(tmp_path, data_dir):
    child = start(["train", "--data", data_dir, "--out", tmp_path / "run", "--model", "Qwen/Qwen3-Embedding-0.6B",
                   "--epochs", "0"], tmp_path / "tmp", env={**environment(tmp_path / "tmp"),
                                                           "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"})
    code, _, lines = finish(child, [])
    (line,) = messages(lines)
    assert code == 2 and line.startswith("error: --model Qwen/Qwen3-Embedding-0.6B: its files are not in the")
    assert not (tmp_path / "run").exists()


# ---- train --processes N: a launch of several processes that ends as one command does -----------------


@pytest.mark.e2e
def test_a_refused_launch_of_several_processes_is_one_line(tmp_path, data_dir, tiny_qwen):
    """Under plain torchrun a refused train printed its line once per process, then the launcher's
    ChildFailedError traceback (about 40 lines, exit 1) and left torchelastic_* in the temporary
    folder; train --processes 2 says the line once and exits 2, leaving nothing."""
    out, tmp = tmp_path / "run", tmp_path / "tmp"
    holder = _holder(out, tmp_path / "holder-tmp")
    try:
        child = start([*train_args(data_dir, out, tiny_qwen), "--processes", "2"], tmp)
        code, _, lines = finish(child, [])
    finally:
        holder.communicate("")
    assert code == 2 and len(lines) == 1 and "is being written by another process now" in lines[0], lines
    assert left_in(tmp) == [] and not out.exists()


@pytest.mark.e2e
def test_a_launch_of_several_processes_trains_and_leaves_nothing_behind(tmp_path, data_dir, tiny_qwen):
    out, tmp = tmp_path / "run", tmp_path / "tmp"
    child = start([*train_args(data_dir, out, tiny_qwen), "--processes", "2"], tmp)
    code, stdout, lines = finish(child, [])
    assert code == 0 and stdout.count("selected epoch") == 1 and "2 process(es)" in stdout, lines[-20:]
    assert json.loads((out / "metrics.json").read_text())["processes"] == 2
    verify_contract(out)
    assert left_in(tmp) == []  # the launcher's log folder, the trainer's and the compile caches' scratch


@pytest.mark.parametrize("local_rank, said", [("0", True), ("1", False)])
def test_under_torchrun_a_refusal_is_said_by_the_first_process_of_the_machine(capsys, tmp_path, monkeypatch,
                                                                             local_rank, said):
    """Every process of a launch reads the same flags and files: one line, not one per process."""
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "launch-a")
    monkeypatch.setenv("LOCAL_RANK", local_rank)
    code, _, err = cli(capsys, "train", "--data", str(tmp_path / "none"), "--out", str(tmp_path / "run"),
                       "--epochs", "-1")
    assert code == 2 and (one_line(err).startswith("error: --epochs") if said else err == "")


@pytest.mark.parametrize("argv, message", [
    (["--processes", "0"], "error: --processes must be an integer >= 1, got 0"),
    (["--processes", "2"], "error: --processes starts its own processes; under torchrun leave it out"),
])
def test_processes_is_checked_before_anything_starts(capsys, tmp_path, data_dir, tiny_qwen, monkeypatch, argv,
                                                     message):
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "launch-a")
    monkeypatch.setattr(labs.retrieval.training, "train", lambda *_: pytest.fail("train started"))
    code, _, err = cli(capsys, *train_args(data_dir, tmp_path / "run", tiny_qwen), *argv)
    assert code == 2 and one_line(err).startswith(message)
