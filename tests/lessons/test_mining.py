"""Tests for labs.lessons.mining: the by-hand mining rule against sentence-transformers' mine_hard_negatives,
the false-negative filters, the no-duplicates sampler, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from labs.lessons import mining as mi
from labs.retrieval.metrics import bm25_scores

QUESTIONS = list(dict.fromkeys(q for q, _ in mi.PAIRS))


@pytest.fixture(scope="module")
def model():
    from labs.retrieval.models import load_minilm

    torch.set_num_threads(2)
    return load_minilm()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("embeddings"))


def test_by_hand_rule_matches_mine_hard_negatives(model, cache):
    hand = mi.mine_by_scores(mi.embedding_scores(model, QUESTIONS), mi.PAIRS, list(mi.CARDS), 2)
    library = mi.mine_with_model(model, num_negatives=2, cache_folder=cache)
    assert set(library) == set(QUESTIONS)
    assert all(hand[q] == library[q]["negatives"] for q in QUESTIONS)


def test_false_negative_is_mined_then_filtered(model, cache):
    q = mi.ROUTER_QUESTION
    plain = mi.mine_with_model(model, cache_folder=cache)[q]
    assert plain["negatives"][0] == "aurora-powercycle" and plain["scores"][1] > plain["scores"][0]
    known = mi.mine_with_model(model, known_positives=mi.ALSO_ANSWERS, cache_folder=cache)[q]
    margin = mi.mine_with_model(model, relative_margin=0.05, cache_folder=cache)[q]
    assert "aurora-powercycle" not in known["negatives"] and "aurora-powercycle" not in margin["negatives"]


def test_random_sampling_repeats_with_a_seed(model, cache):
    a = mi.mine_with_model(model, range_max=6, sampling_strategy="random", seed=1, cache_folder=cache)
    b = mi.mine_with_model(model, range_max=6, sampling_strategy="random", seed=1, cache_folder=cache)
    assert a == b


def test_bm25_scores_mined_by_the_rule_skip_known_positives_and_find_look_alikes():
    questions = list(dict.fromkeys(q for q, _ in mi.PAIRS))
    keyword = bm25_scores(list(mi.CARDS.values()), questions)
    mined = mi.mine_by_scores(keyword, mi.PAIRS, list(mi.CARDS), 2, known_positives=mi.ALSO_ANSWERS)
    positives = dict(mi.PAIRS)
    for q, negs in mined.items():
        assert len(negs) == 2 and positives[q] not in negs
    assert "aurora-powercycle" not in mined[mi.ROUTER_QUESTION]
    same_product = [mi.product_of(n) == mi.product_of(positives[q]) for q, negs in mined.items() for n in negs]
    assert np.mean(same_product) >= 0.75


def test_row_loss_is_cross_entropy_and_a_twin_costs_at_least_ln2():
    scores = [0.8, 0.3, 0.5]
    loss, share = mi.row_loss(scores, 0.05)
    ref = F.cross_entropy(torch.tensor([scores], dtype=torch.float64) / 0.05, torch.tensor([0])).item()
    assert abs(loss - ref) < 1e-12 and abs(share - math.exp(-ref)) < 1e-12
    for s in (0.2, 0.9, 1.0):
        assert mi.row_loss([s, s, -1.0], 0.05)[0] >= math.log(2) - 1e-12


def test_dedupe_and_batching():
    raw = list(mi.PAIRS) + [mi.PAIRS[0], mi.PAIRS[4]]
    assert mi.dedupe_pairs(raw) == list(mi.PAIRS)
    assert any(mi.repeated_answer_batches(mi.shuffled_batches(len(mi.PAIRS), 4, s)) for s in range(20))
    for s in range(5):
        batches = mi.no_duplicate_batches(batch_size=4, seed=s)
        assert sorted(i for b in batches for i in b) == list(range(len(mi.PAIRS)))
        assert mi.repeated_answer_batches(batches) == []


@pytest.mark.parametrize("call, match", [
    (lambda: mi.mine_by_scores(np.zeros((2, 2)), mi.PAIRS, list(mi.CARDS)), "scores must be"),
    (lambda: mi.mine_by_scores(np.zeros((13, 13)), mi.PAIRS, list(mi.CARDS), 0), "num_negatives"),
    (lambda: mi.mine_by_scores(np.zeros((1, 13)), [("q", "no-such-card")], list(mi.CARDS)), r"pairs\[0\]"),
    (lambda: mi.mine_by_scores(np.zeros((0, 13)), [], list(mi.CARDS)), "at least one"),
    (lambda: mi.mine_by_scores(np.zeros((13, 13)), mi.PAIRS, list(mi.CARDS), known_positives={"q": "aurora-reset"}),
     "not one string"),
    (lambda: mi.row_loss([0.5]), "at least one negative"),
    (lambda: mi.row_loss([0.5, 0.1], tau=0), "tau"),
    (lambda: mi.shuffled_batches(10, 1), "batch_size"),
    (lambda: mi.no_duplicate_batches(batch_size=1), "batch_size"),
    (lambda: mi.embedding_scores(None, "one question"), "questions"),
])
def test_bad_input_raises_a_named_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_mining_shows_no_progress_bar_and_leaves_the_model_as_it_was(model, capfd):
    mi.mine_with_model(model, num_negatives=1)  # no cache: it encodes
    captured = capfd.readouterr()
    assert "Batches" not in captured.err + captured.out
    assert "encode_query" not in vars(model) and "encode_document" not in vars(model)
