"""benchmarks/lookalike_experiment.py: its intervals, its quick mode end to end, and the committed results.

The quick mode (``--quick``) runs every part tiny: the untouched model, the adapter's two arms (2
seeds of 5 steps), and the whole model's two arms (one seed, one step each, through the tool's
``train``). The committed results file must come from the current code (SHA-256 of `CODE_FILES`)
and the pinned versions, and the lesson's loader must read it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from labs.classroom.lookalike import ARMS, PARTS, load_lookalike, lookalike_glue, lookalike_table
from tests.benchmarks.provenance import assert_made_here

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "lookalike_experiment.py"
RESULTS = ROOT / "labs" / "classroom" / "experiment" / "lookalike_experiment.json"
REGENERATE = ("regenerate it with the one command: nice -n 10 python benchmarks/lookalike_experiment.py "
              "--out labs/classroom/experiment/lookalike_experiment.json")


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("lookalike_experiment", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_interval_pairs_and_covers(script):
    rng = np.random.default_rng(0)
    stack = (rng.random((5, 80)) < 0.6).astype(float)
    lo, hi = script.interval(stack)
    assert lo < stack.mean() < hi and hi - lo < 0.2
    assert script.interval(stack) == [lo, hi]
    assert script.interval(np.full((3, 10), 1.0)) == [1.0, 1.0]
    same = script.difference(stack, stack)
    assert same["mean"] == 0 and same["ci95"] == [0.0, 0.0] and same["verdict"] == "includes 0"
    assert script.difference(np.ones((3, 10)), np.zeros((3, 10)))["verdict"] == "above 0"


@pytest.mark.e2e
def test_quick_mode_runs_every_part(script, tmp_path, capsys):
    out = tmp_path / "quick.json"
    results = script.main(["--quick", "--out", str(out)])
    assert load_lookalike(out)["quick"] and results["code"]["sha256"] == script.code_hashes()
    assert "run time" in capsys.readouterr().out
    assert results["data"]["held_out_questions"] == 80 and results["data"]["pool_articles"] == 32
    for part in PARTS:
        for arm in ARMS:
            a = results[part]["arms"][arm]
            assert 0 <= a["pair"]["ci95"][0] <= a["pair"]["mean"] <= a["pair"]["ci95"][1] <= 1
            assert len(a["password_rank"]) == len(results[part]["settings"]["seeds"])
        assert results[part]["difference"]["pair"]["verdict"] in ("above 0", "below 0", "includes 0")
    assert len(lookalike_table(results)) == 1 + len(PARTS) * len(ARMS)
    assert lookalike_glue(results)["la_held_out_questions"] == 80


def test_committed_results_match_code_and_pins():
    results = load_lookalike(RESULTS)
    assert not results["quick"]
    assert_made_here(results, RESULTS.name, REGENERATE)
    assert len(results["adapter"]["settings"]["seeds"]) >= 5 and len(results["minilm"]["settings"]["seeds"]) >= 3
    assert results["untouched"]["look_alike_wins"] > 0.4           # the set fails the untouched model
    glued = lookalike_glue(results)
    assert glued["la_untouched_password_rank"] > 1                  # lesson 1's look-alike, held out


def test_bad_file_is_named(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"schema": 0}')
    with pytest.raises(ValueError, match="x.json: not schema 1 of the look-alike experiment"):
        load_lookalike(path)
    with pytest.raises(ValueError, match="not found"):
        load_lookalike(tmp_path / "missing.json")
