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


# ---- arguments that are not real numbers, functions that do not return one ------------------


def square(w):
    return float(np.sum(np.asarray(w) ** 2))


@pytest.mark.parametrize("w, message", [
    (1 + 1j, "w holds complex numbers"), (True, "w must hold real numbers, got booleans"),
    ("1.0", "w must hold real numbers, got text"), ([[1.0], [1.0, 2.0]], "w is ragged"),
    (torch.tensor([1.0], requires_grad=True), r"w is a torch tensor that requires grad: .* w.detach\(\)"),
    (None, "w must hold real numbers, got None"), (float("nan"), "w contains NaN or infinite entries"),
], ids=["complex", "bool", "string", "ragged", "requires-grad", "none", "nan"])
def test_finite_difference_refuses_a_point_that_is_not_real_numbers(w, message):
    with pytest.raises(ValueError, match=message):
        finite_difference(square, w)


@pytest.mark.parametrize("f, message", [
    (lambda w: complex(w), r"f\(w \+ eps\) must be one real number"),
    (lambda w: np.array([w, w]), r"f\(w \+ eps\) must be one real number"),
    (lambda w: "1.0", r"f\(w \+ eps\) must be one real number"),
    (lambda w: float("nan"), r"f\(w \+ eps\) is nan: a finite difference needs finite values"),
    (3, "f must be a function"),
], ids=["complex", "vector", "string", "nan", "not-callable"])
def test_finite_difference_refuses_a_function_that_does_not_return_one_real_number(f, message):
    with pytest.raises(ValueError, match=message):
        finite_difference(f, 1.0)


def test_finite_difference_reads_a_tensor_loss_and_refuses_a_step_that_vanishes():
    torch_loss = lambda w: (torch.tensor(float(w), dtype=torch.float64, requires_grad=True) - 3) ** 2
    assert finite_difference(torch_loss, 1.0) == pytest.approx(-4.0, abs=1e-6)
    with pytest.raises(ValueError, match="eps=1e-300 is too small for w: w \\+ eps rounds back to w"):
        finite_difference(square, 1.0, eps=1e-300)


@pytest.mark.parametrize("call, match", [
    (lambda: gradient_descent(lambda w: np.ones(2), 0.0, lr=0.1, steps=2), r"grad\(w\) must have the shape of w0"),
    (lambda: gradient_descent(lambda w: w * 1j, 1.0, lr=0.1, steps=2), r"grad\(w\) holds complex numbers"),
    (lambda: gradient_descent(lambda w: None, 1.0, lr=0.1, steps=2), r"grad\(w\) must hold real numbers"),
    (lambda: gradient_descent(lambda w: w, "1", lr=0.1, steps=2), "w0 must hold real numbers, got text"),
    (lambda: gradient_descent(lambda w: w, torch.ones(1, requires_grad=True), lr=0.1, steps=2), "w0 is a torch tensor"),
    (lambda: gradient_descent(None, 1.0, lr=0.1, steps=2), "grad must be a function"),
    (lambda: gradient_descent(lambda w: w, 1.0, lr="0.1", steps=2), "lr must be a number"),
    (lambda: train_slope([1 + 1j, 2], [1, 2], lr=0.1, batch=1, epochs=1, seed=0), "x holds complex numbers"),
    (lambda: train_slope([True, True], [1, 2], lr=0.1, batch=1, epochs=1, seed=0), "x must hold real numbers"),
    (lambda: train_slope(["1", "2"], [1, 2], lr=0.1, batch=1, epochs=1, seed=0), "x must hold real numbers"),
    (lambda: train_slope([1.0, 2.0], torch.ones(2, requires_grad=True), lr=0.1, batch=1, epochs=1, seed=0),
     "y is a torch tensor that requires grad"),
    (lambda: train_slope([[1.0], [2.0, 3.0]], [1, 2], lr=0.1, batch=1, epochs=1, seed=0), "x is ragged"),
    (lambda: train_slope([1.0, 2.0], [1, 2], lr=0.1, batch=1, epochs=1, seed=-1), "seed must be an integer >= 0"),
    (lambda: train_slope([1e200, 2e200], [1e200, 2e200], lr=0.1, batch=1, epochs=1, seed=0),
     "x and y are too large: their squares overflow"),
], ids=["grad-shape", "grad-complex", "grad-none", "w0-string", "w0-requires-grad", "grad-none-fn", "lr-string",
        "x-complex", "x-bools", "x-strings", "y-requires-grad", "x-ragged", "seed-negative", "x-huge"])
def test_descent_and_training_refuse_what_is_not_real_numbers(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_a_diverging_run_is_returned_and_tiny_data_has_its_least_squares_slope():
    run = gradient_descent(lambda w: 2 * (w - 3), 0.0, lr=1.1, steps=8)  # too large a step: seen, not refused
    assert abs(run[-1] - 3) > abs(run[0] - 3)
    x = np.array([1.0, 2.0, 3.0])
    tiny = train_slope(x * 1e-200, 2 * x * 1e-200, lr=0.1, batch=1, epochs=1, seed=0)  # x.x underflows to 0
    assert tiny["best"] == pytest.approx(2.0)
    assert finite_difference(square, np.float32(1.5)) == pytest.approx(3.0, abs=1e-6)
    assert train_slope(x, 2 * x, lr=np.float32(0.05), batch=np.int64(1), epochs=np.int64(1), seed=np.int64(0))["best"] \
        == pytest.approx(2.0)
