"""The command line under bad input and faults: one line per error, the right exit status, checks
before any expensive work, and runs that are written whole or not at all.

Exit status: 2 bad input or usage, 1 a failed run, 130 interrupted. The data checks themselves
(file and line of a bad row) are tested in test_helpdesk.py, the contract's in test_index.py;
here they are seen through the command line.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import labs.retrieval.training
from labs.retrieval import files, progress
from labs.retrieval.cli import main

ROOT = Path(__file__).resolve().parents[2]
LABS = ROOT / "labs"
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


# ---- the package's shape -------------------------------------------------------------------------

def _imports(path: Path) -> list[tuple[str, list[str], bool]]:
    """(module, names, inside an ``if __name__ == "__main__"`` block) for every import in a file."""
    tree, found = ast.parse(path.read_text()), []
    guarded = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
               for n in ast.walk(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.module, [a.name for a in node.names], id(node) in guarded))
        elif isinstance(node, ast.Import):
            found += [(a.name, [], id(node) in guarded) for a in node.names]
    return found


def test_no_library_module_imports_the_command_line_or_private_names():
    for path in sorted(LABS.glob("*.py")):
        for module, names, guarded in _imports(path):
            if module == "labs.retrieval.cli" and path.name != "__main__.py":
                assert guarded, f"{path.name} imports the command line"
            if module.startswith("labs"):
                assert not [n for n in names if n.startswith("_")], f"{path.name}: private import from {module}"


def test_no_import_cycles_and_nothing_unix_only_at_import():
    graph = {}
    for path in LABS.glob("*.py"):
        tree = ast.parse(path.read_text())
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        for node in top:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            assert not {"resource", "fcntl", "msvcrt"} & set(names), f"{path.name}: Unix/Windows-only import at top"
        everywhere = [m for m, _, guarded in _imports(path) if m.startswith("labs.") and not guarded]
        graph[f"labs.{path.stem}"] = {m for m in everywhere if m != f"labs.{path.stem}"}

    def visit(node, trail):
        assert node not in trail, f"import cycle: {' -> '.join([*trail, node])}"
        for nxt in graph.get(node, ()):
            visit(nxt, [*trail, node])

    for name in graph:
        visit(name, [])


def test_python_m_labs_help_runs():
    done = subprocess.run([sys.executable, "-m", "labs", "--help"], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0 and "make-data" in done.stdout and "evaluate" in done.stdout


# ---- usage: one line, exit 2, before any work -----------------------------------------------------

@pytest.mark.parametrize("flag, value, allowed", [
    ("--lr", "inf", "finite number > 0"), ("--lr", "nan", "finite number > 0"), ("--lr", "0", "finite number > 0"),
    ("--lr", "-1e-5", "finite number > 0"), ("--scale", "0", "finite number > 0"),
    ("--max-steps", "-5", "integer >= 1"), ("--max-steps", "0", "integer >= 1"), ("--batch-size", "1", "integer >= 2"),
    ("--epochs", "-1", "integer >= 0"), ("--max-length", "4", "integer >= 8"), ("--seed", "1.5", "invalid int value"), ("--seed", "4294967296", "integer from 0 to 4294967295"),
    ("--attn", "flash", "invalid choice"), ("--device", "tpu", "'cpu', 'cuda' or 'cuda:N'"),
    ("--scale", "1e300", "at most 1000"),
])
def test_a_flag_out_of_range_is_one_line_naming_it(capsys, tmp_path, flag, value, allowed):
    code, _, err = run(capsys, "train", "--data", str(tmp_path), "--out", str(tmp_path / "r"), f"{flag}={value}")
    line = one_line(err)
    assert code == 2 and flag in line and allowed in line


def test_usage_errors_are_one_line(capsys, tmp_path):
    for argv in (["no-such-command"], ["search", str(tmp_path), "q", "--k", "0"], ["train", "--data", "x"],
                 ["evaluate", str(tmp_path), "--data", str(tmp_path), "--batch-size", "0"]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and one_line(err)


@pytest.mark.parametrize("command", ["make-data", "baseline", "train", "search", "evaluate"])
def test_help_lists_the_debug_flag(capsys, command):
    code, out, _ = run(capsys, command, "--help")
    assert code == 0 and "--debug" in out


def test_train_help_documents_the_gpu_flags(capsys):
    code, out, _ = run(capsys, "train", "--help")
    for flag in ("--gradient-checkpointing", "--attn", "--precision", "--loss", "--mini-batch-size", "--max-steps"):
        assert flag in out


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
        code, _, err = run(capsys, *argv)
        assert code == 2 and message in one_line(err) and "--out" in err


def test_a_read_only_parent_is_refused(capsys, tmp_path, data_dir, tiny_bert, monkeypatch):
    """Checked with os.access (root may write anywhere, so the answer is stubbed for this folder)."""
    locked = tmp_path / "locked"
    locked.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != locked and real(p, mode))
    code, _, err = run(capsys, *train_args(data_dir, locked / "run", tiny_bert))
    assert code == 2 and "is not writable" in one_line(err)


def test_baseline_out_is_checked_first_and_may_be_in_a_new_folder(capsys, tmp_path, data_dir):
    (tmp_path / "taken.json").write_text("{}")
    code, out, err = run(capsys, "baseline", "--data", str(data_dir), "--out", str(tmp_path / "taken.json"))
    assert code == 2 and "exists" in one_line(err) and out == ""  # nothing computed, nothing printed
    code, out, _ = run(capsys, "baseline", "--data", str(data_dir), "--out", str(tmp_path / "new" / "dir" / "m.json"))
    assert code == 0 and "bm25" in out
    assert json.loads((tmp_path / "new" / "dir" / "m.json").read_text())["split"] == "val"


# ---- models and devices ------------------------------------------------------------------------------

def test_a_model_folder_without_weights_is_refused(capsys, tmp_path, data_dir, tiny_bert):
    import shutil

    raw = tmp_path / "raw"  # a raw checkpoint: its config copied, its weights not
    raw.mkdir()
    (raw / "config.json").write_text((tiny_bert / "config.json").read_text())
    saved = Path(shutil.copytree(tiny_bert, tmp_path / "saved"))  # a sentence-transformers folder
    (saved / "model.safetensors").unlink()
    for model in (raw, saved):
        code, _, err = run(capsys, *train_args(data_dir, tmp_path / "r", model))
        assert code == 2 and "has no weights" in one_line(err) and str(model) in err
        assert not (tmp_path / "r").exists()


def test_a_damaged_model_folder_is_bad_input(capsys, tmp_path, data_dir, tiny_bert):
    import shutil

    damaged = Path(shutil.copytree(tiny_bert, tmp_path / "damaged"))
    (damaged / "model.safetensors").write_bytes(b"not a safetensors file")
    code, _, err = run(capsys, *train_args(data_dir, tmp_path / "r", damaged))
    assert code == 2 and "cannot be loaded" in one_line(err)
    assert list(tmp_path.iterdir()) == [damaged]  # no run folder, no leftovers


def test_max_length_above_the_model_limit(capsys, tmp_path, data_dir, tiny_bert):
    code, _, err = run(capsys, *train_args(data_dir, tmp_path / "r", tiny_bert, "--max-length", "600"))
    assert code == 2 and "--max-length 600 is above the model's limit of 128" in one_line(err)


def test_flash_attention_is_refused_where_it_is_not_installed(capsys, tmp_path, data_dir, tiny_bert):
    from transformers.utils import is_flash_attn_2_available

    if is_flash_attn_2_available():
        pytest.skip("flash-attn is installed here")
    code, _, err = run(capsys, *train_args(data_dir, tmp_path / "r", tiny_bert, "--attn", "flash_attention_2"))
    assert code == 2 and "flash" in one_line(err)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_cuda_is_refused_on_a_cpu_build_by_every_command(capsys, tmp_path, data_dir):
    for argv in (["train", "--data", str(data_dir), "--out", str(tmp_path / "r"), "--device", "cuda"],
                 ["search", str(tmp_path), "q", "--device", "cuda"],
                 ["evaluate", str(tmp_path), "--data", str(data_dir), "--device", "cuda"]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and "no CUDA GPU" in one_line(err)


# ---- data and runs that are not what they should be ---------------------------------------------------

def test_missing_or_undecodable_data_is_one_line(capsys, tmp_path, data_dir):
    code, _, err = run(capsys, "baseline", "--data", str(tmp_path / "nowhere"))
    assert code == 2 and "nowhere" in one_line(err)
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in ("corpus.jsonl", "queries.jsonl", "train_pairs.jsonl"):
        (bad / name).write_bytes((data_dir / name).read_bytes())
    (bad / "queries.jsonl").write_bytes(b'{"query_id": "\xff"}\n' + (data_dir / "queries.jsonl").read_bytes())
    code, _, err = run(capsys, "baseline", "--data", str(bad))
    assert code == 2 and "queries.jsonl" in one_line(err)


def test_an_empty_query_is_refused(capsys, tmp_path):
    code, _, err = run(capsys, "search", str(tmp_path), "  ")
    assert code == 2 and "query must be a non-empty string" in one_line(err)


def test_search_and_evaluate_refuse_a_folder_that_is_not_a_run(capsys, tmp_path, data_dir):
    for argv in (["search", str(tmp_path), "cancel"], ["evaluate", str(tmp_path), "--data", str(data_dir)]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and "index_contract.json" in one_line(err)


# ---- failures, the traceback switch, interruption -------------------------------------------------------

def test_a_failed_run_exits_1_in_one_line_and_debug_shows_the_traceback(capsys, tmp_path, monkeypatch):
    def boom(*_a, **_k):
        raise RuntimeError("disk on fire\nsecond line")

    monkeypatch.setattr(labs.retrieval.training, "train", boom)
    argv = ["train", "--data", str(tmp_path), "--out", str(tmp_path / "r")]
    code, _, err = run(capsys, *argv)
    assert code == 1 and "RuntimeError: disk on fire second line" in one_line(err)
    code, _, err = run(capsys, *argv, "--debug")
    assert code == 1 and "Traceback" in err and "disk on fire" in err
    monkeypatch.setenv("LABS_DEBUG", "1")
    code, _, err = run(capsys, *argv)
    assert code == 1 and "Traceback" in err


def test_a_second_train_on_the_same_out_fails_at_once(capsys, tmp_path, data_dir, tiny_bert, monkeypatch):
    monkeypatch.setattr(labs.retrieval.training, "load_dataset", lambda *_: pytest.fail("the second run read the data"))
    with files.build_atomically(tmp_path / "run"):  # the first run, still writing
        code, _, err = run(capsys, *train_args(data_dir, tmp_path / "run", tiny_bert))
        assert code == 2 and "another process" in one_line(err)


def _fail_at(monkeypatch, name: str, error: BaseException) -> None:
    original = progress.stage

    def stage(current: str) -> None:
        original(current)
        if current == name:
            raise error

    monkeypatch.setattr(progress, "stage", stage)


@pytest.mark.parametrize("where", ["loaded", "scored epoch 1", "written"])
def test_an_interrupted_train_leaves_nothing_and_out_stays_usable(capsys, tmp_path, data_dir, tiny_bert, monkeypatch,
                                                                   where):
    out = tmp_path / "run"
    _fail_at(monkeypatch, where, KeyboardInterrupt())
    code, _, err = run(capsys, *train_args(data_dir, out, tiny_bert))
    assert code == 130 and one_line(err) == f"interrupted by SIGINT; nothing was written to {out}"
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == []
    for argv in (["search", str(out), "cancel"], ["evaluate", str(out), "--data", str(data_dir)]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and one_line(err)


def test_a_failure_after_training_leaves_nothing(capsys, tmp_path, data_dir, tiny_bert, monkeypatch):
    out = tmp_path / "run"
    _fail_at(monkeypatch, "indexed", FloatingPointError("NaN in the corpus embeddings"))
    code, _, err = run(capsys, *train_args(data_dir, out, tiny_bert))
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
    nothing at --out, the leftover temporary folder is refused by search and evaluate, and the
    next train into the same --out succeeds and clears the leftover."""
    out = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", KILL, "written", *train_args(data_dir, out, tiny_bert)],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    assert not out.exists()
    (partial,) = tmp_path.glob(".run.partial-*")
    assert (partial / "metrics.json").is_file() and not (partial / "index_contract.json").exists()  # unsealed
    for argv in (["search", str(partial), "cancel"], ["evaluate", str(partial), "--data", str(data_dir)]):
        code, _, err = run(capsys, *argv)
        assert code == 2 and one_line(err)
    code, out_text, _ = run(capsys, *train_args(data_dir, out, tiny_bert))
    assert code == 0 and "selected epoch" in out_text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    code, _, _ = run(capsys, "search", str(out), "cancel")
    assert code == 0


def test_make_data_from_docs_builds_a_data_set_the_other_commands_accept(capsys, tmp_path):
    from labs.retrieval.data import load_dataset

    out = tmp_path / "docs"
    code, stdout, _ = run(capsys, "make-data", "--from-docs", "--out", str(out), "--max-per-library", "6",
                          "--splits", "numpy=train,scipy=val,torch=test")
    assert code == 0 and '"val": {"scipy": ' in stdout and "versions:" in stdout
    data = load_dataset(out)
    assert {q["split"] for q in data.queries} == {"train", "val", "test"} and len(data.train_pairs) > 0
    assert json.loads((out / "metadata.json").read_text())["splits"]["torch"] == "test"


@pytest.mark.parametrize("argv, message", [
    (["--from-docs", "--splits", "numpy"], "--splits takes LIB=SPLIT pairs"),
    (["--from-docs", "--splits", "numpy=train,numpy=val"], "names 'numpy' twice"),
    (["--from-docs", "--splits", "numpy=train,scipy=val,not_a_library_here=test"], "not_a_library_here"),
    (["--from-docs", "--max-per-library", "1"], "--max-per-library"),
    (["--splits", "numpy=train"], "only apply with --from-docs"),
])
def test_make_data_from_docs_bad_input_is_one_line(capsys, tmp_path, argv, message):
    code, _, err = run(capsys, "make-data", "--out", str(tmp_path / "d"), *argv)
    assert code == 2 and message in one_line(err) and not (tmp_path / "d").exists()
