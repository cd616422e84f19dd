"""Retrieval metrics by hand against sentence-transformers' InformationRetrievalEvaluator; the two baselines."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

from labs.retrieval.helpdesk import make_helpdesk
from labs.retrieval.metrics import (
    baseline_rankings, bm25_scores, mrr_at_k, ndcg_at_k, rank_documents,
    recall_at_k, retrieval_metrics, tfidf_scores,
)

KS = [1, 3, 5, 10]


def library_metrics(scores: np.ndarray, doc_ids, query_ids, qrels) -> dict:
    """The evaluator's own metric code on the same score table."""
    ev = InformationRetrievalEvaluator(
        queries={q: q for q in query_ids}, corpus={d: d for d in doc_ids}, relevant_docs=qrels,
        mrr_at_k=KS, ndcg_at_k=KS, precision_recall_at_k=KS, accuracy_at_k=KS, map_at_k=KS, write_csv=False)
    results = [[{"corpus_id": d, "score": float(s)} for d, s in zip(doc_ids, row)] for row in scores]
    return ev.compute_metrics(results)


# ---- worked example ------------------------------------------------------------


def test_worked_example_by_hand():
    rankings = {"a": ["d1", "d2", "d3"], "b": ["d3", "d1", "d2"]}
    qrels = {"a": {"d2", "d3"}, "b": {"d2"}}
    assert recall_at_k(rankings, qrels, 1) == 0.0
    assert recall_at_k(rankings, qrels, 2) == pytest.approx((0.5 + 0.0) / 2)
    assert mrr_at_k(rankings, qrels, 3) == pytest.approx((1 / 2 + 1 / 3) / 2)
    ideal_a = 1 + 1 / math.log2(3)
    a = (1 / math.log2(3) + 1 / math.log2(4)) / ideal_a
    assert ndcg_at_k(rankings, qrels, 3) == pytest.approx((a + (1 / math.log2(4))) / 2)


def test_perfect_ranking_scores_one_and_extra_queries_in_rankings_are_ignored():
    rankings = {"a": ["d2", "d3", "d1"], "unjudged": ["d1"]}
    qrels = {"a": {"d2", "d3"}}
    assert recall_at_k(rankings, qrels, 2) == mrr_at_k(rankings, qrels, 2) == ndcg_at_k(rankings, qrels, 2) == 1.0


# ---- against the library -------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_docs=st.integers(2, 25), n_queries=st.integers(1, 8))
def test_metrics_match_information_retrieval_evaluator(seed, n_docs, n_queries):
    rng = np.random.default_rng(seed)
    doc_ids = [f"d{i:02d}" for i in rng.permutation(n_docs)]
    query_ids = [f"q{i}" for i in range(n_queries)]
    scores = rng.integers(0, 6, size=(n_queries, n_docs)) / 5.0  # few values: many ties
    qrels = {q: set(rng.choice(doc_ids, size=rng.integers(1, min(4, n_docs) + 1), replace=False).tolist())
             for q in query_ids}
    ours = rank_documents(scores, doc_ids, query_ids)
    lib = library_metrics(scores, doc_ids, query_ids, qrels)
    for k in KS:
        assert recall_at_k(ours, qrels, k) == pytest.approx(lib["recall@k"][k], abs=1e-12)
        assert mrr_at_k(ours, qrels, k) == pytest.approx(lib["mrr@k"][k], abs=1e-12)
        assert ndcg_at_k(ours, qrels, k) == pytest.approx(lib["ndcg@k"][k], abs=1e-12)


def test_metrics_match_the_evaluator_on_a_real_model():
    """End to end: the evaluator encodes with MiniLM itself; our rankings come from the same vectors."""
    from labs.retrieval.index import encode_texts
    from labs.retrieval.models import load_minilm

    data = make_helpdesk()
    queries = data.split_queries("val")
    model = load_minilm()
    ev = InformationRetrievalEvaluator(
        queries={q["query_id"]: q["text"] for q in queries}, corpus={d["doc_id"]: d["text"] for d in data.corpus},
        relevant_docs=data.qrels("val"), mrr_at_k=[5, 10], ndcg_at_k=[5, 10], precision_recall_at_k=[1, 5, 10],
        write_csv=False, name="val")
    lib = ev(model)
    E = encode_texts(model, [d["text"] for d in data.corpus])
    Q = encode_texts(model, [q["text"] for q in queries])
    ours = retrieval_metrics(rank_documents(Q @ E.T, [d["doc_id"] for d in data.corpus],
                                            [q["query_id"] for q in queries]), data.qrels("val"), (5, 10))
    for k in (5, 10):
        for name in ("recall", "mrr", "ndcg"):
            assert ours[f"{name}@{k}"] == pytest.approx(lib[f"val_cosine_{name}@{k}"], abs=1e-6)


# ---- ranking and its ties ------------------------------------------------------


def test_ties_are_broken_by_ascending_doc_id():
    ranked = rank_documents(np.array([[0.5, 0.9, 0.5, 0.5]]), ["c", "z", "a", "b"], ["q"])
    assert ranked["q"] == ["z", "a", "b", "c"]
    assert rank_documents(np.array([[0.5, 0.9, 0.5, 0.5]]), ["c", "z", "a", "b"], ["q"], k=2)["q"] == ["z", "a"]


# ---- baselines -----------------------------------------------------------------


def test_tfidf_is_cosine_of_sklearn_vectors():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    data = make_helpdesk()
    docs, queries = [d["text"] for d in data.corpus], [q["text"] for q in data.queries[:20]]
    vec = TfidfVectorizer(ngram_range=(1, 2)).fit(docs)
    expected = cosine_similarity(vec.transform(queries), vec.transform(docs))
    assert np.allclose(tfidf_scores(docs, queries), expected)
    assert "change the" in vec.vocabulary_  # bigrams are in


def test_bm25_agrees_with_bm25s_retrieve():
    import bm25s

    data = make_helpdesk()
    docs, queries = [d["text"] for d in data.corpus], [q["text"] for q in data.queries[::7]]
    scores = bm25_scores(docs, queries)
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(docs, show_progress=False), show_progress=False)
    idx, top = retriever.retrieve(bm25s.tokenize(queries, show_progress=False), k=3, show_progress=False)
    assert np.allclose(np.take_along_axis(scores, idx, axis=1), top, atol=1e-5)


def test_baselines_are_imperfect_on_the_fixture():
    """The fixture is meant to leave room: neither baseline is perfect on every metric."""
    data = make_helpdesk()
    for method in ("tfidf", "bm25"):
        m = retrieval_metrics(baseline_rankings(method, data.corpus, data.split_queries("val")), data.qrels("val"))
        assert min(m.values()) < 1.0


# ---- bad input -----------------------------------------------------------------


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "5"])
def test_bad_k(k):
    with pytest.raises(ValueError, match="k must be"):
        recall_at_k({"a": ["d"]}, {"a": {"d"}}, k)


def test_bad_rankings_and_qrels():
    with pytest.raises(ValueError, match="qrels is empty"):
        mrr_at_k({"a": ["d"]}, {}, 1)
    with pytest.raises(ValueError, match="qrels\\['a'\\] is empty"):
        mrr_at_k({"a": ["d"]}, {"a": set()}, 1)
    with pytest.raises(ValueError, match="no entry for query 'b'"):
        ndcg_at_k({"a": ["d"]}, {"b": {"d"}}, 1)
    with pytest.raises(ValueError, match="distinct doc ids"):
        recall_at_k({"a": ["d", "d"]}, {"a": {"d"}}, 1)
    with pytest.raises(ValueError, match="shape"):
        rank_documents(np.zeros((2, 3)), ["a", "b"], ["q1", "q2"])
    with pytest.raises(ValueError, match="NaN"):
        rank_documents(np.array([[np.nan, 1.0]]), ["a", "b"], ["q"])
    with pytest.raises(ValueError, match="method must be"):
        baseline_rankings("dense", [], [])


# ---- what the metrics refuse: strings for sets, graded judgments, repeated ids -----------------------


RANKINGS = {"a": ["d1", "d2", "d3"]}


@pytest.mark.parametrize("qrels, message", [
    ({"a": "d1"}, r"qrels\['a'\] must be a set \(or list\) of relevant doc ids, got str"),
    ({"a": b"d1"}, "got bytes"),
    ({"a": ["d1", "d1"]}, r"qrels\['a'\] lists 'd1' twice"),
    ({"a": {"d1": 1, "d2": 0}}, "got dict; give the ids whose grade counts as relevant"),
    ({"a": {1, 2}}, r"qrels\['a'\] holds 1 \(int\): doc ids are strings"),
    ({"a": None}, "got NoneType"),
    ([("a", {"d1"})], "qrels must be a mapping"),
], ids=["str", "bytes", "dup-list", "graded-dict", "int-ids", "none", "list-of-pairs"])
@pytest.mark.parametrize("metric", [recall_at_k, mrr_at_k, ndcg_at_k])
def test_metrics_refuse_qrels_that_are_not_collections_of_ids(metric, qrels, message):
    with pytest.raises(ValueError, match=message):
        metric(RANKINGS, qrels, 3)


def test_metrics_accept_sets_lists_and_tuples_alike():
    values = {recall_at_k(RANKINGS, {"a": rel}, 2) for rel in ({"d2", "d9"}, ["d2", "d9"], ("d9", "d2"),
                                                               frozenset({"d2", "d9"}))}
    assert values == {0.5}


@pytest.mark.parametrize("rankings", [{"a": "d1d2"}, {"a": ["d1", 2]}, {"a": np.array(["d1"])}])
def test_metrics_refuse_rankings_that_are_not_lists_of_ids(rankings):
    with pytest.raises(ValueError, match=r"rankings\['a'\] must be a list of distinct doc ids"):
        mrr_at_k(rankings, {"a": {"d1"}}, 1)


@pytest.mark.parametrize("k", [0, -2, 2.0, True, None, "3", np.float64(1)])
def test_k_must_be_a_positive_int_everywhere(k):
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        ndcg_at_k(RANKINGS, {"a": {"d1"}}, k)
    if k is not None:
        with pytest.raises(ValueError, match="k .*must be an integer >= 1"):
            rank_documents(np.zeros((1, 3)), ["d1", "d2", "d3"], ["a"], k=k)
    with pytest.raises(ValueError, match="ks"):
        retrieval_metrics(RANKINGS, {"a": {"d1"}}, [1, k])
    assert recall_at_k(RANKINGS, {"a": {"d1"}}, np.int64(1)) == 1.0  # NumPy integers are integers


def test_rank_documents_refuses_repeated_ids():
    with pytest.raises(ValueError, match="doc_ids lists 'd1' twice"):
        rank_documents(np.zeros((1, 3)), ["d1", "d2", "d1"], ["a"])
    with pytest.raises(ValueError, match="query_ids lists 'a' twice"):
        rank_documents(np.zeros((2, 2)), ["d1", "d2"], ["a", "a"])


@pytest.mark.parametrize("corpus, queries, message", [
    ([{"doc_id": "d", "body": "x"}], [{"query_id": "q", "text": "x"}], r"corpus\[0\] needs a string field 'text'"),
    ([{"doc_id": "d", "text": "x"}], [{"text": "x"}], r"queries\[0\] needs a string field 'query_id'"),
    ([{"doc_id": 3, "text": "x"}], [{"query_id": "q", "text": "x"}], r"corpus\[0\] needs a string field 'doc_id'"),
    (["just text"], [{"query_id": "q", "text": "x"}], r"corpus\[0\] needs a string field"),
])
def test_baseline_rankings_names_a_row_without_its_fields(corpus, queries, message):
    with pytest.raises(ValueError, match=message):
        baseline_rankings("tfidf", corpus, queries)


def test_retrieval_metrics_needs_some_ks():
    with pytest.raises(ValueError, match="ks must be a non-empty list"):
        retrieval_metrics(RANKINGS, {"a": {"d1"}}, [])
    with pytest.raises(ValueError, match="ks must be a non-empty list"):
        retrieval_metrics(RANKINGS, {"a": {"d1"}}, 5)


@pytest.mark.parametrize("query", ["I", "???", "\N{GRINNING FACE}", "", "the a of", "x y z"])
def test_bm25_query_without_a_token_scores_zero_and_ranks_by_doc_id(query):
    corpus = [{"doc_id": d, "text": t} for d, t in (("c", "Cancel my plan"), ("a", "Reset the password"),
                                                    ("b", "Export all data"))]
    queries = [{"query_id": "q", "text": query}, {"query_id": "r", "text": "cancel plan"}]
    scores = bm25_scores([d["text"] for d in corpus], [q["text"] for q in queries])
    assert scores.shape == (2, 3) and not scores[0].any() and scores[1, 0] > 0
    rankings = baseline_rankings("bm25", corpus, queries)
    assert rankings["q"] == ["a", "b", "c"] and rankings["r"][0] == "c"


def test_bm25_refuses_a_corpus_without_any_token():
    with pytest.raises(ValueError, match="no document of the corpus has a BM25 token"):
        bm25_scores(["???", "I"], ["cancel"])


# ---- ids are never converted, scores are real ------------------------------------------------------


@pytest.mark.parametrize("doc_ids, message", [
    ([1, 2], r"doc_ids holds 1 \(int\): .* 1 and '1' cannot become one id"),
    ([1, "1"], r"doc_ids holds 1 \(int\)"),
    (["a", np.str_("b")], None),  # NumPy strings are strings
    ("ab", "doc_ids must be a list of id strings, got 'ab'"),
    (["a", "a"], "doc_ids lists 'a' twice"),
], ids=["ints", "int-and-str", "numpy-str", "a-string", "repeat"])
def test_rank_documents_never_converts_ids(doc_ids, message):
    if message is None:
        ranked = rank_documents(np.array([[0.1, 0.9]]), doc_ids, ["q"])
        assert ranked == {"q": ["b", "a"]} and all(type(d) is type(x) for d, x in zip(ranked["q"], doc_ids[::-1]))
        return
    with pytest.raises(ValueError, match=message):
        rank_documents(np.zeros((1, 2)), doc_ids, ["q"])


@pytest.mark.parametrize("scores, message", [
    ([[0.1, 0.2], [0.3]], "scores is ragged"),
    (np.array([[0.1 + 1j, 0.2]]), "scores holds complex numbers"),
    ([[True, False]], "scores must hold real numbers, got booleans"),
    ([["0.1", "0.2"]], "scores must hold real numbers, got text"),
    (torch.zeros(1, 2, requires_grad=True), r"scores is a torch tensor that requires grad.*Pass scores.detach\(\)"),
    (np.zeros(2), "scores must be 2-D"),
], ids=["ragged", "complex", "bools", "strings", "requires-grad", "1-d"])
def test_rank_documents_needs_a_table_of_real_scores(scores, message):
    with pytest.raises(ValueError, match=message):
        rank_documents(scores, ["a", "b"], ["q"])


def test_rank_documents_reads_tensors_and_integer_scores():
    assert rank_documents(torch.tensor([[0.1, 0.9]]), ["a", "b"], ["q"]) == {"q": ["b", "a"]}
    assert rank_documents([[1, 3]], ["a", "b"], ["q"]) == {"q": ["b", "a"]}


@pytest.mark.parametrize("scorer", [tfidf_scores, bm25_scores])
def test_scorers_refuse_a_string_where_a_list_of_texts_belongs(scorer):
    with pytest.raises(ValueError, match="corpus_texts must be a list of texts, not one string"):
        scorer("cancel my plan", ["cancel"])
    with pytest.raises(ValueError, match=r"query_texts\[0\] must be a string, got 3"):
        scorer(["cancel my plan", "reset it"], [3])
