"""labs.lessons.accumulation: its argument checks (the numbers themselves are tested against MNRL in
tests/retrieval/test_scaling.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from labs.lessons.accumulation import accumulation_vs_true_batch

G = torch.Generator().manual_seed(0)
Q = torch.randn(8, 4, generator=G, dtype=torch.float64)
D = Q + torch.randn(8, 4, generator=G, dtype=torch.float64)


@pytest.mark.parametrize("queries, message", [
    (Q.to(torch.complex128), "queries must hold real numbers, got complex numbers"),
    (Q > 0, "queries must hold real numbers, got booleans"),
    (torch.full((8, 4), float("nan")), "queries contains NaN or infinite entries"),
    (torch.full((8, 4), float("inf")), "queries contains NaN or infinite entries"),
    (torch.zeros(8, 4), "queries row 0 is all zeros"),
    (Q.numpy(), "must be tensors of the same shape"),
    (torch.zeros(0, 4), "must be tensors of the same shape"),
], ids=["complex", "bools", "nan", "inf", "zero-row", "numpy", "empty"])
def test_embeddings_that_are_not_real_finite_rows_are_refused_by_name(queries, message):
    with pytest.raises(ValueError, match=message):
        accumulation_vs_true_batch(queries, D if queries.shape == D.shape else queries, micro=4)


@pytest.mark.parametrize("scale, message", [
    (0, "scale must be a finite number > 0"), (-20, "scale must be a finite number > 0"),
    ("20", "scale must be a finite number > 0"), (float("inf"), "scale must be a finite number > 0"),
    (True, "scale must be a finite number > 0"), (1.7e308, "scale=1.7e\\+308 is too large"),
])
def test_a_bad_scale_is_named(scale, message):
    with pytest.raises(ValueError, match=message):
        accumulation_vs_true_batch(Q, D, micro=4, scale=scale)


@pytest.mark.parametrize("size", [1e-300, 1e-160, 1e200, 1e300])
def test_rows_of_any_size_give_the_numbers_of_their_direction(size):
    """Only directions matter (the rows are normalised): a row whose squared length under- or
    overflows float64 is scaled by its largest entry first, so it gives the same losses."""
    want = accumulation_vs_true_batch(Q, D, micro=4)
    got = accumulation_vs_true_batch(Q * size, D, micro=4)
    assert got["micro_losses"] == pytest.approx(want["micro_losses"], rel=1e-12)
    assert got["true_loss"] == pytest.approx(want["true_loss"], rel=1e-12)


def test_half_precision_numpy_integers_and_tensors_that_require_grad_are_read_as_values():
    want = accumulation_vs_true_batch(Q.float(), D.float(), micro=4)
    assert accumulation_vs_true_batch(Q.float(), D.float(), micro=np.int64(4)) == want
    assert accumulation_vs_true_batch(Q.float().requires_grad_(True), D.float(), micro=4) == want
    for dtype in (torch.float16, torch.bfloat16):  # summed in float64, never in the input's precision
        got = accumulation_vs_true_batch((Q * 1e3).to(dtype), (D * 1e3).to(dtype), micro=4)
        assert got["true_loss"] == pytest.approx(want["true_loss"], rel=0.05)
