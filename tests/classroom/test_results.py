"""labs.classroom.results: the lessons' reader of benchmarks/results/docs_experiment.json.

Every helper is checked against the committed file's own numbers, so a lesson that glues a
helper's value glues what the experiment wrote.
"""

from __future__ import annotations

import json

import pytest

from labs.classroom.results import (AUDITED_SETTINGS, CONDITIONS, METRICS, MINING_SETTINGS, STARTS, SUBSETS,
                                    audit_examples, curves, difference, false_negatives, glue_values, load_results,
                                    mining_stats, results_path, results_summary, run_cost, score)


@pytest.fixture(scope="module")
def results():
    return load_results()


def test_load_refuses_missing_and_old_files(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        load_results(tmp_path / "none.json")
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"test": {}, "differences": {}}))
    with pytest.raises(ValueError, match="not schema 2"):
        load_results(old)
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({"schema": 2, "data": {}}))
    with pytest.raises(ValueError, match="missing keys"):
        load_results(partial)
    assert results_path().name == "docs_experiment.json"


def test_score_is_the_file_s_cell(results):
    for start in STARTS:
        for condition in CONDITIONS:
            for subset in SUBSETS:
                for metric in METRICS:
                    cell = score(results, start, condition, subset, metric)
                    block = (results["starts"][start]["untouched"]["test"] if condition == "untouched"
                             else results["starts"][start]["conditions"][condition]["test"])
                    raw = block[subset][metric]
                    assert (cell["mean"], [cell["lo"], cell["hi"]]) == (raw["mean"], raw["ci95"])
                    assert cell["lo"] <= cell["mean"] <= cell["hi"]
        assert len(score(results, start, "inbatch")["seeds"]) >= 5
    assert score(results, "minilm", "bm25")["mean"] == results["baselines"]["bm25"]["overall"]["mrr@10"]["mean"]
    with pytest.raises(ValueError, match="condition must be one of"):
        score(results, "minilm", "mnrl")
    with pytest.raises(ValueError, match="subset must be one of"):
        score(results, "minilm", "inbatch", "look-alike")


def test_difference_verdicts_follow_the_interval(results):
    for start in STARTS:
        for key in results["starts"][start]["differences"]:
            a, b = key.split(" - ")
            for subset in SUBSETS:
                cell = difference(results, start, a, b, subset)
                assert cell["lo"] <= cell["mean"] <= cell["hi"]
                expected = ("above 0" if cell["lo"] > 0 else "below 0" if cell["hi"] < 0 else "includes 0")
                assert cell["verdict"] == expected
                means = [score(results, start, c, subset)["mean"] for c in (a, b)]
                assert cell["mean"] == pytest.approx(means[0] - means[1], abs=2e-4)
    with pytest.raises(ValueError, match="no difference"):
        difference(results, "static", "inbatch", "hn_window")


def test_audit_helpers(results):
    for setting in AUDITED_SETTINGS:
        fn = false_negatives(results, setting)
        rows = audit_examples(results, setting)
        assert fn["audited"] == len(rows) >= 30
        assert fn["also_right"] == len(audit_examples(results, setting, "also right"))
        assert fn["also_right"] + fn["wrong_answer"] + fn["unclear"] == fn["audited"]
        assert fn["lo"] <= fn["rate"] <= fn["hi"]
        assert audit_examples(results, setting, n=2) == rows[:2]
        assert mining_stats(results, setting)["negatives"] == results["data"]["train_pairs"]
    with pytest.raises(ValueError, match="label must be one of"):
        audit_examples(results, "hn_top1", "right")


def test_curves_start_at_the_untouched_model(results):
    for start in STARTS:
        val0 = results["starts"][start]["untouched"]["val"]["mrr@10"]
        for condition in CONDITIONS[1:]:
            c = curves(results, start, condition)
            assert c["steps"][0] == 0 and c["steps"][-1] == results["starts"][start]["settings"]["steps"]
            assert all(run[0] == val0 for run in c["values"])
            assert all(step in c["steps"] for step in c["chosen_step"])


def test_glue_values_and_summary(results):
    glue = glue_values(results)
    assert glue["docs_minilm_hn_window_vs_inbatch_2x_lookalike_mrr10_verdict"] in ("above 0", "below 0",
                                                                                   "includes 0")
    assert glue["docs_static_inbatch_overall_recall1"] == score(results, "static", "inbatch",
                                                                metric="recall@1")["mean"]
    assert glue["docs_fn_hn_top1_n"] == false_negatives(results, "hn_top1")["audited"]
    assert glue["docs_seeds"] >= 5 and glue["docs_lookalike_n"] == results["lookalike"]["n"]
    assert all(isinstance(v, (int, float, str)) for v in glue.values())
    text = results_summary(results)
    assert max(len(line) for line in text.splitlines()) <= 80
    for name in (*CONDITIONS, *MINING_SETTINGS):
        assert name in text
    assert run_cost(results)["wall_min"] > 0
