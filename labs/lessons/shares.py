"""Token shares of a cosine: what each token of two texts adds to their cosine under mean pooling.

In plain terms: with mean pooling a text's vector is the average of its real tokens' vectors,
e_a = (1/n) sum_t h_t, and a dot product is linear, so the cosine of two texts is a sum with one
term per token. Token t of text a adds h_t . e_b_hat / (n ||e_a||), where e_b_hat is text b's unit
vector; these n shares add up to cos(a, b) exactly. The same holds for text b's tokens, and for
token pairs: pair (t, s) adds h_t . g_s / (n m ||e_a|| ||e_b||). A share is a signed number: a
token can pull the cosine down.

Shapes
------
================  ==============  ==================================================
name              shape           meaning
================  ==============  ==================================================
token_embeddings  (2, T, D)       the two texts' token vectors, padded to T positions
attention_mask    (2, T)          1 for a real token, 0 for padding
shares["a"]       (T,)            each position's share of the cosine in text a (0 at padding)
shares["b"]       (T,)            the same for text b
pairs             (T, T)          token pair (t, s)'s share; it sums to the cosine
================  ==============  ==================================================

Relations: the pooling is `labs.lessons.pooling.mean_pool`; the cosine the shares add up to is
the cosine of sentence-transformers' ``encode(..., normalize_embeddings=True)`` for a model that
pools by the mean (all-MiniLM-L6-v2). The book's "why this score" panel computes the same split
in the page, on the page's copy of the model.

Lesson: ``notebooks/01_pooling.ipynb``.
"""

from __future__ import annotations

import torch

from labs.checks import padding_mask, require, tensor, text

__all__ = ["token_shares", "pair_shares", "text_shares"]


def _pair(token_embeddings, attention_mask) -> tuple[torch.Tensor, torch.Tensor]:
    """A (2, T, D) float64 grid and its (2, T) bool mask, or ValueError naming the argument."""
    grid = tensor(token_embeddings, "token_embeddings", ndim=3, what="3-D (2 texts, tokens, dim)", floats=True,
                  nonempty=True, finite=True)
    require(grid.shape[0] == 2, f"token_embeddings must hold exactly two texts (2, tokens, dim), got shape "
            f"{tuple(grid.shape)}")
    return grid.double(), padding_mask(attention_mask, "attention_mask", grid)


def _means(grid: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The masked means e (2, D), their lengths (2,) and the real-token counts n (2,)."""
    kept = grid.masked_fill(~mask.unsqueeze(-1), 0.0)
    n = mask.sum(dim=1).double()
    e = kept.sum(dim=1) / n[:, None]
    lengths = e.norm(dim=1)
    require(bool((lengths > 0).all()), "a text's mean token vector is all zeros: it has no direction, so no cosine")
    return e, lengths, n


def token_shares(token_embeddings: torch.Tensor, attention_mask: torch.Tensor) -> dict:
    """Each token's share of the cosine of two texts under mean pooling: (2, T, D) grid, (2, T) mask.

    Returns ``{"cosine": float, "a": (T,), "b": (T,)}`` in float64: ``a[t] = h_t . e_b_hat / (n ||e_a||)``
    for text a's real token t (0 at a padded position), and the same for text b. Each of ``a`` and
    ``b`` sums to ``cosine``, the cosine of the two mean-pooled vectors.
    """
    grid, mask = _pair(token_embeddings, attention_mask)
    e, lengths, n = _means(grid, mask)
    unit = e / lengths[:, None]  # (2, D)
    other = unit.flip(0)  # text a meets b's unit vector, b meets a's
    shares = torch.einsum("btd,bd->bt", grid, other) / (n * lengths)[:, None]
    shares = shares.masked_fill(~mask, 0.0)
    return {"cosine": float(unit[0] @ unit[1]), "a": shares[0], "b": shares[1]}


def pair_shares(token_embeddings: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Each token pair's share of the cosine: (2, T, D) grid, (2, T) mask -> (T, T) float64.

    Entry (t, s) is ``h_t . g_s / (n m ||e_a|| ||e_b||)`` for text a's token t and text b's token s
    (0 where either is padding). The table sums to the cosine; its row sums are `token_shares`'s
    ``a``, its column sums ``b``.
    """
    grid, mask = _pair(token_embeddings, attention_mask)
    _, lengths, n = _means(grid, mask)
    both = mask[0][:, None] & mask[1][None, :]
    pairs = grid[0] @ grid[1].T / (n[0] * n[1] * lengths[0] * lengths[1])
    return pairs.masked_fill(~both, 0.0)


def text_shares(model, text_a: str, text_b: str) -> dict:
    """`token_shares` of two texts under a sentence-transformers model that pools by the mean.

    Runs the model's tokenizer and transformer (its first module) on the two texts as one padded
    batch, as ``encode`` does. Returns ``{"cosine": float, "tokens_a": [str], "a": [float],
    "tokens_b": [str], "b": [float]}``: the real tokens of each text (``[CLS]`` and ``[SEP]``
    included: mean pooling counts them) and their shares, which sum to ``cosine``.
    """
    text_a, text_b = text(text_a, "text_a"), text(text_b, "text_b")
    require(callable(getattr(model, "preprocess", None)) and len(model) >= 2
            and getattr(model[1], "pooling_mode", None) == "mean",
            lambda: "model must be a SentenceTransformer whose second module pools by the mean (its token "
                    f"shares are exact only then), got {type(model).__name__}")
    features = model.preprocess([text_a, text_b])
    with torch.no_grad():
        grid = model[0](features)["token_embeddings"]
    mask = features["attention_mask"]
    split = token_shares(grid, mask)
    tokens = [model.tokenizer.convert_ids_to_tokens(row[row_mask.bool()]) for row, row_mask in
              zip(features["input_ids"], mask)]
    return {"cosine": split["cosine"],
            "tokens_a": tokens[0], "a": split["a"][mask[0].bool()].tolist(),
            "tokens_b": tokens[1], "b": split["b"][mask[1].bool()].tolist()}
