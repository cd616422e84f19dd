"""benchmarks/docs_experiment.py: its parts, its quick mode end to end, and the committed results.

The quick mode (``--quick``) runs every start and condition for two steps on a small slice of
the data (about a minute on two idle cores). The committed results file and the per-query ranks
written beside it (both in the package, ``labs/classroom/experiment/``) must come from the
current code (SHA-256 of `CODE_FILES`), the pinned versions and the committed audit file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from labs.classroom.results import SYSTEMS, load_ranks, load_results, results_summary
from tests.benchmarks.provenance import assert_made_here

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "docs_experiment.py"
RESULTS = ROOT / "labs" / "classroom" / "experiment" / "docs_experiment.json"
RANKS = RESULTS.with_name("docs_ranks.json")
AUDIT = ROOT / "benchmarks" / "results" / "mining_audit.jsonl"
REGENERATE = "regenerate it with the one command: nice -n 10 python benchmarks/docs_experiment.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("docs_experiment", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- the parts ----------------------------------------------------------------------------------

def test_mining_top1_window_and_fallback(script):
    """hn_top1 takes the best non-answer whatever its score; a window setting draws from its ranks
    (counted among the non-answers) only candidates scoring at most (1 - margin) x the answer; with
    none passing it takes the first passing one below the window."""
    settings = {**script.MINING, **script.AUDIT_ONLY}
    n = 80
    row = np.linspace(0.99, 0.0, n)                 # document j scores 0.99 ... 0 for every query
    scores = np.stack([row, row])
    positives = [5, 0]                              # query 0's answer is ranked 6th, query 1's first
    mined, stats = script.mine(scores, positives, [f"d{j}" for j in range(n)])
    assert set(stats) == set(settings) and stats["far_window"]["trained"] is False
    assert mined["hn_top1"] == [0, 1] and mined["ranks"]["hn_top1"] == [1, 1]
    for name, cfg in settings.items():
        lo, hi = cfg["ranks"]
        for q, pos in enumerate(positives):
            order = [j for j in range(n) if j != pos]
            pick = mined[name][q]
            assert order.index(pick) + 1 == mined["ranks"][name][q]
            if cfg["relative_margin"] is not None:
                assert row[pick] <= (1 - cfg["relative_margin"]) * row[pos]
                assert lo <= mined["ranks"][name][q] <= hi or stats[name]["fallbacks_below_window"]
    assert stats["hn_top1"]["negative_above_answer"] == 1          # query 0's top-1 outscores its answer
    assert stats["hn_window"]["negative_above_95pct_of_answer"] == 0
    # An answer so weak that nothing in the window passes: the first passing one below it.
    weak = np.concatenate([[0.5] * 60, [0.1], np.linspace(0.09, 0.0, n - 61)])
    one = {"w": {"ranks": [2, 10], "relative_margin": 0.05, "sampling": "random", "seed": 0}}
    mined, stats = script.mine(weak[None], [60], [f"d{j}" for j in range(n)], one)
    assert mined["w"] == [61] and stats["w"]["fallbacks_below_window"] == 1 and mined["ranks"]["w"] == [61]


def test_batches_same_pairs_and_doubled(script):
    """For one seed every condition walks the same pairs; a double batch is two consecutive batches."""
    single = [list(b) for b in script.batches(20, 4, seed=3, steps=8)]
    double = [list(b) for b in script.batches(20, 8, seed=3, steps=4)]
    assert len(single) == 8 and all(len(set(b)) == 4 for b in single)
    assert sorted(single[0] + single[1] + single[2] + single[3] + single[4]) == list(range(20))  # an epoch
    assert double[0] == single[0] + single[1] and double[1] == single[2] + single[3]
    assert [list(b) for b in script.batches(20, 4, seed=3, steps=8)] == single


def test_answer_ranks_and_their_metrics(script):
    rankings = {"q1": ["a", "b", "c"], "q2": ["c", "b", "a"], "q3": ["b", "a", "c"]}
    qrels = {"q1": {"a"}, "q2": {"a"}, "q3": {"a"}}
    ranks = script.answer_ranks(rankings, qrels, ["q1", "q2", "q3"])
    assert ranks == [1, 3, 2]
    assert script.from_ranks(ranks) == {"mrr@10": round((1 + 1 / 3 + 1 / 2) / 3, 4), "recall@1": round(1 / 3, 4)}
    assert script.from_ranks([11, 1]) == {"mrr@10": 0.5, "recall@1": 0.5}  # past rank 10 counts 0
    text = script.compact_json({"ranks": {"a": [1, 20, 3]}, "name": "x", "pair": [0.5, 1]})
    assert '"a": [1,20,3]' in text and json.loads(text) == {"ranks": {"a": [1, 20, 3]}, "name": "x",
                                                           "pair": [0.5, 1]}


def test_results_are_written_into_the_package(script):
    assert script.RESULTS == RESULTS and RESULTS.parent / "__init__.py" in set(RESULTS.parent.iterdir())
    assert script.parse([]).out == str(RESULTS)


def test_interval_pairs_and_covers(script):
    rng = np.random.default_rng(0)
    stack = rng.normal(0.5, 0.1, (5, 300))
    lo, hi = script.interval(stack, 500, 0)
    assert lo < stack.mean() < hi and hi - lo < 0.05
    assert script.interval(stack, 500, 0) == [lo, hi]                 # the same resamples again
    assert script.interval(np.full((1, 50), 0.3), 100, 0) == [0.3, 0.3]
    assert script.wilson(0, 30)[0] == 0 and script.wilson(30, 30)[1] == 1
    lo, hi = script.wilson(6, 30)
    assert lo < 0.2 < hi and lo == pytest.approx(0.0951, abs=1e-3) and hi == pytest.approx(0.3734, abs=1e-3)
    assert script.wilson(0, 0) is None


def test_read_audit_counts_only_matching_rows(script, tmp_path):
    settings = (*script.MINING, *script.AUDIT_ONLY)
    expected = [{"setting": s, "pair": f"p{i}", "negative_id": f"n{i}"} for s in settings for i in range(3)]
    labelled = [dict(r, label=label, reason="read it") for r, label in
                zip(expected, ["also right", "wrong answer", "unclear"] * 3)]
    labelled[3] = dict(labelled[3], negative_id="another")             # the mining changed for this one
    path = tmp_path / "audit.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in labelled))
    audit = script.read_audit(path, expected)
    assert audit["settings"]["hn_top1"]["audited"] == 3 and audit["settings"]["hn_top1"]["also right"] == 1
    assert audit["settings"]["hn_top1"]["false_negative_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert audit["settings"]["hn_window"]["stale"] == 1 and audit["settings"]["hn_window"]["audited"] == 2
    assert audit["settings"]["far_window"]["audited"] == 3 and len(audit["rows"]) == 8
    path.write_text(json.dumps(dict(labelled[0], label="maybe")) + "\n")
    with pytest.raises(ValueError, match="label must be one of"):
        script.read_audit(path, expected)


def test_minilm_top_layer_reproduces_the_model(script):
    """The frozen layers' cached output, run through the last layer in length-sorted chunks, gives the
    packaged model's own embeddings (any chunk size), and a reset restores the untouched weights."""
    from labs.retrieval.models import load_minilm

    texts = ["Compute the median along the specified axis.", "A short one.",
             "Return the indices of the elements that are non-zero, grouped by element, in row-major order."]
    model = load_minilm()
    start = script.MiniLMStart(model, script.FROZEN_LAYERS, "cpu", script.MAX_SEQ_LENGTH)
    reference = model.encode(texts, normalize_embeddings=True)
    assert np.abs(script.embed(start, texts) - reference).max() < 1e-5
    start.train(False)
    import torch

    with torch.no_grad():
        one = start.forward(texts, chunk=1).numpy()
    assert np.abs(one - reference).max() < 1e-5 and np.abs(start.untouched(texts) - reference).max() < 1e-5
    for p in start.parameters():
        p.data.add_(0.1)
    start.restore(None)
    assert np.abs(script.embed(start, texts) - reference).max() < 1e-5


# ---- the whole pipeline, small ------------------------------------------------------------------

@pytest.mark.e2e
def test_quick_mode_runs_every_condition(script, tmp_path, capsys):
    out = tmp_path / "quick.json"
    results = script.main(["--quick", "--out", str(out)])
    assert load_results(out) == json.loads(out.read_text())
    ranks = load_ranks(tmp_path / "docs_ranks.json")                   # written beside the results
    n = len(ranks["test_query_ids"])
    assert set(ranks["ranks"]) == set(SYSTEMS) and n == results["data"]["test_queries"]
    assert {s: set(c) for s, c in ranks["trained"].items()} == {s: set(script.CONDITIONS) for s in script.STARTS}
    for name, check in ranks["check"].items():                          # ranks and metrics agree
        assert {m: check[m] for m in ("mrr@10", "recall@1")} == check["stored"], name
    assert len(ranks["check"]) == len(SYSTEMS) + len(script.STARTS) * len(script.CONDITIONS) * 2
    minilm = ranks["ranks"]["minilm"]
    assert results["hard"]["query_ids"] == [q for q, r in zip(ranks["test_query_ids"], minilm) if r > 1]
    assert results["quick"] and results["code"]["sha256"] == script.code_hashes()
    printed = capsys.readouterr().out
    assert "run time" in printed and "CPU" in printed
    hashes = set()
    for start in script.STARTS:
        block = results["starts"][start]
        assert set(block["conditions"]) == set(script.CONDITIONS)
        for name, cond in block["conditions"].items():
            hashes.add(cond["pair_set_sha256"])
            assert cond["seeds"] == [0, 1]
            for curve in cond["curves"].values():
                assert [p["step"] for p in curve] == [0, 1, 2]
            assert all(step in (0, 1, 2) for step in cond["chosen_step"])
            assert (cond["mining"] is None) == (name not in script.MINING)
            for subset in ("overall", "hard"):
                cell = cond["test"][subset]["mrr@10"]
                assert 0 <= cell["ci95"][0] <= cell["mean"] <= cell["ci95"][1] <= 1
                assert len(cell["per_seed"]) == 2
        assert block["conditions"]["inbatch_2x"]["candidates_per_query"] == 2 * block["conditions"]["inbatch"][
            "candidates_per_query"] == block["conditions"]["hn_window"]["candidates_per_query"]
        assert set(block["differences"]) == {f"{a} - {b}" for a, b in script.COMPARISONS}
    assert hashes == {results["data"]["pair_set_sha256"]}               # the same pairs everywhere
    assert set(results["mining"]["audit"]["settings"]) == set(script.MINING) | set(script.AUDIT_ONLY)


# ---- the committed results ----------------------------------------------------------------------

def test_committed_results_match_code_pins_and_audit():
    """The committed results were made by the current code, the pinned versions and the committed audit."""
    results = load_results(RESULTS)
    assert not results["quick"]
    assert_made_here(results, RESULTS.name, REGENERATE)
    audit = results["mining"]["audit"]
    assert audit["sha256"] == hashlib.sha256(AUDIT.read_bytes()).hexdigest(), (
        f"{AUDIT.name} changed since {RESULTS.name} was made: {REGENERATE}")
    for setting, row in audit["settings"].items():
        assert row["audited"] >= 30 and row["stale"] == 0, setting
    for start in results["starts"].values():
        for cond in start["conditions"].values():
            assert len(cond["seeds"]) >= 5 and cond["pair_set_sha256"] == results["data"]["pair_set_sha256"]
    assert max(len(line) for line in results_summary(results).splitlines()) <= 80
    ranks = load_ranks(RANKS)
    assert not ranks["quick"] and ranks["code"] == results["code"] and ranks["versions"] == results["versions"]
    assert ranks["data_sha256"] == results["data"]["sha256"] and ranks["command"] == results["command"]


def test_audit_file_is_complete():
    """Every audited row names its setting, pair and mined document, and has a label and a reason."""
    rows = [json.loads(line) for line in AUDIT.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        assert row["label"] in ("wrong answer", "also right", "unclear"), row
        assert row["reason"].strip() and "\n" not in row["reason"], row
        assert {"setting", "pair", "query", "answer", "negative_id", "negative"} <= set(row)
    by_setting = {}
    for row in rows:
        by_setting.setdefault(row["setting"], []).append(row["pair"])
    assert set(by_setting) == {"hn_top1", "hn_window", "far_window"}
    assert all(len(pairs) >= 30 and len(set(pairs)) == len(pairs) for pairs in by_setting.values())
