"""Tests for labs.lessons.adapter: the hand gradient against torch autograd and finite differences, a
50-step run against a torch-autograd run (float64, within 1e-9), the batch plan, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from labs.lessons import adapter as ad
from labs.lessons.infonce import info_nce, info_nce_torch


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def training_set():
    """12 topics x 5 wordings of unit vectors (d = 24): questions near their steps, look-alikes nearer."""
    rng = np.random.default_rng(0)
    steps = _unit(rng.standard_normal((12, 24)))
    look_alikes = _unit(rng.standard_normal((12, 24)))
    Q = _unit(np.repeat(0.5 * steps + 0.8 * look_alikes, 5, axis=0) + 0.3 * rng.standard_normal((60, 24)))
    return Q, np.repeat(steps, 5, axis=0), np.repeat(look_alikes, 5, axis=0)


def test_mulberry32_matches_its_javascript_form():
    # the first draws of mulberry32(0) and mulberry32(42), as JavaScript computes them
    assert ad.Mulberry32(0).next() == 0.26642920868471265
    rng = ad.Mulberry32(42)
    assert [rng.next() for _ in range(2)] == pytest.approx([0.6011037519201636, 0.44829055899754167], abs=0)
    assert all(0 <= ad.Mulberry32(s).below(7) < 7 for s in range(50))


def test_batch_plan_one_wording_per_topic_each_epoch():
    plan = ad.batch_plan(12, 5, 4, 9, 3)
    assert plan.shape == (9, 4)
    epoch = plan[:3].ravel()
    assert sorted(epoch // 5) == list(range(12))          # every topic once per epoch, no topic twice
    assert all(len(set(row // 5)) == 4 for row in plan)
    assert np.array_equal(ad.batch_plan(12, 5, 4, 9, 3), plan)
    assert not np.array_equal(ad.batch_plan(12, 5, 4, 9, 4), plan)
    assert ad.batch_plan(13, 5, 4, 6, 3).shape == (6, 4)     # a remainder of one topic is dropped
    with pytest.raises(ValueError, match="batch must be at most the number of topics"):
        ad.batch_plan(3, 5, 4, 1, 0)


@pytest.mark.parametrize("look_alikes", [False, True])
def test_first_step_gradient_equals_autograd(training_set, look_alikes):
    Q, P, L = training_set
    rows = ad.batch_plan(12, 5, 8, 1, 0)[0]
    columns = np.concatenate([P[rows], L[rows]]) if look_alikes else P[rows]
    loss, dW = ad.adapter_loss_and_grad(np.eye(24), Q[rows], columns, ad.TAU)
    W = torch.eye(24, dtype=torch.float64, requires_grad=True)
    reference = info_nce_torch(torch.tensor(Q[rows]) @ W.T, torch.tensor(columns), ad.TAU)
    reference.backward()
    assert abs(loss - reference.item()) < 1e-12
    assert np.abs(dW - W.grad.numpy()).max() < 1e-9
    assert np.abs(dW).max() > 1e-3                        # a gradient worth checking


def test_finite_differences():
    assert ad.finite_difference_check(0) < 1e-7
    assert ad.finite_difference_check(1, tau=0.1) < 1e-6


@pytest.mark.parametrize("look_alikes", [False, True])
def test_fifty_steps_equal_a_torch_autograd_run(training_set, look_alikes):
    Q, P, L = training_set
    L = L if look_alikes else None
    plan = ad.batch_plan(12, 5, 8, 50, 7)
    W, losses = ad.train_adapter(Q, P, L, plan, steps=50)
    assert np.abs(W - ad.train_adapter_torch(Q, P, L, plan, steps=50)).max() < 1e-9
    assert losses[-1] < losses[0] and len(losses) == 50
    assert np.abs(W - np.eye(24)).max() > 1e-2


def test_look_alike_arm_fixes_what_in_batch_cannot(training_set):
    Q, P, L = training_set
    assert ad.look_alike_wins(np.eye(24), Q, P, L).mean() > 0.5          # the untouched model fails
    plan = ad.batch_plan(12, 5, 8, 100, 0)
    W, _ = ad.train_adapter(Q, P, L, plan)
    assert ad.look_alike_wins(W, Q, P, L).mean() < 0.1
    U = ad.adapt(W, Q)
    assert np.allclose(np.linalg.norm(U, axis=1), 1)
    assert info_nce(U[:8] @ P[:8].T, 0.5) == pytest.approx(ad.adapter_loss_and_grad(W, Q[:8], P[:8], 0.5)[0])


def test_bad_input_names_the_argument(training_set):
    Q, P, L = training_set
    with pytest.raises(ValueError, match=r"W must be \(d, d\)"):
        ad.adapt(np.eye(3), Q)
    with pytest.raises(ValueError, match="P needs at least as many rows as Q"):
        ad.adapter_loss_and_grad(np.eye(24), Q[:4], P[:2])
    with pytest.raises(ValueError, match="plan must be"):
        ad.train_adapter(Q, P, None, np.zeros((2, 3), dtype=int), steps=5)
    with pytest.raises(ValueError, match="Q, P"):
        ad.train_adapter(Q, P[:5], None, ad.batch_plan(12, 5, 8, 5, 0), steps=5)
    with pytest.raises(ValueError, match="tau"):
        ad.train_adapter(Q, P, None, ad.batch_plan(12, 5, 8, 5, 0), tau=0)
    with pytest.raises(ValueError, match="seed"):
        ad.Mulberry32(-1)
