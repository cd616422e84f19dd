"""labs.lessons.gradients: finite differences against autograd, gradient descent, epochs and seeds; the checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from labs.classroom.exercises.gradients import check_bowl_step, check_one_step_lr, check_two_card_slope
from labs.lessons.gradients import finite_difference, gradient_descent, steps_per_epoch, train_slope


def test_finite_difference_matches_autograd():
    def f(w):
        return float(np.sum(np.sin(w) * w ** 2))

    w0 = np.array([0.3, -1.2, 2.0])
    w = torch.tensor(w0, requires_grad=True)
    torch.sum(torch.sin(w) * w ** 2).backward()
    assert finite_difference(f, w0) == pytest.approx(w.grad.numpy(), abs=1e-7)
    assert finite_difference(lambda v: (v - 3) ** 2, 1.0) == pytest.approx(-4.0, abs=1e-8)
    assert isinstance(finite_difference(lambda v: (v - 3) ** 2, 1.0), float)


def test_gradient_descent_on_a_parabola_shrinks_the_distance_by_one_minus_two_lr():
    for lr in (0.05, 0.3, 0.9, 1.1):
        path = gradient_descent(lambda w: 2 * (w - 3), 0.0, lr=lr, steps=6)
        assert path.shape == (7,)
        assert path[0] == 0.0
        assert path - 3 == pytest.approx(-3 * (1 - 2 * lr) ** np.arange(7))
    assert gradient_descent(lambda w: 2 * (w - 3), 1.0, lr=0.5, steps=1)[-1] == pytest.approx(3.0)


def test_gradient_descent_on_two_weights_keeps_the_shape():
    path = gradient_descent(lambda w: np.array([2 * (w[0] - 3), 8 * (w[1] - 1)]), [0.0, 0.0], lr=0.1, steps=3)
    assert path.shape == (4, 2)
    assert path[1] == pytest.approx([0.6, 0.8])


def test_steps_per_epoch_keeps_the_last_small_batch():
    assert steps_per_epoch(12, 4) == 3
    assert steps_per_epoch(1000, 32) == 32
    assert steps_per_epoch(1, 8) == 1


def test_train_slope_repeats_with_a_seed_and_differs_without():
    x = np.arange(1, 13) / 10
    y = 2 * x + np.array([0.1, -0.2, 0.15, 0.05, -0.1, 0.2, -0.15, 0.1, -0.05, 0.2, -0.1, 0.0])
    a = train_slope(x, y, lr=1.0, batch=4, epochs=3, seed=0)
    b = train_slope(x, y, lr=1.0, batch=4, epochs=3, seed=0)
    c = train_slope(x, y, lr=1.0, batch=4, epochs=3, seed=1)
    assert np.array_equal(a["path"], b["path"])
    assert not np.allclose(a["path"], c["path"])
    assert a["path"].shape == a["loss"].shape == (10,)
    assert a["steps_per_epoch"] == 3
    assert a["best"] == pytest.approx(np.dot(x, y) / np.dot(x, x))
    assert abs(a["path"][-1] - a["best"]) < 0.2 and a["loss"][-1] < a["loss"][0]
    slow = train_slope(x, y, lr=0.01, batch=12, epochs=1, seed=0)  # one full-batch step by hand
    w0 = slow["path"][0]
    assert slow["path"][1] == pytest.approx(w0 - 0.01 * np.mean(2 * x * (w0 * x - y)))


@pytest.mark.parametrize("call, match", [
    (lambda: gradient_descent(lambda w: w, 0.0, lr=0, steps=1), "lr"),
    (lambda: gradient_descent(lambda w: w, 0.0, lr=0.1, steps=-1), "steps"),
    (lambda: gradient_descent(lambda w: w, 0.0, lr=float("nan"), steps=1), "lr"),
    (lambda: finite_difference(lambda w: w, 0.0, eps=0), "eps"),
    (lambda: steps_per_epoch(0, 4), "n_examples"),
    (lambda: steps_per_epoch(10, 0), "batch"),
    (lambda: train_slope([1.0, 2.0], [1.0], lr=0.1, batch=1, epochs=1, seed=0), "same length"),
    (lambda: train_slope([0.0, 0.0], [1.0, 2.0], lr=0.1, batch=1, epochs=1, seed=0), "not all zero"),
    (lambda: train_slope([1.0], [1.0], lr=0.1, batch=1, epochs=0, seed=0), "epochs"),
    (lambda: train_slope([1.0], [1.0], lr=0.1, batch=1, epochs=1, seed=0.5), "seed"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_checks_accept_the_reasoned_answers(capsys):
    assert check_one_step_lr(0.1) and check_one_step_lr("0.1")
    assert check_bowl_step((1.4, 1.2)) and check_bowl_step([1.4, 1.2])
    assert check_two_card_slope(1 / (1 + math.e) - 1) and check_two_card_slope(-0.73)
    capsys.readouterr()
    for check, wrongs, secrets in [
        (check_one_step_lr, (0.5, 0.2, 1.0), ("0.1",)),
        (check_bowl_step, ((0.6, 2.8), (1.4, 1.8), (1.2, 1.2), (1.0, 2.0), "x", (1,)), ("1.4", "1.2")),
        (check_two_card_slope, (0.731, 0.269, -0.269, 0.0), ("0.73", "-0.7")),
    ]:
        for wrong in wrongs:
            assert not check(wrong)
        hints = capsys.readouterr().out
        assert all(secret not in hints for secret in secrets), hints
