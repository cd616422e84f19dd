"""Tests for labs.lessons.shares: the token shares sum to the cosine, equal a loop by hand, and on the
packaged MiniLM add up to sentence-transformers' own cosine; every bad input is named."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from labs.lessons.pooling import mean_pool
from labs.lessons.shares import pair_shares, text_shares, token_shares
from labs.retrieval.models import load_minilm

T, D = 6, 5


def _pair(seed: int = 0, lengths=(6, 3)) -> tuple[torch.Tensor, torch.Tensor]:
    grid = torch.randn(2, T, D, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    mask = torch.zeros(2, T, dtype=torch.int64)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
    return grid, mask


def _loop(grid: torch.Tensor, mask: torch.Tensor) -> tuple[list[float], list[float], float]:
    """The split by hand, one token at a time."""
    pooled = mean_pool(grid, mask)
    unit = [v / v.norm() for v in pooled]
    out = []
    for me, other in ((0, 1), (1, 0)):
        n = int(mask[me].sum())
        out.append([float(grid[me, t] @ unit[other]) / (n * float(pooled[me].norm())) if mask[me, t] else 0.0
                    for t in range(grid.shape[1])])
    return out[0], out[1], float(unit[0] @ unit[1])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shares_sum_to_the_cosine_and_equal_the_loop(seed):
    grid, mask = _pair(seed)
    got = token_shares(grid, mask)
    a, b, cosine = _loop(grid, mask)
    assert got["cosine"] == pytest.approx(cosine, abs=1e-12)
    assert np.allclose(got["a"].numpy(), a, atol=1e-12) and np.allclose(got["b"].numpy(), b, atol=1e-12)
    assert float(got["a"].sum()) == pytest.approx(cosine, abs=1e-12)
    assert float(got["b"].sum()) == pytest.approx(cosine, abs=1e-12)
    assert (got["b"][3:] == 0).all()  # padding has no share


def test_padding_holds_anything():
    grid, mask = _pair(4)
    other = grid.clone()
    other[1, 3:] = 1e6  # what the model put at the padded positions does not count
    assert torch.equal(token_shares(grid, mask)["a"], token_shares(other, mask)["a"])


def test_pairs_sum_to_the_shares():
    grid, mask = _pair(5)
    pairs = pair_shares(grid, mask)
    got = token_shares(grid, mask)
    assert pairs.shape == (T, T)
    assert float(pairs.sum()) == pytest.approx(got["cosine"], abs=1e-12)
    assert torch.allclose(pairs.sum(dim=1), got["a"], atol=1e-12)
    assert torch.allclose(pairs.sum(dim=0), got["b"], atol=1e-12)
    assert (pairs[:, 3:] == 0).all()


def test_float32_grid_is_split_in_float64():
    grid, mask = _pair(6)
    got = token_shares(grid.float(), mask)
    assert got["a"].dtype == torch.float64
    assert float(got["a"].sum()) == pytest.approx(got["cosine"], abs=1e-12)


@pytest.mark.parametrize("grid, mask, said", [
    (torch.zeros(3, T, D), torch.ones(3, T), "exactly two texts"),
    (torch.zeros(2, T), torch.ones(2, T), "3-D"),
    (torch.ones(2, T, D, dtype=torch.int64), torch.ones(2, T), "must hold floats"),
    (torch.full((2, T, D), float("nan")), torch.ones(2, T), "NaN"),
    (torch.zeros(2, T, D), torch.ones(2, T), "all zeros"),
    (torch.ones(2, T, D), torch.zeros(2, T), "no real token"),
    (torch.ones(2, T, D), torch.ones(2, T + 1), "must have shape"),
])
def test_bad_input_is_named(grid, mask, said):
    for split in (token_shares, pair_shares):
        with pytest.raises(ValueError, match=said):
            split(grid, mask)


@pytest.fixture(scope="module")
def minilm():
    return load_minilm()


def test_minilm_shares_add_up_to_the_library_cosine(minilm):
    from labs.lessons.help_articles import EXTRA_ARTICLES

    question = "how do I reset my password?"
    for article in (EXTRA_ARTICLES["account/password-policy"], EXTRA_ARTICLES["account/reset-steps"]):
        got = text_shares(minilm, question, article)
        library = minilm.encode([question, article], normalize_embeddings=True, convert_to_numpy=True)
        cosine = float(library[0].astype(np.float64) @ library[1].astype(np.float64))
        assert got["cosine"] == pytest.approx(cosine, abs=1e-6)  # float32 inside the library
        assert sum(got["a"]) == pytest.approx(got["cosine"], abs=1e-12)
        assert sum(got["b"]) == pytest.approx(got["cosine"], abs=1e-12)
        assert got["tokens_a"][0] == "[CLS]" and got["tokens_a"][-1] == "[SEP]"
        assert len(got["tokens_a"]) == len(got["a"]) == len(minilm.tokenizer(question)["input_ids"])
        assert len(got["tokens_b"]) == len(got["b"]) == len(minilm.tokenizer(article)["input_ids"])


def test_text_shares_refuses_what_it_cannot_split(minilm):
    with pytest.raises(ValueError, match="text_b must be text"):
        text_shares(minilm, "a question", None)
    with pytest.raises(ValueError, match="pools by the mean"):
        text_shares(object(), "a", "b")
