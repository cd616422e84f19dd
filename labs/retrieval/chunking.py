"""Long documents: how much the length limit cuts, and overlapping windows that cut nothing.

In plain words: an encoder reads at most ``max_length`` tokens of a text (its special tokens
included) and silently drops the rest, so a long document is one vector of its beginning.
`truncation` counts, for a list of texts, how many are over the limit and what share of their
tokens is cut. `windows` splits a document into overlapping windows of ``chunk`` tokens, a new
one every ``stride`` tokens, the last ending at the document's end, so every token is in some
window; each window is embedded as a document of its own, and `document_scores` scores a
document by its best window (``max``) or by the mean of its windows (``mean``).

Shapes
------
=============  ================  ============================================
windows        list[str]         one document's window texts (1 if it fits)
window_scores  (Q, W) array      query x window cosines
window_doc     (W,) int array    the document row of each window
scores         (Q, N) array      query x document: max or mean over its windows
=============  ================  ============================================

A window is a span of the original text (from its first token's first character to its last
token's last character, by the tokenizer's offsets), so nothing is re-spelled. Relations:
`labs.retrieval.index.write_index` stores the windows' vectors (``chunk_embeddings.npy``) and
their documents (``chunk_docs.json``); lesson 10 (``notebooks/10_beyond_one_vector.ipynb``)
shows one vector blurring a long passage.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["WINDOW_SCORES", "token_counts", "truncation", "truncation_line", "window_starts", "windows",
           "document_scores", "document_scores_loop"]

#: How a document is scored from its windows' cosines.
WINDOW_SCORES = ("max", "mean")


def token_counts(tokenizer, texts: Sequence[str]) -> list[int]:
    """Tokens each text becomes, special tokens included (what the encoder would read uncut)."""
    if not texts:
        return []
    ids = tokenizer(list(texts), add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
    return [len(x) for x in ids]


def truncation(tokenizer, texts: Sequence[str], max_length: int) -> dict:
    """How the limit of ``max_length`` tokens cuts ``texts``: ``texts``, ``over`` (how many exceed
    it), ``tokens_over`` (their tokens), ``cut`` (tokens dropped), ``cut_share`` (cut / tokens_over,
    0 when none is over) and ``cut_share_all`` (cut / all tokens)."""
    counts = token_counts(tokenizer, texts)
    over = [c for c in counts if c > max_length]
    cut = sum(c - max_length for c in over)
    return {"texts": len(counts), "max_length": int(max_length), "over": len(over), "tokens_over": sum(over),
            "cut": cut, "cut_share": cut / sum(over) if over else 0.0,
            "cut_share_all": cut / sum(counts) if counts else 0.0}


def truncation_line(name: str, report: dict) -> str:
    """One printed line of a `truncation` report, e.g. ``documents: 12 of 300 over 128 tokens, ...``."""
    return (f"{name}: {report['over']} of {report['texts']} over {report['max_length']} tokens; "
            f"{report['cut_share']:.1%} of their tokens cut ({report['cut_share_all']:.1%} of all)")


def window_starts(n_tokens: int, chunk: int, stride: int) -> list[int]:
    """First token of each window over ``n_tokens`` tokens: 0, stride, 2*stride, ..., and a last one
    ending exactly at the end, so every token is in a window (one window if it fits)."""
    if n_tokens <= chunk:
        return [0]
    starts = list(range(0, n_tokens - chunk + 1, stride))
    if starts[-1] + chunk < n_tokens:
        starts.append(n_tokens - chunk)
    return starts


def windows(tokenizer, text: str, chunk: int, stride: int) -> list[str]:
    """The text's windows of ``chunk`` tokens (special tokens not counted), every ``stride`` tokens,
    as spans of the original text."""
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, truncation=False, verbose=False)
    offsets = [o for o in enc["offset_mapping"] if o[1] > o[0]] or [(0, len(text))]
    return [text[offsets[s][0]:offsets[min(s + chunk, len(offsets)) - 1][1]]
            for s in window_starts(len(offsets), chunk, stride)]


def document_scores(window_scores: np.ndarray, window_doc: np.ndarray, n_docs: int, how: str) -> np.ndarray:
    """(Q, N) document scores from (Q, W) window scores: the max or the mean over each document's
    windows (every document has at least one)."""
    window_scores = np.asarray(window_scores, dtype=np.float64)
    window_doc = np.asarray(window_doc, dtype=np.int64)
    if how == "max":
        out = np.full((window_scores.shape[0], n_docs), -np.inf)
        np.maximum.at(out.T, window_doc, window_scores.T)
        return out
    if how == "mean":
        total = np.zeros((window_scores.shape[0], n_docs))
        np.add.at(total.T, window_doc, window_scores.T)
        return total / np.bincount(window_doc, minlength=n_docs)
    raise ValueError(f"window score must be one of {', '.join(WINDOW_SCORES)}, got {how!r}")


def document_scores_loop(window_scores, window_doc, n_docs: int, how: str) -> np.ndarray:
    """`document_scores` written as a loop over documents (the readable form, tested equal)."""
    window_scores, window_doc = np.asarray(window_scores, dtype=np.float64), list(window_doc)
    out = np.zeros((window_scores.shape[0], n_docs))
    for d in range(n_docs):
        columns = [w for w, doc in enumerate(window_doc) if doc == d]
        part = window_scores[:, columns]
        out[:, d] = part.max(axis=1) if how == "max" else part.mean(axis=1)
    return out
