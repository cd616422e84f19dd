"""Tests for labs.lessons.rerank: the rule data, shortlist and rerank against torch and by-hand
sorting, the reranking ceiling, the negation lab on the packaged MiniLM, the cross-encoder
trained here, and the lesson's exercise checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from labs.retrieval.models import minilm_path
from labs.lessons.rerank import (
    collection, fill_rule as fill, HELMET_PASSAGES, HELMET_QUESTIONS, labelled_pairs,
    NO_NEW, NO_SEEN, Q_NEW, Q_SEEN, rerank as rerank_fn, retrieve_then_rerank,
    RULES_HELD_OUT, RULES_TRAIN, shortlist, test_triples as make_triples, binary_cross_entropy,
    train_cross_encoder, YES_NEW, YES_SEEN,
)

# --- the data -----------------------------------------------------------------------------


def test_fill_capitalises_the_group():
    assert fill("{G} must {a}.", ("riders under 16", "wear a helmet")) == HELMET_PASSAGES[0]
    assert fill("Do {g} have to {a}?", ("cooks", "wear gloves")) == "Do cooks have to wear gloves?"


def test_labelled_pairs_counts_and_labels():
    rows = labelled_pairs(RULES_TRAIN, Q_SEEN, YES_SEEN, NO_SEEN)
    per_question = len(YES_SEEN) + len(NO_SEEN) + 1
    assert len(rows) == len(RULES_TRAIN) * len(Q_SEEN) * per_question == 210
    assert sum(label for *_, label in rows) == len(RULES_TRAIN) * len(Q_SEEN) * len(YES_SEEN)
    q, p, label = rows[per_question - 1]  # the off-topic row: the next rule, stated as a yes
    assert label == 0 and p == fill(YES_SEEN[0], RULES_TRAIN[1]) and "visitors" in q


def test_held_out_words_never_reach_training():
    text = " ".join(q + " " + p for q, p, _ in labelled_pairs(RULES_TRAIN, Q_SEEN, YES_SEEN, NO_SEEN))
    for _, action in RULES_HELD_OUT:
        assert action not in text
    assert "obliged" not in text and "always" not in text and "never" not in text


def test_triples_pair_each_yes_with_its_negation():
    triples = make_triples(RULES_HELD_OUT, Q_NEW, YES_NEW, NO_NEW)
    assert len(triples) == len(RULES_HELD_OUT)
    q, yes, no, other = triples[0]
    assert (yes, no) == ("Riders under 16 always have to wear a helmet.",
                         "Riders under 16 never have to wear a helmet.")
    assert other.startswith("Cooks") and q.startswith("Are riders")


def test_data_builders_need_two_rules():
    for builder in (labelled_pairs, make_triples):
        with pytest.raises(ValueError, match="rules"):
            builder(RULES_TRAIN[:1], Q_SEEN, YES_SEEN, NO_SEEN)


def test_collection_is_sorted_distinct_and_holds_the_helmet_passages():
    texts = collection()
    assert texts == sorted(set(texts))
    assert set(HELMET_PASSAGES) <= set(texts)
    n_templates = len(YES_SEEN + NO_SEEN + YES_NEW + NO_NEW)
    assert len(texts) == len(RULES_TRAIN + RULES_HELD_OUT) * n_templates + 1  # + the paraphrase


# --- shortlist and rerank -------------------------------------------------------------------


def _unit(n: int, d: int, seed: int) -> torch.Tensor:
    x = torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return torch.nn.functional.normalize(x, dim=-1)


def test_shortlist_matches_topk():
    docs, q = _unit(50, 8, 0), _unit(1, 8, 1)[0]
    for k in (1, 5, 50):
        assert shortlist(q, docs, k) == torch.topk(docs @ q, k).indices.tolist()


def test_shortlist_ties_keep_the_lower_row():
    docs = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.5, 0.5]])
    assert shortlist(torch.tensor([1.0, 0.0]), docs, 3) == [0, 2, 3]


@pytest.mark.parametrize("k", [0, 4, -1, 1.5, True])
def test_shortlist_bad_k(k):
    with pytest.raises(ValueError, match="k must be"):
        shortlist(torch.ones(2), torch.ones(3, 2), k)


def test_shortlist_bad_shapes():
    with pytest.raises(ValueError, match="query_vec"):
        shortlist(torch.ones(3), torch.ones(4, 2), 1)


def test_rerank_sorts_by_score_and_keeps_ties_in_order():
    assert rerank_fn([7, 3, 9, 1], [0.2, 0.9, 0.2, 0.5]) == [3, 1, 7, 9]
    with pytest.raises(ValueError, match="length"):
        rerank_fn([1, 2], [0.5])


def test_a_reranker_cannot_recover_what_the_retriever_missed():
    """Even a perfect scorer only reorders the shortlist: Recall@1 after <= Recall@k before."""
    docs, queries = _unit(40, 6, 2), _unit(30, 6, 3)
    rng = np.random.default_rng(0)
    relevant = rng.integers(0, 40, size=30)
    for k in (1, 3, 10, 40):
        in_shortlist, top1 = [], []
        for q, rel in zip(queries, relevant):
            oracle = lambda cands, rel=rel: [1.0 if c == rel else 0.0 for c in cands]  # noqa: E731
            order = retrieve_then_rerank(q, docs, k, oracle)
            assert sorted(order) == sorted(shortlist(q, docs, k))
            in_shortlist.append(rel in order)
            top1.append(order[0] == rel)
        assert top1 == in_shortlist  # a perfect reranker reaches exactly the ceiling
    assert np.mean(top1) == 1.0  # k = N: everything is shortlisted


# --- the negation lab on the real model --------------------------------------------------


@pytest.fixture(scope="module")
def minilm():
    from labs.retrieval.models import load_minilm

    return load_minilm()


def test_helmet_cosines_match_the_field_notes(minilm):
    P = minilm.encode(HELMET_PASSAGES, convert_to_tensor=True, show_progress_bar=False)
    Q = minilm.encode(HELMET_QUESTIONS, convert_to_tensor=True, show_progress_bar=False)
    table = (Q @ P.T).numpy()
    np.testing.assert_allclose(table, [[0.758, 0.754, 0.505], [0.833, 0.854, 0.568]], atol=2e-3)
    assert float(P[0] @ P[1]) == pytest.approx(0.927, abs=2e-3)


# --- the cross-encoder ----------------------------------------------------------------------


@pytest.mark.parametrize("rows, match", [
    ([], "empty"),
    ([("q", "p", 2)], "0 or 1"),
    ([("q", "p")], "0 or 1"),
])
def test_train_cross_encoder_bad_rows(rows, match):
    with pytest.raises(ValueError, match=match):
        train_cross_encoder(rows, minilm_path())


def test_cross_encoder_learns_negation_on_held_out_rules():
    """The lesson's claim: one pass puts the yes passage above its negation for held-out rules."""
    cross = train_cross_encoder(labelled_pairs(RULES_TRAIN, Q_SEEN, YES_SEEN, NO_SEEN), minilm_path(), seed=0)
    triples = make_triples(RULES_HELD_OUT, Q_SEEN + Q_NEW, YES_SEEN, NO_SEEN)
    pairs = [(q, p) for q, yes, no, _ in triples for p in (yes, no)]
    scores = cross.predict(pairs, show_progress_bar=False).reshape(-1, 2)
    assert (scores[:, 0] > scores[:, 1] + 0.3).all()


def test_the_paraphrase_rank_the_lesson_prints_holds_on_any_cpu(minilm):
    """The lesson's slider and exercise use where the bi-encoder ranks the head-protection
    paraphrase for the first helmet question; cosine gaps of 0.05 around it keep it fixed."""
    texts = collection()
    vecs = minilm.encode(texts, convert_to_tensor=True, show_progress_bar=False)
    q = minilm.encode(HELMET_QUESTIONS[0], convert_to_tensor=True, show_progress_bar=False)
    order = shortlist(q, vecs, len(texts))
    rank = order.index(texts.index(HELMET_PASSAGES[2])) + 1
    assert rank == 9
    scores = (vecs @ q)[order].tolist()
    assert scores[rank - 2] - scores[rank - 1] > 0.05 and scores[rank - 1] - scores[rank] > 0.05


def test_binary_cross_entropy_matches_torch():
    p, y = [0.9, 0.2, 0.5, 0.99], [1, 0, 1, 0]
    expected = torch.nn.functional.binary_cross_entropy(torch.tensor(p, dtype=torch.float64),
                                                        torch.tensor(y, dtype=torch.float64))
    assert binary_cross_entropy(p, y) == pytest.approx(expected.item(), rel=1e-12)
    assert binary_cross_entropy([0.5], [0]) == pytest.approx(np.log(2))
    with pytest.raises(ValueError, match="labels"):
        binary_cross_entropy([0.5], [2])
    with pytest.raises(ValueError, match="strictly"):
        binary_cross_entropy([1.0], [1])
    with pytest.raises(ValueError, match="one probability"):
        binary_cross_entropy([0.5, 0.5], [1])


# --- arguments checked at the top, named in one ValueError (issue 28) ---------------------------


@pytest.mark.parametrize("call, message", [
    (lambda: fill(3, ("a", "b")), "template must be a string"),
    (lambda: fill("{x}", ("a", "b")), r"template = '\{x\}' is not a template with only \{g\}, \{G\} and \{a\}: KeyError"),
    (lambda: fill("{g", ("a", "b")), "template = .* is not a template"),
    (lambda: fill("{g}", "ab"), "rule must be a .* pair of strings, got 'ab'"),
    (lambda: fill("{g}", None), "rule must be a .* pair of strings, got None"),
    (lambda: fill("{G}", ("", "b")), "rule must be a .* pair of non-empty strings"),
    (lambda: fill("{g}", ("a", "b", "c")), "rule must be a .* pair of non-empty strings"),
    (lambda: labelled_pairs("abc", Q_SEEN, YES_SEEN, NO_SEEN), "rules must be a list of"),
    (lambda: labelled_pairs([("a", "b"), ("c",)], Q_SEEN, YES_SEEN, NO_SEEN), r"rules\[1\] must be"),
    (lambda: labelled_pairs(RULES_TRAIN, "Do {g} have to {a}?", YES_SEEN, NO_SEEN), "q_templates must be a list of strings, not one string"),
    (lambda: labelled_pairs(RULES_TRAIN, Q_SEEN, [], NO_SEEN), "yes_templates is empty"),
    (lambda: labelled_pairs(RULES_TRAIN, [], YES_SEEN, NO_SEEN), "q_templates is empty"),
    (lambda: labelled_pairs(RULES_TRAIN, Q_SEEN, YES_SEEN, ["{G} must {b}."]), r"no_templates\[0\] = .* KeyError"),
    (lambda: make_triples(RULES_TRAIN, Q_SEEN, YES_SEEN, NO_SEEN[:2]), "yes_templates and no_templates pair up one to one"),
    (lambda: make_triples(RULES_TRAIN, Q_SEEN, YES_SEEN, "{G} must not {a}."), "no_templates must be a list of strings"),
], ids=["template-int", "unknown-field", "broken-brace", "rule-string", "rule-none", "empty-group", "rule-triple",
        "rules-string", "rule-short", "q-one-string", "yes-empty", "q-empty", "no-unknown-field", "unpaired", "no-one-string"])
def test_data_builders_refuse_what_is_not_a_rule_or_a_template(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("rows, kwargs, message", [
    ("abc", {}, "rows must be a list of"),
    ([("q", "p", True)], {}, "first bad row: \\('q', 'p', True\\)"),
    ([(1, "p", 1)], {}, "first bad row"),
    ([("q", "p", 1)], {"batch_size": 2.5}, "batch_size must be an integer from 1 to 100000, got 2.5"),
    ([("q", "p", 1)], {"batch_size": "4"}, "batch_size must be an integer from 1 to 100000, got '4'"),
    ([("q", "p", 1)], {"lr": "x"}, "lr must be a finite number > 0"),
    ([("q", "p", 1)], {"lr": float("nan")}, "lr must be a finite number > 0"),
    ([("q", "p", 1)], {"seed": -1}, "seed must be an integer >= 0"),
    ([("q", "p", 1)], {"seed": 2**64}, r"seed must be an integer from 0 to 2\*\*64 - 1"),
    ([("q", "p", 1)], {"max_length": 0}, "max_length must be an integer from 1 to 100000"),
], ids=["rows-string", "label-bool", "question-int", "batch-float", "batch-string", "lr-string", "lr-nan", "seed",
        "seed-huge", "max-length"])
def test_train_cross_encoder_checks_every_argument_before_loading_the_model(rows, kwargs, message):
    with pytest.raises(ValueError, match=message):  # the folder does not exist: a load would fail differently
        train_cross_encoder(rows, "/nonexistent", **kwargs)


def test_train_cross_encoder_names_a_base_model_it_cannot_load(tmp_path):
    with pytest.raises(ValueError, match="base_model must be a local model folder"):
        train_cross_encoder([("q", "p", 1)], None)
    with pytest.raises(ValueError, match="base_model '/nonexistent' is not a folder"):
        train_cross_encoder([("q", "p", 1)], "/nonexistent")
    with pytest.raises(ValueError, match="base_model .* could not be loaded as a model"):
        train_cross_encoder([("q", "p", np.int64(1))], tmp_path)  # an empty folder; a NumPy label is a label


def test_shortlist_reads_tables_and_numpy_k_and_refuses_what_cannot_be_ranked():
    docs, q = _unit(20, 4, 5), _unit(1, 4, 6)[0]
    want = shortlist(q, docs, 5)
    assert shortlist(q, docs, np.int64(5)) == want
    assert shortlist(q.numpy(), docs.tolist(), 5) == want
    assert shortlist(q.float(), docs, 5) == want  # two dtypes: compared in the wider
    assert shortlist(q.clone().requires_grad_(True), docs, 5) == want  # row numbers carry no gradient
    for args, message in (((torch.tensor([np.nan, 0.0]), torch.eye(2)), "query_vec contains NaN or infinite entries"),
                          ((torch.ones(2), torch.eye(2) * np.inf), "doc_vecs contains NaN or infinite entries"),
                          ((torch.ones(2, dtype=torch.complex64), torch.eye(2)), "query_vec holds complex numbers"),
                          ((torch.ones(2), torch.eye(2) > 0), "doc_vecs must hold real numbers, got booleans"),
                          ((torch.full((2,), 6e4).half(), torch.full((2, 2), 6e4).half()), "doc_vecs @ query_vec overflows torch.float16"),
                          ((torch.ones(2), torch.ones(0, 2)), "doc_vecs has no rows")):
        with pytest.raises(ValueError, match=message):
            shortlist(*args, 1)


@pytest.mark.parametrize("scores, message", [
    (["0.1", "0.9"], "scores must hold real numbers, got text"), ([False, True], "scores must hold real numbers, got booleans"),
    ([0.5, float("nan")], "scores contains NaN or infinite entries"), ([1j, 2j], "scores holds complex numbers"),
    (None, "scores must hold real numbers, got None"), ([[0.1], [0.2]], "scores must be one number per candidate"),
    (torch.tensor([0.1, 0.9], requires_grad=True), r"scores is a torch tensor that requires grad: .*scores.detach\(\)"),
], ids=["strings", "bools", "nan", "complex", "none", "2-D", "requires-grad"])
def test_rerank_refuses_scores_that_cannot_be_sorted(scores, message):
    with pytest.raises(ValueError, match=message):
        rerank_fn([1, 2], scores)


def test_rerank_candidates_and_the_scorer_are_checked():
    assert rerank_fn([7, 3], np.array([0.2, 0.9], dtype=np.float32)) == rerank_fn((7, 3), torch.tensor([0.2, 0.9])) == [3, 7]
    for candidates in ("ab", {1, 2}):
        with pytest.raises(ValueError, match="candidates must be a list"):
            rerank_fn(candidates, [0.1, 0.9])
    docs, q = _unit(5, 3, 7), _unit(1, 3, 8)[0]
    with pytest.raises(ValueError, match="score must be a function"):
        retrieve_then_rerank(q, docs, 2, None)
    with pytest.raises(ValueError, match=r"score\(candidates\) contains NaN"):
        retrieve_then_rerank(q, docs, 2, lambda c: [float("nan")] * len(c))
    with pytest.raises(ValueError, match=r"candidates and score\(candidates\) differ in length: 2 vs 1"):
        retrieve_then_rerank(q, docs, 2, lambda c: [0.1])


@pytest.mark.parametrize("p, y, message", [
    ([0.9, 0.1], [True, False], "labels must hold real numbers, got booleans"),
    (["0.9"], [1], "probabilities must hold real numbers, got text"),
    ([0.9 + 0j], [1], "probabilities holds complex numbers"),
    ([0.5, float("nan")], [1, 0], "probabilities must lie strictly between 0 and 1, got nan at index 1"),
    ([[0.9], [0.1, 0.2]], [1, 0], "probabilities is ragged"),
    (torch.tensor([0.9], requires_grad=True), [1], "probabilities is a torch tensor that requires grad: .*binary_cross_entropy"),
    (None, [1], "probabilities must hold real numbers, got None"),
    (np.array([0.9999], dtype=np.float16), [1], "got 1.0 at index 0"),  # 0.9999 is 1.0 in float16
], ids=["bool-labels", "strings", "complex", "nan", "ragged", "requires-grad", "none", "float16-rounds-to-1"])
def test_binary_cross_entropy_refuses_what_is_not_a_probability_or_a_label(p, y, message):
    with pytest.raises(ValueError, match=message):
        binary_cross_entropy(p, y)


def test_binary_cross_entropy_reads_numpy_torch_and_float_labels_alike():
    want = binary_cross_entropy([0.75, 0.25], [1, 0])
    assert binary_cross_entropy(np.array([0.75, 0.25], dtype=np.float32), torch.tensor([1, 0])) == want
    assert binary_cross_entropy(torch.tensor([0.75, 0.25]), [1.0, 0.0]) == want
