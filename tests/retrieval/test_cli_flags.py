"""The command line's flags: each one checked at the edge in one line naming it (exit 2) before any
data or model is read, and meaning what it says once it is accepted: --max-steps is a cap, the
report records what ran, an --instruction must leave room for the question, a loss that is not
finite stops the run, --debug shows the traceback of a failed run (exit 1)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import labs.retrieval.training
from labs.retrieval.batches import plan_batches
from labs.retrieval.data import load_dataset
from tests.retrieval.conftest import ROOT, cli, one_line, train_args


def test_python_m_labs_help_runs():
    done = subprocess.run([sys.executable, "-m", "labs", "--help"], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0 and "make-data" in done.stdout and "evaluate" in done.stdout


# ``python -m labs ARGV`` as the program, then what it had imported (its exit is caught).
IMPORTED = """
import runpy, sys
sys.argv = ["labs", *sys.argv[1:]]
try:
    runpy.run_module("labs", run_name="__main__", alter_sys=True)
except SystemExit as stop:
    code = stop.code
heavy = [m for m in ("torch", "transformers", "sentence_transformers", "numpy", "sklearn") if m in sys.modules]
print("exit", code, "imported", *heavy, file=sys.stderr)
"""


@pytest.mark.parametrize("argv, code", [
    (["--help"], 0), (["--version"], 0), (["make-data", "--help"], 0), (["baseline", "--help"], 0),
    (["train", "--help"], 0), (["search", "--help"], 0), (["evaluate", "--help"], 0),
    (["no-such-command"], 2), (["train", "--bogus"], 2), (["train", "--data", "d"], 2),
    (["train", "--data", "d", "--out", "{tmp}/r", "--seed", "1.5"], 2),
    (["train", "--data", "d", "--out", "{tmp}/r", "--loss", "triplet"], 2),
    (["train", "--data", "d", "--out", "{tmp}/r", "--epochs", "-1"], 2),
    (["train", "--data", "d", "--out", "{tmp}/r", "--lr", "inf"], 2),
    (["train", "--data", "d", "--out", "{tmp}/r", "--precision", "bf16"], 2),
    (["train", "--data", "d", "--out", "{tmp}/r", "--device", "tpu"], 2),
    (["search", "run"], 2), (["evaluate", "run", "--split", "train"], 2),
], ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_help_version_and_refused_flags_import_no_torch(tmp_path, argv, code):
    """--help, --version and a refused flag print before torch, transformers or sentence-transformers
    (or even NumPy) is imported: they are quick (benchmarks/cli_startup.py times them)."""
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    done = subprocess.run([sys.executable, "-c", IMPORTED, *argv], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    last = done.stderr.strip().splitlines()[-1]
    assert last == f"exit {code} imported", done.stderr
    shown = done.stdout if code == 0 else done.stderr
    assert shown.strip() and "Traceback" not in done.stderr
    if argv == ["--version"]:
        from labs import __version__

        assert done.stdout.strip() == f"python -m labs {__version__}"


def test_the_train_flags_are_trainconfigs_fields():
    """Every field of TrainConfig is a flag with its default, help and choices, written once (in the
    field); none is added by hand."""
    import dataclasses

    from labs.retrieval.cli import build_parser
    from labs.retrieval.config import TrainConfig, flag_of

    train = build_parser()._subparsers._group_actions[0].choices["train"]
    # --processes starts torch's launcher around the run; the run itself is TrainConfig's
    actions = {a.dest: a for a in train._actions if a.dest not in ("help", "debug", "processes")}
    fields = {f.name: f for f in dataclasses.fields(TrainConfig) if f.metadata.get("flag", True)}
    assert set(actions) == set(fields)
    for name, f in fields.items():
        action = actions[name]
        assert action.option_strings == [flag_of(name)] and action.help == f.metadata["help"]
        assert action.default == f.metadata.get("none", None if f.default is dataclasses.MISSING else f.default)
        assert action.required == (f.default is dataclasses.MISSING)
        if "choices" in f.metadata:
            auto = [f.metadata["none"]] if "none" in f.metadata else []
            assert list(action.choices) == auto + list(f.metadata["choices"])
    assert "weight_decay" not in actions  # a Python-only setting: "flag": False


# ---- usage: one line, exit 2, before any work -----------------------------------------------------

@pytest.mark.parametrize("flag, value, allowed", [
    ("--lr", "inf", "finite number > 0"), ("--lr", "nan", "finite number > 0"), ("--lr", "0", "finite number > 0"),
    ("--lr", "-1e-5", "finite number > 0"), ("--lr", "2", "at most 1"), ("--scale", "0", "finite number > 0"),
    ("--max-steps", "-5", "integer >= 1"), ("--max-steps", "0", "integer >= 1"), ("--batch-size", "1", "integer >= 2"),
    ("--epochs", "-1", "integer >= 0"), ("--max-length", "4", "integer >= 8"), ("--seed", "1.5", "invalid int value"),
    ("--seed", "4294967296", "integer from 0 to 4294967295"),
    ("--attn", "flash", "invalid choice"), ("--device", "tpu", "'cpu', 'cuda' or 'cuda:N'"),
    ("--scale", "1e300", "at most 1000"), ("--instruction", "Instruct: find it\nQuery:", "the task alone"),
    ("--out", "", "--out is empty"), ("--data", "", "--data is empty"),
])
def test_a_flag_out_of_range_is_one_line_naming_it(capsys, tmp_path, flag, value, allowed):
    code, _, err = cli(capsys, "train", "--data", str(tmp_path), "--out", str(tmp_path / "r"), f"{flag}={value}")
    line = one_line(err)
    assert code == 2 and flag in line and allowed in line


def test_usage_errors_are_one_line(capsys, tmp_path):
    for argv in (["no-such-command"], ["search", str(tmp_path), "q", "--k", "0"], ["train", "--data", "x"],
                 ["evaluate", str(tmp_path), "--data", str(tmp_path), "--batch-size", "0"]):
        code, _, err = cli(capsys, *argv)
        assert code == 2 and one_line(err)


@pytest.mark.parametrize("command", ["make-data", "baseline", "train", "search", "evaluate"])
def test_help_lists_the_debug_flag(capsys, command):
    code, out, _ = cli(capsys, command, "--help")
    assert code == 0 and "--debug" in out


def test_train_help_documents_the_gpu_flags(capsys):
    code, out, _ = cli(capsys, "train", "--help")
    for flag in ("--gradient-checkpointing", "--attn", "--precision", "--loss", "--mini-batch-size", "--max-steps"):
        assert flag in out


# ---- models and devices ------------------------------------------------------------------------------

def test_a_model_folder_without_weights_is_refused(capsys, tmp_path, data_dir, tiny_bert):
    import shutil

    raw = tmp_path / "raw"  # a raw checkpoint: its config copied, its weights not
    raw.mkdir()
    (raw / "config.json").write_text((tiny_bert / "config.json").read_text())
    saved = Path(shutil.copytree(tiny_bert, tmp_path / "saved"))  # a sentence-transformers folder
    (saved / "model.safetensors").unlink()
    for model in (raw, saved):
        code, _, err = cli(capsys, *train_args(data_dir, tmp_path / "r", model))
        assert code == 2 and "has no weights" in one_line(err) and str(model) in err
        assert not (tmp_path / "r").exists()


def test_a_damaged_model_folder_is_bad_input(capsys, tmp_path, data_dir, tiny_bert):
    import shutil

    damaged = Path(shutil.copytree(tiny_bert, tmp_path / "damaged"))
    (damaged / "model.safetensors").write_bytes(b"not a safetensors file")
    code, _, err = cli(capsys, *train_args(data_dir, tmp_path / "r", damaged))
    assert code == 2 and "cannot be loaded" in one_line(err)
    assert list(tmp_path.iterdir()) == [damaged]  # no run folder, no leftovers


def test_max_length_above_the_model_limit(capsys, tmp_path, data_dir, tiny_bert):
    code, _, err = cli(capsys, *train_args(data_dir, tmp_path / "r", tiny_bert, "--max-length", "600"))
    assert code == 2 and "--max-length 600 is above the model's limit of 128" in one_line(err)


def test_flash_attention_is_refused_where_it_is_not_installed(capsys, tmp_path, data_dir, tiny_bert):
    from transformers.utils import is_flash_attn_2_available

    if is_flash_attn_2_available():
        pytest.skip("flash-attn is installed here")
    code, _, err = cli(capsys, *train_args(data_dir, tmp_path / "r", tiny_bert, "--attn", "flash_attention_2"))
    assert code == 2 and "flash" in one_line(err)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_cuda_is_refused_on_a_cpu_build_by_every_command(capsys, tmp_path, data_dir):
    for argv in (["train", "--data", str(data_dir), "--out", str(tmp_path / "r"), "--device", "cuda"],
                 ["search", str(tmp_path), "q", "--device", "cuda"],
                 ["evaluate", str(tmp_path), "--data", str(data_dir), "--device", "cuda"]):
        code, _, err = cli(capsys, *argv)
        assert code == 2 and "no CUDA GPU" in one_line(err)


# ---- a failed run and the traceback switch ------------------------------------------------------------

def test_a_failed_run_exits_1_in_one_line_and_debug_shows_the_traceback(capsys, tmp_path, monkeypatch):
    def boom(*_a, **_k):
        raise RuntimeError("disk on fire\nsecond line")

    monkeypatch.setattr(labs.retrieval.training, "train", boom)
    argv = ["train", "--data", str(tmp_path), "--out", str(tmp_path / "r")]
    code, _, err = cli(capsys, *argv)
    assert code == 1 and "RuntimeError: disk on fire second line" in one_line(err)
    code, _, err = cli(capsys, *argv, "--debug")
    assert code == 1 and "Traceback" in err and "disk on fire" in err
    monkeypatch.setenv("LABS_DEBUG", "1")
    code, _, err = cli(capsys, *argv)
    assert code == 1 and "Traceback" in err


# ---- flags mean what they say ----------------------------------------------------------------------------

def test_max_steps_is_a_cap_and_the_report_records_what_ran(capsys, tmp_path, data_dir, tiny_bert, monkeypatch):
    """A billion epochs capped at one step plans one step (no epoch is built beyond it); a batch of
    1000 on 36 distinct positives records the 36 that ran."""
    out = tmp_path / "r"
    code, stdout, err = cli(capsys, "train", "--data", str(data_dir), "--out", str(out), "--model", str(tiny_bert),
                            "--epochs", "1000000000", "--max-steps", "1", "--batch-size", "1000")
    assert code == 0, err
    report = json.loads((out / "metrics.json").read_text())
    assert report["steps"] == 1 and report["global_batch"] == 36
    assert [row["epoch"] for row in report["history"]] == [0, 1]
    assert "batches of up to 36 pairs, 1 steps" in stdout


@pytest.mark.parametrize("epochs, max_steps, steps, ends", [(1, 8, 3, [3]), (2, 4, 4, [3, 4]), (10**9, 2, 2, [2]),
                                                            (3, None, 9, [3, 6, 9])])
def test_max_steps_never_repeats_an_epoch(data_dir, epochs, max_steps, steps, ends):
    """36 distinct positives in batches of 16 make 3 steps an epoch; --max-steps only cuts."""
    plan = plan_batches(load_dataset(data_dir), epochs=epochs, batch_size=16, seed=0, hard_negatives=False,
                        max_steps=max_steps)
    assert len(plan.steps) == steps and plan.epoch_ends == ends and plan.global_batch == 16


def test_an_instruction_that_leaves_no_room_for_the_question_is_refused(capsys, tmp_path, data_dir, tiny_bert):
    out = tmp_path / "r"
    code, _, err = cli(capsys, *train_args(data_dir, out, tiny_bert, "--max-length", "16",
                                           "--instruction", "Given a support question, retrieve the article " * 20))
    line = one_line(err)  # not even the tokenizer's own warning about a text longer than the model's limit
    assert code == 2 and "--instruction takes" in line and "of the --max-length 16 tokens, leaving 0" in line
    assert list(tmp_path.iterdir()) == []


def test_a_max_length_without_room_for_the_question_does_not_blame_an_instruction(capsys, tmp_path, data_dir,
                                                                                  tiny_bert):
    code, _, err = cli(capsys, *train_args(data_dir, tmp_path / "r", tiny_bert, "--max-length", "8"))
    line = one_line(err)
    assert code == 2 and "--instruction" not in line
    assert "the model's own special tokens take 2 of the --max-length 8 tokens, leaving 6" in line


def test_a_loss_that_is_not_finite_stops_the_run_at_that_step(capsys, tmp_path, data_dir, tiny_bert, monkeypatch):
    """The trainer would log a NaN loss as 0.000 and carry on (its logging filter); the run stops instead."""
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    original = MultipleNegativesRankingLoss.forward
    monkeypatch.setattr(MultipleNegativesRankingLoss, "forward", lambda self, *a, **k: original(self, *a, **k) * 1e309)
    code, stdout, err = cli(capsys, *train_args(data_dir, tmp_path / "r", tiny_bert))
    assert code == 1 and "the training loss is inf at step 1" in one_line(err) and stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_the_seed_is_refused_before_the_model_is_loaded(capsys, tmp_path, data_dir, tiny_bert, monkeypatch):
    monkeypatch.setattr(labs.retrieval.training, "load_encoder", lambda *_: pytest.fail("the model was loaded"))
    code, _, err = cli(capsys, *train_args(data_dir, tmp_path / "r", tiny_bert, "--seed", "4294967296"))
    assert code == 2 and "--seed must be an integer from 0 to 4294967295" in one_line(err)


@pytest.mark.parametrize("content, message", [
    ("", "modules.json'? is not a readable modules.json: Expecting value"),
    ("{]", "is not a readable modules.json"),
    ('{"type": "x"}', "must hold a JSON list of modules"),
    ('[1, 2]', "must hold a JSON list of modules"),
], ids=["empty", "malformed", "object", "numbers"])
def test_a_broken_modules_json_is_named(capsys, tmp_path, data_dir, tiny_bert, content, message):
    model = Path(shutil.copytree(tiny_bert, tmp_path / "model"))
    (model / "modules.json").write_text(content)
    code, _, err = cli(capsys, *train_args(data_dir, tmp_path / "r", model))
    line = one_line(err)
    assert code == 2 and "modules.json" in line and str(model) in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


@pytest.mark.parametrize("flag", ["--out", "--data", "--model", "--instruction"])
def test_an_argument_with_bytes_that_are_not_utf8_is_one_line(capsys, tmp_path, data_dir, tiny_bert, flag):
    """A shell passes such bytes as surrogate escapes ('\\udcff'); they would break metrics.json at the end."""
    argv = train_args(data_dir, tmp_path / "r", tiny_bert)
    if flag in argv:
        argv[argv.index(flag) + 1] += "\udcff"
    else:
        argv += [flag, "Find the article \udcff"]
    code, _, err = cli(capsys, *argv)
    line = one_line(err)
    assert code == 2 and flag in line and "not UTF-8" in line and "\\udcff" in line
    assert list(tmp_path.iterdir()) == []


def test_a_usage_error_prints_user_text_escaped(capsys, tmp_path):
    code, _, err = cli(capsys, "baseline", "--data", str(tmp_path), "x\nerror: forged second line\x1b[2J")
    line = one_line(err)
    assert code == 2 and "unrecognized arguments: x\\nerror: forged second line\\x1b[2J" in line
