"""Pooling: from a grid of token vectors to one vector per text.

In plain terms: a transformer encoder gives one vector per token, a grid of
shape (tokens x dim) per text. Search needs one vector per text, so a pooling
step collapses the grid: average the real tokens (mean), take the first token
(CLS), or take the last real token (last token). Padding tokens are not part
of the text; the attention mask says which positions are real, and every
pooling here uses it.

Shapes
------
================  ==============  ==================================================
name              shape           meaning
================  ==============  ==================================================
token_embeddings  (B, T, D)       B texts, T token positions (with padding), D dims
attention_mask    (B, T)          1 for a real token, 0 for padding
result            (B, D)          one vector per text
================  ==============  ==================================================

Relations: `mean_pool`, `cls_pool` and `last_token_pool` compute what
sentence-transformers' ``Pooling`` module computes with ``pooling_mode`` set to
``"mean"``, ``"cls"`` and ``"lasttoken"``. `pooling_cosines` compares two texts
of one padded batch under mean pooling with the mask, mean pooling with the mask
forgotten, and CLS pooling (what lesson 1's live pooling demo shows). The packaged
all-MiniLM-L6-v2 (mean pooling, then L2 normalization) loads with
`labs.retrieval.models.load_minilm`.

Lesson: ``notebooks/01_pooling.ipynb``.
"""

from __future__ import annotations

import torch

from labs.checks import padding_mask, require, tensor

__all__ = [
    "mean_pool",
    "cls_pool",
    "last_token_pool",
    "pooling_cosines",
]


def _grid(token_embeddings) -> torch.Tensor:
    return tensor(token_embeddings, "token_embeddings", ndim=3, what="3-D (batch, tokens, dim)", floats=True,
                  nonempty=True)


def mean_pool(token_embeddings: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Average of the real tokens: (B, T, D) grid and (B, T) mask -> (B, D).

    Padding positions (mask 0) are left out of both the sum and the count, whatever they hold
    (NaN or infinity at a padded position does not reach the result). The sum is taken in
    float32 at least (float16 and bfloat16 sums of many large entries would overflow) and the
    mean is returned in the grid's dtype.
    """
    mask = padding_mask(attention_mask, "attention_mask", _grid(token_embeddings))
    wide = torch.promote_types(token_embeddings.dtype, torch.float32)
    kept = token_embeddings.to(wide).masked_fill(~mask.unsqueeze(-1), 0.0)  # (B, T, D), padding exactly 0
    counts = mask.sum(dim=1, keepdim=True).to(wide)  # (B, 1), at least 1 after the check
    return (kept.sum(dim=1) / counts).to(token_embeddings.dtype)


def cls_pool(token_embeddings: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """The first real token's vector: (B, T, D) -> (B, D).

    Without a mask that is position 0 (right padding). With a mask it is the first
    position whose mask is 1, so left-padded batches work too.
    """
    grid = _grid(token_embeddings)
    if attention_mask is None:
        return grid[:, 0]
    first = padding_mask(attention_mask, "attention_mask", grid).int().argmax(dim=1)  # the first maximum
    return grid[torch.arange(grid.shape[0], device=first.device), first]


def last_token_pool(token_embeddings: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The last real token's vector: (B, T, D) grid and (B, T) mask -> (B, D).

    Works for right padding (real tokens, then pads) and left padding (pads, then
    real tokens): it takes the highest position whose mask is 1.
    """
    mask = padding_mask(attention_mask, "attention_mask", _grid(token_embeddings))
    positions = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
    last = torch.where(mask, positions, -1).max(dim=1).values  # (B,)
    return token_embeddings[torch.arange(token_embeddings.shape[0], device=last.device), last]


def pooling_cosines(token_embeddings: torch.Tensor, attention_mask: torch.Tensor) -> dict[str, float]:
    """Cosine between the two texts of one padded batch, pooled three ways: (2, T, D) grid, (2, T) mask.

    Returns ``{"mean": ..., "mean_unmasked": ..., "cls": ...}``: mean pooling over the real tokens
    (`mean_pool`), the mean over all T positions with the mask forgotten (padding rows included:
    the padding bug), and the first real token (`cls_pool`). Each pooled vector is scaled to
    length 1 before the dot product, in float64.
    """
    require(_grid(token_embeddings).shape[0] == 2, "token_embeddings must hold exactly two texts (2, tokens, dim), "
            f"got shape {tuple(token_embeddings.shape)}")
    pooled = {"mean": mean_pool(token_embeddings, attention_mask),
              "mean_unmasked": token_embeddings.mean(dim=1),  # every position counts: the bug
              "cls": cls_pool(token_embeddings, attention_mask)}
    cosines = {}
    for name, vectors in pooled.items():
        v = vectors.detach().double()
        v = v / v.norm(dim=1, keepdim=True).clamp_min(1e-300)
        cosines[name] = float(v[0] @ v[1])
    return cosines
