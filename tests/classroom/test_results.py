"""labs.classroom.results: the lessons' reader of labs/classroom/experiment/docs_experiment.json.

Every helper is checked against the committed file's own numbers, so a lesson that glues a
helper's value glues what the experiment wrote.
"""

from __future__ import annotations

import json

import numpy as np
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
    with pytest.raises(ValueError, match="not schema 3"):
        load_results(old)
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({"schema": 3, "data": {}}))
    with pytest.raises(ValueError, match="missing keys"):
        load_results(partial)
    assert results_path().name == "docs_experiment.json"
    assert results_path().parent.name == "experiment" and results_path().is_file()  # in the package


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
    assert 0 < d["rival_ranked_first"] <= d["twins_n"] <= d["test_queries"]
    assert 0 < d["hard_n"] < d["test_queries"]
    assert d["steps"] == results["settings"]["steps"] and d["seeds"] == len(results["settings"]["seeds"])
    with pytest.raises(ValueError, match="start must be one of"):
        comparisons(results, "bert")


def test_glue_values_and_summary(results):
    glue = glue_values(results)
    assert glue["docs_minilm_hn_window_vs_inbatch_2x_hard_mrr10_verdict"] in ("above 0", "below 0", "includes 0")
    assert glue["docs_static_inbatch_overall_recall1"] == score(results, "static", "inbatch",
                                                                metric="recall@1")["mean"]
    assert glue["docs_fn_hn_top1_n"] == false_negatives(results, "hn_top1")["audited"]
    assert glue["docs_seeds"] >= 5 and glue["docs_twins_n"] == results["twins"]["n"]
    assert glue["docs_minilm_hn_top1_val_mrr10"] == chosen_validation(results, "minilm", "hn_top1")["mean"]
    fn = false_negatives(results, "hn_top1")
    assert glue["docs_fn_hn_top1_if_unclear"] == fn["rate_if_unclear_right"]
    assert glue["docs_fn_hn_top1_wrong"] + fn["also_right"] + fn["unclear"] == fn["audited"]
    assert glue["docs_twins_rival_first"] == design(results)["rival_ranked_first"]
    assert all(isinstance(v, (int, float, str)) for v in glue.values())
    text = results_summary(results)
    assert max(len(line) for line in text.splitlines()) <= 80
    for name in (*CONDITIONS, *MINING_SETTINGS):
        assert name in text
    assert run_cost(results)["wall_min"] > 0


# ---- what lesson 8 reads: the loss, the controls, the exams and the per-query ranks --------------

from labs.classroom.results import (SYSTEMS, controls, exam_difficulty, hard_exam_positions,  # noqa: E402
                                    load_ranks, loss_curves, query_ranks, ranks_path, trained_ranks,
                                    twin_positions, untouched_exams)


@pytest.fixture(scope="module")
def ranks():
    return load_ranks()


def test_loss_curves_are_the_curves_train_loss(results):
    for start in STARTS:
        for condition in CONDITIONS[1:]:
            loss, val = loss_curves(results, start, condition), curves(results, start, condition)
            assert loss["steps"] == val["steps"][1:] and loss["steps"][-1] == results["settings"]["steps"][start]
            runs = list(results["starts"][start]["conditions"][condition]["curves"].values())
            assert loss["values"] == [[p["train_loss"] for p in run[1:]] for run in runs]
            assert all(v > 0 for run in loss["values"] for v in run)
    with pytest.raises(ValueError, match="condition must be one of"):
        loss_curves(results, "minilm", "untouched")


def test_controls_count_what_each_arm_encodes(results):
    for start in STARTS:
        held = controls(results, start)
        batch, steps = results["settings"]["batch"], results["settings"]["steps"][start]
        assert [held[c]["pairs_per_step"] for c in CONDITIONS[1:]] == [batch, 2 * batch, batch, batch]
        assert [held[c]["texts_per_step"] for c in CONDITIONS[1:]] == [2 * batch, 4 * batch, 3 * batch, 3 * batch]
        # the 2x batch matches the mined arms' candidates per query, not their texts or pairs
        assert held["inbatch_2x"]["candidates_per_query"] == held["hn_window"]["candidates_per_query"]
        assert held["inbatch_2x"]["texts_per_step"] > held["hn_window"]["texts_per_step"]
        assert held["inbatch_2x"]["positive_pairs_per_run"] == 2 * held["hn_window"]["positive_pairs_per_run"]
        assert held["hn_window"]["positive_pairs_per_run"] == batch * steps
        # a document named twice is one candidate: the measured candidates never exceed the design's
        for c in CONDITIONS[1:]:
            measured = results["starts"][start]["conditions"][c]["mean_distinct_candidates"]
            assert max(measured) <= held[c]["candidates_per_query"]
        assert all(held[c]["matches"] for c in CONDITIONS[1:])


def test_exam_difficulty_is_the_file_s_scores(results):
    rows = exam_difficulty(results, "twins")
    assert len(rows) == len(results["baselines"]) + len(STARTS) * len(CONDITIONS)
    for row in rows:
        start = row["start"] or STARTS[0]
        assert row["overall"] == score(results, start, row["condition"])["mean"]
        assert row["subset"] == score(results, start, row["condition"], "twins")["mean"]
        assert row["drop"] == round(row["overall"] - row["subset"], 4)
    with pytest.raises(ValueError, match="subset must be one of"):
        exam_difficulty(results, "overall")


def test_load_ranks_refuses_missing_and_broken_files(tmp_path, ranks):
    assert ranks_path().name == "docs_ranks.json"
    with pytest.raises(ValueError, match="not found"):
        load_ranks(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": 0}))
    with pytest.raises(ValueError, match="not schema 2"):
        load_ranks(bad)
    bad.write_text(json.dumps({"schema": 2, "ranks": {}}))
    with pytest.raises(ValueError, match="missing keys"):
        load_ranks(bad)
    short = {**ranks, "ranks": {**ranks["ranks"], "bm25": ranks["ranks"]["bm25"][:-1]}}
    bad.write_text(json.dumps(short))
    with pytest.raises(ValueError, match=r"ranks\['bm25'\]"):
        load_ranks(bad)
    run = ranks["trained"]["static"]["hn_window"]["0"]
    broken = {**ranks, "trained": {**ranks["trained"], "static": {**ranks["trained"]["static"],
                                                                  "hn_window": {"0": run[:-1]}}}}
    bad.write_text(json.dumps(broken))
    with pytest.raises(ValueError, match=r"trained\['static'\]\['hn_window'\]\['0'\]"):
        load_ranks(bad)
    with pytest.raises(ValueError, match="system must be one of"):
        query_ranks(ranks, "colbert")
    with pytest.raises(ValueError, match="seed must be one of"):
        trained_ranks(ranks, "minilm", "inbatch", 99)


def test_ranks_are_the_experiment_s(results, ranks):
    """The per-query ranks give back the experiment's own stored numbers: its test queries, each untouched
    system's MRR@10 and Recall@1 over all of them, and its near-twin subset's MRR@10."""
    assert len(ranks["test_query_ids"]) == results["data"]["test_queries"]
    assert ranks["data_sha256"] == results["data"]["sha256"] and not ranks["quick"]
    stored = {"tfidf": results["baselines"]["tfidf"], "bm25": results["baselines"]["bm25"],
              "minilm": results["starts"]["minilm"]["untouched"]["test"],
              "static": results["starts"]["static"]["untouched"]["test"]}
    exams = {row["system"]: row for row in untouched_exams(results, ranks)}
    assert set(exams) == set(SYSTEMS)
    for system in SYSTEMS:
        r = np.array(query_ranks(ranks, system))
        assert round(float(np.mean(r == 1)), 4) == stored[system]["overall"]["recall@1"]["mean"]
        assert exams[system]["overall"] == stored[system]["overall"]["mrr@10"]["mean"]
        assert exams[system]["twins"] == stored[system]["twins"]["mrr@10"]["mean"]
        assert exams[system]["hard"] == stored[system]["hard"]["mrr@10"]["mean"]
    twins = twin_positions(results, ranks)
    assert len(twins) == results["twins"]["n"]


def test_every_trained_run_has_its_ranks(results, ranks):
    """Each trained run's per-query ranks give back its stored per-seed MRR@10 over all test queries and
    on the look-alike exam, so the exam scores every arm from the same runs."""
    hard = hard_exam_positions(ranks)
    for start in STARTS:
        for condition in CONDITIONS[1:]:
            block = results["starts"][start]["conditions"][condition]
            for seed, overall, on_hard in zip(block["seeds"], block["test"]["overall"]["mrr@10"]["per_seed"],
                                              block["test"]["hard"]["mrr@10"]["per_seed"]):
                r = np.array(trained_ranks(ranks, start, condition, seed))
                rr = np.where(r <= 10, 1 / r, 0.0)
                assert round(float(rr.mean()), 4) == overall
                assert round(float(rr[hard].mean()), 4) == on_hard
    for name, check in ranks["check"].items():
        assert {m: check[m] for m in ("mrr@10", "recall@1")} == check["stored"], name


def test_hard_exam_is_what_the_untouched_minilm_gets_wrong(results, ranks):
    hard = hard_exam_positions(ranks)
    minilm = query_ranks(ranks, "minilm")
    assert hard == [i for i, r in enumerate(minilm) if r != 1]
    n = len(minilm)
    recall1 = results["starts"]["minilm"]["untouched"]["test"]["overall"]["recall@1"]["mean"]
    assert abs(len(hard) - round((1 - recall1) * n)) <= 1
    assert results["hard"]["query_ids"] == [ranks["test_query_ids"][i] for i in hard]
    glue = glue_values(results, ranks)
    assert glue["docs_hard_n"] == len(hard)
    assert glue["docs_minilm_untouched_hard_recall1"] == 0     # its own mistakes chose the exam
    assert glue["docs_bm25_hard_mrr10"] == next(r["hard"] for r in untouched_exams(results, ranks)
                                                 if r["system"] == "bm25")


def test_glue_values_name_the_near_twins_and_the_controls(results):
    glue = glue_values(results)
    assert glue["docs_twins_n"] == results["twins"]["n"] and glue["docs_hard_n"] == results["hard"]["n"]
    assert not [k for k in glue if "lookalike" in k]                 # the lessons' names only
    assert (glue["docs_minilm_inbatch_texts"], glue["docs_minilm_inbatch_2x_texts"],
            glue["docs_minilm_hn_window_texts"]) == (64, 128, 96)
    window = mining_stats(results, "hn_window")
    assert glue["docs_mined_hn_window_in_window"] + glue["docs_mined_hn_window_fallbacks"] == window["negatives"]

