"""labs.classroom.results: the lessons' reader of benchmarks/results/docs_experiment.json.

Every helper is checked against the committed file's own numbers, so a lesson that glues a
helper's value glues what the experiment wrote.
"""

from __future__ import annotations

import json

import pytest

from labs.classroom.results import (AUDITED_SETTINGS, CONDITIONS, METRICS, MINING_SETTINGS, STARTS, SUBSETS,
                                    audit_examples, chosen_validation, comparisons, curves, design, difference,
                                    false_negatives, glue_values, load_results, mining_stats, results_path,
                                    results_summary, run_cost, score)


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


def test_chosen_validation_is_the_curve_at_the_kept_step(results):
    for start in STARTS:
        untouched = chosen_validation(results, start, "untouched")
        assert untouched["per_seed"] == [results["starts"][start]["untouched"]["val"]["mrr@10"]]
        for condition in CONDITIONS[1:]:
            kept = chosen_validation(results, start, condition)
            c = curves(results, start, condition)
            for run, step, value in zip(c["values"], kept["steps"], kept["per_seed"]):
                assert run[c["steps"].index(step)] == value == max(run)
            assert kept["mean"] == pytest.approx(sum(kept["per_seed"]) / len(kept["per_seed"]), abs=1e-4)
            assert kept["mean"] >= untouched["mean"]  # step 0 is a candidate
    with pytest.raises(ValueError, match="condition must be one of"):
        chosen_validation(results, "minilm", "tfidf")


def test_comparisons_and_design(results):
    for start in STARTS:
        pairs = comparisons(results, start)
        assert ("hn_window", "inbatch_2x") in pairs and ("inbatch", "untouched") in pairs
        assert all(difference(results, start, a, b)["verdict"] for a, b in pairs)
    d = design(results)
    assert set(d["libraries"]) == {"train", "val", "test"}
    assert not set(d["libraries"]["train"]) & set(d["libraries"]["test"])
    assert d["libraries"]["val"] == ["numpy"] and d["test_queries"] == results["data"]["test_queries"]
    assert 0 < d["rival_ranked_first"] <= d["lookalike_n"] <= d["test_queries"]
    assert d["steps"] == results["settings"]["steps"] and d["seeds"] == len(results["settings"]["seeds"])
    with pytest.raises(ValueError, match="start must be one of"):
        comparisons(results, "bert")


def test_glue_values_and_summary(results):
    glue = glue_values(results)
    assert glue["docs_minilm_hn_window_vs_inbatch_2x_lookalike_mrr10_verdict"] in ("above 0", "below 0",
                                                                                   "includes 0")
    assert glue["docs_static_inbatch_overall_recall1"] == score(results, "static", "inbatch",
                                                                metric="recall@1")["mean"]
    assert glue["docs_fn_hn_top1_n"] == false_negatives(results, "hn_top1")["audited"]
    assert glue["docs_seeds"] >= 5 and glue["docs_lookalike_n"] == results["lookalike"]["n"]
    assert glue["docs_minilm_hn_top1_val_mrr10"] == chosen_validation(results, "minilm", "hn_top1")["mean"]
    fn = false_negatives(results, "hn_top1")
    assert glue["docs_fn_hn_top1_if_unclear"] == fn["rate_if_unclear_right"]
    assert glue["docs_fn_hn_top1_wrong"] + fn["also_right"] + fn["unclear"] == fn["audited"]
    assert glue["docs_lookalike_rival_first"] == design(results)["rival_ranked_first"]
    assert all(isinstance(v, (int, float, str)) for v in glue.values())
    text = results_summary(results)
    assert max(len(line) for line in text.splitlines()) <= 80
    for name in (*CONDITIONS, *MINING_SETTINGS):
        assert name in text
    assert run_cost(results)["wall_min"] > 0
