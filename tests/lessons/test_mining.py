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
    (lambda: mi.same_batch_chance(1, 4), "n must be"),
    (lambda: mi.same_batch_chance(13, 1), "batch_size"),
])
def test_bad_input_raises_a_named_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_mining_shows_no_progress_bar_and_leaves_the_model_as_it_was(model, capfd):
    mi.mine_with_model(model, num_negatives=1)  # no cache: it encodes
    captured = capfd.readouterr()
    assert "Batches" not in captured.err + captured.out
    assert "encode_query" not in vars(model) and "encode_document" not in vars(model)


def test_mining_prints_nothing_whatever_the_library_prints(model, cache, capfd, monkeypatch):
    """sentence-transformers 5.x prints "Found an average of ... positives per query." even with
    verbose=False (6.x does not): the lesson's output must read the same under both."""
    import sentence_transformers.util as st_util

    library = st_util.mine_hard_negatives

    def like_5x(*args, **kwargs):
        print("Found an average of 1.077 positives per query.")
        return library(*args, **kwargs)

    monkeypatch.setattr(st_util, "mine_hard_negatives", like_5x)
    mined = mi.mine_with_model(model, known_positives=mi.ALSO_ANSWERS, cache_folder=cache)
    captured = capfd.readouterr()
    assert captured.out == "" and "positives per query" not in captured.err
    assert mined[mi.ROUTER_QUESTION]["negatives"]


def test_same_batch_chance_counts_pairs_of_rows_and_matches_shuffling():
    assert mi.same_batch_chance(13, 4) == pytest.approx(18 / 78)  # three batches of 4, one of 1
    assert mi.same_batch_chance(8, 4) == pytest.approx(2 * 6 / 28)
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(20000):
        order = rng.permutation(13)
        hits += order.tolist().index(0) // 4 == order.tolist().index(1) // 4
    assert abs(hits / 20000 - mi.same_batch_chance(13, 4)) < 0.01


# ---- scores that are not real numbers, arguments that would be read wrongly ----------------

PAIRS2 = [("q1", "aurora-reset"), ("q2", "beacon-reset")]


@pytest.mark.parametrize("scores, message", [
    ([0.8 + 1j, 0.3], "scores holds complex numbers"),
    ([True, False], "scores must hold real numbers, got booleans"),
    (["0.8", "0.3"], "scores must hold real numbers, got text"),
    ([[0.8], [0.3, 0.1]], "scores is ragged"),
    ([[0.8, 0.3], [0.5, 0.1]], r"as one row \(1-D\); got shape \(2, 2\)"),
    (torch.tensor([0.8, 0.3], requires_grad=True),
     r"scores is a torch tensor that requires grad: .* scores.detach\(\)"),
    (None, "scores must hold real numbers, got None"),
    ([np.nan, 0.3], "scores contains NaN or infinite entries"),
    (np.float64(0.8), "at least one negative"),
], ids=["complex", "bools", "strings", "ragged", "2-d", "requires-grad", "none", "nan", "0-d"])
def test_row_loss_refuses_what_is_not_one_row_of_real_scores(scores, message):
    with pytest.raises(ValueError, match=message):
        mi.row_loss(scores)


def test_row_loss_names_scores_when_tau_is_too_small_for_them():
    with pytest.raises(ValueError, match=r"tau=1e-310 is too small for these scores: scores / tau overflows"):
        mi.row_loss([0.8, 0.3], 1e-310)
    assert mi.row_loss(np.array([0.8, 0.3, 0.5]), np.float32(0.05))[0] == pytest.approx(mi.row_loss([0.8, 0.3, 0.5])[0],
                                                                                          rel=1e-6)


@pytest.mark.parametrize("scores, message", [
    (np.ones((2, 13)) * 1j, "scores holds complex numbers"),
    (np.ones((2, 13), dtype=bool), "scores must hold real numbers, got booleans"),
    (np.full((2, 13), "1"), "scores must hold real numbers, got text"),
    (np.where(np.eye(2, 13) > 0, np.nan, 0.5), "scores contains NaN or infinite entries"),
    (torch.ones(2, 13, requires_grad=True), "scores is a torch tensor that requires grad"),
    ([[0.1] * 13, [0.1]], "scores is ragged"),
], ids=["complex", "bools", "strings", "nan", "requires-grad", "ragged"])
def test_mine_by_scores_refuses_scores_that_are_not_real_numbers(scores, message):
    with pytest.raises(ValueError, match=message):
        mi.mine_by_scores(scores, PAIRS2, list(mi.CARDS))


@pytest.mark.parametrize("call, match", [
    (lambda: mi.mine_by_scores(np.ones((1, 3)), [("q", "a")], "abc"), "card_ids must be a list of strings, not one"),
    (lambda: mi.mine_by_scores(np.ones((1, 3)), [("q", "a")], ["a", "b", "b"]), r"card_ids must be distinct.*\['b'\]"),
    (lambda: mi.mine_by_scores(np.ones((2, 13)), None, list(mi.CARDS)), "pairs must be a list of"),
    (lambda: mi.mine_by_scores(np.ones((2, 13)), PAIRS2, list(mi.CARDS), known_positives=[("q1", "a")]),
     "known_positives must map a question"),
    (lambda: mi.mine_by_scores(np.ones((2, 13)), PAIRS2, list(mi.CARDS), 2.0), "num_negatives must be an integer"),
    (lambda: mi.dedupe_pairs("ab"), "pairs must be a list of"),
    (lambda: mi.dedupe_pairs([("q", "c", "x")]), r"pairs\[0\] must be a \(question text, card id\) pair"),
    (lambda: mi.shuffled_batches(-1, 4), "n must be an integer from 0 to 100000"),
    (lambda: mi.shuffled_batches(2.5, 4), "n must be an integer from 0 to 100000"),
    (lambda: mi.shuffled_batches(10, 4, seed=-1), "seed must be an integer >= 0"),
    (lambda: mi.no_duplicate_batches(seed="a"), "seed must be an integer >= 0"),
    (lambda: mi.repeated_answer_batches([[99]]), r"batches\[0\] holds 99, which is not a row of pairs \(0..12\)"),
    (lambda: mi.repeated_answer_batches([[True, False]]), r"batches\[0\] holds True"),
    (lambda: mi.repeated_answer_batches([[0.5]]), r"batches\[0\] holds 0.5"),
    (lambda: mi.repeated_answer_batches(None), "batches must be a list"),
    (lambda: mi.product_of(None), "card_id must be a card id"),
    (lambda: mi.embedding_scores(None, [3]), r"questions\[0\] must be a string"),
    (lambda: mi.embedding_scores(None, ["q"]), "model must be a SentenceTransformer"),
    (lambda: mi.embedding_scores(object(), ["q"], cards={}), "cards must be a non-empty dict"),
], ids=["card-ids-string", "card-ids-twice", "pairs-none", "known-list", "num-float", "dedupe-string",
        "dedupe-triple", "n-negative", "n-float", "seed-negative", "sampler-seed", "batch-row-range", "batch-row-bool",
        "batch-row-float", "batches-none", "product-none", "questions-int", "model-none", "cards-empty"])
def test_arguments_that_would_be_read_wrongly_are_refused_by_name(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_numpy_integers_work_where_integers_are_asked_for():
    by_int = mi.mine_by_scores(np.eye(2, 13), PAIRS2, list(mi.CARDS), 2)
    assert mi.mine_by_scores(np.eye(2, 13), PAIRS2, list(mi.CARDS), np.int64(2)) == by_int
    assert mi.shuffled_batches(10, np.int64(4), np.int32(1)) == mi.shuffled_batches(10, 4, 1)
    assert mi.same_batch_chance(np.int64(13), np.int64(4)) == mi.same_batch_chance(13, 4)
    assert mi.repeated_answer_batches([np.array([4, 12])]) == [0]  # rows 4 and 12 share their answer
