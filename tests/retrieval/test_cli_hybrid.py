"""Combined ranking: reciprocal rank fusion and the weighted sum equal their readable loops,
``search --ranker`` and its flags refuse what would change nothing, and ``evaluate`` / ``baseline
--model`` print BM25, the model and both fused side by side with paired intervals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from labs.retrieval import cli as cli_module
from labs.retrieval import hybrid, index
from labs.retrieval.intervals import paired_interval, per_query
from labs.retrieval.metrics import retrieval_metrics
from tests.retrieval.conftest import cli, one_line
from tests.retrieval.fielded import fielded_data, fielded_run, fresh_run  # noqa: F401


def test_fusions_equal_their_loops_and_rank_ties_by_doc_id():
    rng = np.random.default_rng(0)
    dense, lexical = rng.normal(size=(4, 9)), rng.integers(0, 3, size=(4, 9)).astype(float)  # BM25 ties
    ids = [f"d{i}" for i in (5, 1, 7, 0, 3, 8, 2, 6, 4)]
    assert np.allclose(hybrid.rrf(dense, lexical, ids), hybrid.rrf_loop(dense, lexical, ids))
    assert np.allclose(hybrid.rrf(dense, lexical, ids, k=1), hybrid.rrf_loop(dense, lexical, ids, k=1))
    for w in (0.0, 0.3, 1.0):
        assert np.allclose(hybrid.weighted(dense, lexical, w), hybrid.weighted_loop(dense, lexical, w))
    assert np.array_equal(hybrid.minmax(np.ones((1, 3))), np.zeros((1, 3)))  # a constant row: all 0
    r = hybrid.ranks(np.array([[1.0, 2.0, 2.0]]), ["c", "b", "a"])
    assert r.tolist() == [[3, 2, 1]]  # "a" before "b" at equal scores


def test_a_document_first_for_both_is_first_after_fusion():
    dense, lexical = np.array([[0.9, 0.1, 0.5]]), np.array([[7.0, 1.0, 3.0]])
    for fusion in hybrid.FUSIONS:
        assert hybrid.fuse(dense, lexical, ["a", "b", "c"], fusion).argmax() == 0


def test_the_parser_choices_are_the_modules_tuples():
    assert cli_module.RANKERS == hybrid.RANKERS and cli_module.FUSIONS == hybrid.FUSIONS
    assert cli_module.WINDOWS == index.WINDOWS


def test_per_query_values_average_to_the_metric_and_the_paired_interval_holds_the_mean():
    rankings = {"q1": ["a", "b"], "q2": ["b", "a"], "q3": ["c", "a"]}
    qrels = {"q1": {"a"}, "q2": {"a"}, "q3": {"b"}}
    for metric in ("recall", "mrr", "ndcg"):
        assert per_query(rankings, qrels, metric, 2).mean() == pytest.approx(
            retrieval_metrics(rankings, qrels, [2])[f"{metric}@2"])
    mean, low, high = paired_interval([1, 0.5, 0, 1], [0, 0.5, 0, 0])
    assert mean == 0.5 and low <= mean <= high
    with pytest.raises(ValueError, match="the same queries"):
        paired_interval([1, 0], [1, 0, 1])


@pytest.mark.parametrize("argv, message", [
    (["--ranker", "dense", "--fusion", "rrf"], "--fusion and --rrf-k apply to --ranker hybrid, not dense"),
    (["--ranker", "hybrid", "--weight", "0.3"], "--weight applies to --fusion weighted"),
    (["--ranker", "hybrid", "--fusion", "weighted", "--rrf-k", "10"], "--rrf-k applies to --fusion rrf"),
    (["--ranker", "hybrid", "--fusion", "weighted", "--weight", "1.5"], "--weight must be a number from 0 to 1"),
    (["--ranker", "hybrid", "--rrf-k", "0"], "--rrf-k must be an integer >= 1"),
    (["--ranker", "cosine"], "argument --ranker: invalid choice"),
    (["--windows", "max"], "--windows max: this run's index has no windows"),
])
def test_a_ranking_flag_that_changes_nothing_or_is_out_of_range_is_one_line(capsys, fielded_run, argv, message):
    code, out, err = cli(capsys, "search", str(fielded_run), "cancel my plan", *argv)
    assert code == 2 and out == "" and message in one_line(err), err


def test_search_ranks_by_each_ranker(capsys, fielded_run):
    seen = {}
    for argv in (["--ranker", "bm25"], ["--ranker", "hybrid"], ["--ranker", "hybrid", "--fusion", "weighted",
                                                                "--weight", "0.2"]):
        code, out, err = cli(capsys, "search", str(fielded_run), "How do I cancel my Iris plan?", "--k", "3", *argv)
        assert code == 0 and len(out.splitlines()) == 3, err
        seen[argv[-1]] = out
    assert "iris-cancel" in seen["bm25"].splitlines()[0]
    assert float(seen["hybrid"].split()[1]) <= 2 / 61  # an RRF score: at most 1/(60+1) from each ranker


def test_evaluate_prints_lexical_dense_and_combined_with_intervals_and_saves_the_chosen(capsys, fresh_run,
                                                                                       fielded_data):
    code, out, err = cli(capsys, "evaluate", str(fresh_run), "--data", str(fielded_data), "--ranker", "hybrid")
    assert code == 0 and err == "", err
    lines = out.splitlines()
    assert lines[0].split()[0] == "system" and [x.split()[0] for x in lines[1:4]] == ["bm25", "dense", "hybrid"]
    assert any(line.strip().startswith("hybrid - dense") and "to" in line for line in lines)
    assert "saved: the rankings of hybrid (val_rankings.json)" in out
    assert any(line.startswith("documents: 0 of 61 over 64 tokens") for line in lines)
    saved = json.loads((fresh_run / "val_metrics.json").read_text())
    assert saved["ranking"] == "hybrid" and saved["mrr@10"] == saved["systems"]["hybrid"]["mrr@10"]
    assert set(saved["differences"]) == {"hybrid - dense", "hybrid - bm25", "dense - bm25"}


def test_baseline_with_a_model_adds_dense_and_hybrid(capsys, fielded_run, fielded_data):
    code, out, err = cli(capsys, "baseline", "--data", str(fielded_data), "--model", str(fielded_run / "best"))
    assert code == 0, err
    names = [line.split()[0] for line in out.splitlines()[2:6]]
    assert names == ["tfidf", "bm25", "dense", "hybrid"] and "dense - bm25" in out
    code, _, err = cli(capsys, "baseline", "--data", str(fielded_data), "--model", "nowhere")
    assert code == 2 and "--model must be 'minilm' or an existing model folder" in one_line(err)
