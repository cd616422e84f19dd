"""The temperature module: its gradient formula, its toy data and the training claims the lesson makes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from labs.lessons.infonce import positive_share



@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny matrices: one thread is much faster than two (and than two contended ones)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
from labs.classroom.exercises.temperature import (
    check_scale_for_tau, check_share_threshold, check_sharper_tau,
)
from labs.lessons.temperature import (
    make_toy_pairs, positive_loss_gradient, train_at_temperature,
)


@pytest.mark.parametrize("tau", [1.0, 0.3, 0.05, 0.01])
def test_gradient_formula_matches_autograd(tau):
    s = torch.tensor([0.8, 0.6, 0.55, 0.1], dtype=torch.float64, requires_grad=True)
    (-torch.log_softmax(s / tau, dim=0)[0]).backward()
    assert positive_loss_gradient(0.8, [0.6, 0.55, 0.1], tau) == pytest.approx(s.grad[0].item(), abs=1e-12)


def test_toy_pairs_are_deterministic_and_shaped():
    q1, d1 = make_toy_pairs(10, seed=3)
    q2, d2 = make_toy_pairs(10, seed=3)
    assert q1.shape == d1.shape == (10, 32)
    assert torch.equal(q1, q2) and torch.equal(d1, d2)
    assert not torch.equal(q1, make_toy_pairs(10, seed=4)[0])


def test_toy_pairs_reject_bad_input():
    with pytest.raises(ValueError, match="n"):
        make_toy_pairs(0)
    with pytest.raises(ValueError, match="noise"):
        make_toy_pairs(5, noise=-1)


def test_training_is_reproducible():
    a = train_at_temperature(0.1, steps=30)
    b = train_at_temperature(0.1, steps=30)
    assert np.array_equal(a.losses, b.losses) and a.accuracy == b.accuracy


def test_the_lesson_claims_hold():
    runs = {tau: train_at_temperature(tau, steps=300) for tau in (1.0, 0.1, 0.003)}
    warm, mid, cold = runs[1.0], runs[0.1], runs[0.003]
    assert warm.share < 0.15  # too warm: never confident
    assert mid.share > 0.6
    assert cold.jitter > 5 * mid.jitter  # too cold: jumpy training
    assert mid.accuracy > warm.accuracy and mid.accuracy > cold.accuracy


def test_training_rejects_bad_arguments():
    with pytest.raises(ValueError, match="tau"):
        train_at_temperature(0.0)
    with pytest.raises(ValueError, match="batch"):
        train_at_temperature(0.1, batch=1)


def test_check_sharper_tau(capsys):
    right = max(t / 100 for t in range(1, 100) if positive_share(0.8, [0.6] * 3, t / 100) >= 0.9)
    assert check_sharper_tau(right) is True
    assert check_sharper_tau(0.5) is False
    assert check_sharper_tau(0.01) is False
    assert check_sharper_tau(None) is False
    assert check_sharper_tau(-1) is False
    out = capsys.readouterr().out
    assert f"{right:g}" not in out.split("Right")[0]  # wrong answers never reveal the right one


def test_check_share_threshold():
    assert check_share_threshold("down") is True
    assert check_share_threshold(" Down ") is True
    assert check_share_threshold("up") is False
    assert check_share_threshold("sideways") is False
    assert check_share_threshold(None) is False


def test_check_scale_for_tau(capsys):
    for wrong in (None, True, "x", 0.07, 20, 7):
        assert check_scale_for_tau(wrong) is False
    assert "14.3" not in capsys.readouterr().out  # hints never give the answer
    assert check_scale_for_tau(1 / 0.07) is True
    assert check_scale_for_tau(14.3) is True
