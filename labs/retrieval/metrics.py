"""Retrieval metrics by hand, and the two lexical baselines a neural model must beat.

In plain words: a retriever returns, for every query, the documents in order.
Recall@k asks "what share of the right documents are in the first k?", MRR@k
asks "how high is the first right one?" (1 for first place, 1/2 for second, 0
beyond k), and nDCG@k gives every right document a reward that shrinks with its
position (1 / log2(position + 1)), divided by the best reward possible. Each is
averaged over queries. Several relevant documents per query are allowed.

Shapes
------
=========  ==========================  =============================================
name       type                        meaning
=========  ==========================  =============================================
rankings   dict[str, list[str]]        query id -> distinct doc ids, best first
qrels      dict[str, set[str]]         query id -> the relevant doc ids (non-empty; a set,
                                       or a list without repeats; never a string)
k          int >= 1                    how many top results count
scores     (Q, N) array                query x document similarity
doc_ids    list[str] of length N       column -> doc id
=========  ==========================  =============================================

Ties: `rank_documents` orders equal scores by ascending doc id, the same rule as
sentence-transformers' ``InformationRetrievalEvaluator``, so results never depend
on the sort algorithm. Relations: the three metrics equal that evaluator's
``recall@k``, ``mrr@k`` and ``ndcg@k`` (tested); `tfidf_scores` is scikit-learn's
``TfidfVectorizer`` with unigrams and bigrams; `bm25_scores` is the ``bm25s``
package. Lesson: ``notebooks/07_finetuning.ipynb``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from labs.retrieval import validate

__all__ = [
    "recall_at_k",
    "mrr_at_k",
    "ndcg_at_k",
    "retrieval_metrics",
    "rank_documents",
    "tfidf_scores",
    "bm25_scores",
    "baseline_rankings",
]


def _check_k(k, name: str = "k") -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {k!r}")


def _check(rankings: Mapping[str, Sequence[str]], qrels: Mapping[str, set[str]], k: int) -> None:
    """Refuse input that would score silently wrong: a string or dict where a collection of ids
    belongs (substring matches, graded judgments), duplicate ids, ids that are not strings."""
    _check_k(k)
    for name, value in (("rankings", rankings), ("qrels", qrels)):
        if not isinstance(value, Mapping):
            raise ValueError(f"{name} must be a mapping from query id to doc ids, got {type(value).__name__}")
    if not qrels:
        raise ValueError("qrels is empty: there are no queries to average over")
    for qid, rel in qrels.items():
        if isinstance(rel, (str, bytes, Mapping)) or not isinstance(rel, (set, frozenset, list, tuple)):
            raise ValueError(f"qrels[{qid!r}] must be a set (or list) of relevant doc ids, got {type(rel).__name__}"
                             + ("; give the ids whose grade counts as relevant" if isinstance(rel, Mapping) else ""))
        if not rel:
            raise ValueError(f"qrels[{qid!r}] is empty: every query needs at least one relevant doc id")
        bad = next((d for d in rel if not isinstance(d, str)), None)
        if bad is not None:
            raise ValueError(f"qrels[{qid!r}] holds {bad!r} ({type(bad).__name__}): doc ids are strings")
        if len(set(rel)) != len(rel):
            twice = next(d for i, d in enumerate(rel) if d in list(rel)[:i])
            raise ValueError(f"qrels[{qid!r}] lists {twice!r} twice: list each relevant doc id once")
        if qid not in rankings:
            raise ValueError(f"rankings has no entry for query {qid!r} from qrels")
        ranked = rankings[qid]
        if (isinstance(ranked, (str, bytes, Mapping)) or not isinstance(ranked, Sequence)
                or not all(isinstance(d, str) for d in ranked) or len(set(ranked)) != len(ranked)):
            raise ValueError(f"rankings[{qid!r}] must be a list of distinct doc ids (strings)")


def recall_at_k(rankings: Mapping[str, Sequence[str]], qrels: Mapping[str, set[str]], k: int) -> float:
    """Mean over the queries of qrels of |top-k ∩ relevant| / |relevant|."""
    _check(rankings, qrels, k)
    return float(np.mean([len(set(rankings[q][:k]) & set(rel)) / len(rel) for q, rel in qrels.items()]))


def mrr_at_k(rankings: Mapping[str, Sequence[str]], qrels: Mapping[str, set[str]], k: int) -> float:
    """Mean over the queries of 1 / (position of the first relevant doc in the top k), 0 if none."""
    _check(rankings, qrels, k)
    total = 0.0
    for q, rel in qrels.items():
        for position, doc in enumerate(rankings[q][:k], start=1):
            if doc in rel:
                total += 1.0 / position
                break
    return total / len(qrels)


def ndcg_at_k(rankings: Mapping[str, Sequence[str]], qrels: Mapping[str, set[str]], k: int) -> float:
    """Mean binary nDCG@k: sum of 1/log2(position+1) over relevant docs in the top k, over its ideal."""
    _check(rankings, qrels, k)
    values = []
    for q, rel in qrels.items():
        dcg = sum(1.0 / math.log2(i + 2) for i, doc in enumerate(rankings[q][:k]) if doc in rel)
        ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(rel), k)))
        values.append(dcg / ideal)
    return float(np.mean(values))


def retrieval_metrics(rankings: Mapping[str, Sequence[str]], qrels: Mapping[str, set[str]],
                      ks: Sequence[int] = (1, 5, 10)) -> dict[str, float]:
    """All three metrics at each k, keyed like ``"recall@5"``, ``"mrr@5"``, ``"ndcg@5"``."""
    if isinstance(ks, (str, bytes)) or not isinstance(ks, Sequence) or not ks:
        raise ValueError(f"ks must be a non-empty list of integers >= 1, got {ks!r}")
    for k in ks:
        _check_k(k, "every k in ks")
    out = {}
    for k in ks:
        out[f"recall@{k}"] = recall_at_k(rankings, qrels, k)
        out[f"mrr@{k}"] = mrr_at_k(rankings, qrels, k)
        out[f"ndcg@{k}"] = ndcg_at_k(rankings, qrels, k)
    return out


def rank_documents(scores: np.ndarray, doc_ids: Sequence[str], query_ids: Sequence[str],
                   k: int | None = None) -> dict[str, list[str]]:
    """Rank the N documents for each of Q queries from a (Q, N) score table, best first.

    Equal scores are ordered by ascending doc id. Returns the top ``k`` (all if None). Ids must be
    distinct strings (they are returned as given, never converted); ``scores`` must be real and
    finite (a tensor that requires grad is refused: detach it).
    """
    doc_ids, query_ids = validate.ids("doc_ids", doc_ids), validate.ids("query_ids", query_ids)
    scores = validate.scores("scores", scores)
    if scores.shape != (len(query_ids), len(doc_ids)):
        raise ValueError(f"scores must have shape (len(query_ids), len(doc_ids)) = "
                         f"({len(query_ids)}, {len(doc_ids)}), got {scores.shape}")
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores contains NaN or infinite entries")
    if k is not None:
        _check_k(k, "k (None for all)")
    by_id = sorted(range(len(doc_ids)), key=doc_ids.__getitem__)  # ascending doc id
    by_id = np.asarray(by_id, dtype=np.int64)
    out = {}
    for qid, row in zip(query_ids, scores):
        order = by_id[np.argsort(-row[by_id], kind="stable")]  # descending score, ties by doc id
        out[qid] = [doc_ids[i] for i in order[:k]]
    return out


def tfidf_scores(corpus_texts: Sequence[str], query_texts: Sequence[str]) -> np.ndarray:
    """Cosine similarities (Q, N) of TF-IDF vectors (unigrams and bigrams) fitted on the corpus."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    corpus_texts, query_texts = validate.texts("corpus_texts", corpus_texts), validate.texts("query_texts", query_texts)
    if not corpus_texts:
        raise ValueError("corpus_texts is empty: there is nothing to rank")
    vectorizer = TfidfVectorizer(ngram_range=(1, 2))
    docs = vectorizer.fit_transform(list(corpus_texts))
    queries = vectorizer.transform(list(query_texts))
    return (queries @ docs.T).toarray()  # rows are L2-normalised, so this is the cosine


def bm25_scores(corpus_texts: Sequence[str], query_texts: Sequence[str]) -> np.ndarray:
    """BM25 scores (Q, N) from the ``bm25s`` package (Lucene variant, English stop words removed).

    A query with no BM25 token (only stop words, one-letter words, punctuation or emoji,
    e.g. ``"I"``, ``"???"``) matches nothing: its row is all zeros, so `rank_documents`
    lists the corpus in ascending doc id order. A corpus with no token at all is refused.
    """
    import bm25s

    corpus_texts, query_texts = validate.texts("corpus_texts", corpus_texts), validate.texts("query_texts", query_texts)
    if len(corpus_texts) == 0:
        raise ValueError("corpus_texts is empty: there is nothing to rank")
    corpus_tokens = bm25s.tokenize(list(corpus_texts), show_progress=False)
    if not corpus_tokens.vocab:
        raise ValueError("no document of the corpus has a BM25 token (all stop words, single letters or symbols)")
    retriever = bm25s.BM25()
    retriever.index(corpus_tokens, show_progress=False)
    tokens = bm25s.tokenize(list(query_texts), show_progress=False, return_ids=False)
    rows = [retriever.get_scores(t) if t else np.zeros(len(corpus_texts)) for t in tokens]
    return np.stack(rows).astype(np.float64) if rows else np.zeros((0, len(corpus_texts)))


def baseline_rankings(method: str, corpus: Sequence[dict], queries: Sequence[dict]) -> dict[str, list[str]]:
    """Rank the whole corpus for each query with ``method`` in {"tfidf", "bm25"}."""
    scorers = {"tfidf": tfidf_scores, "bm25": bm25_scores}
    if method not in scorers:
        raise ValueError(f"method must be one of {sorted(scorers)}, got {method!r}")
    doc_ids, doc_texts = _column(corpus, "corpus", "doc_id"), _column(corpus, "corpus", "text")
    query_ids, query_texts = _column(queries, "queries", "query_id"), _column(queries, "queries", "text")
    return rank_documents(scorers[method](doc_texts, query_texts), doc_ids, query_ids)


def _column(rows: Sequence[dict], name: str, field: str) -> list[str]:
    """The string ``field`` of every row; ValueError naming the row otherwise."""
    out = []
    for i, row in enumerate(rows):
        value = row.get(field) if isinstance(row, Mapping) else None
        if not isinstance(value, str):
            raise ValueError(f"{name}[{i}] needs a string field {field!r}, got {row!r:.80}")
        out.append(value)
    return out
