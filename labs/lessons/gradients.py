"""Gradients by hand: a slope by finite differences, gradient descent, and a tiny model trained in epochs.

In plain terms: the gradient of a loss is its slope with respect to each
weight; it points where the loss grows fastest, so training steps the other
way, ``w <- w - lr * gradient``. `finite_difference` estimates the slope from
two nearby loss values (the check every hand-written gradient in the course is
held to); `gradient_descent` repeats the step; `train_slope` fits the one weight
of ``y = w * x`` in shuffled mini-batches, epoch after epoch, with every random
choice (the starting weight and the order of the examples) drawn from one seeded
generator, so a seed repeats a run exactly.

Shapes
------
=========  ==========  ====================================================
name       shape       meaning
=========  ==========  ====================================================
w          () or (n,)  the weights: one number, or n of them
grad(w)    like w      the gradient of the loss at w
x, y       (N,)        N training examples of a one-weight model y = w * x
path       (T + 1,)    the weight before the first step and after each step
=========  ==========  ====================================================

Relations: the lessons' hand-derived InfoNCE gradients (`labs.lessons.duplicates`,
the bi-encoder of `labs.lessons.hard_negatives`) are checked the same way, against
autograd and a finite difference. Lesson: ``notebooks/02_gradients.ipynb``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from labs.lessons.inputs import finite_array, real_array, real_number, whole_number

__all__ = ["finite_difference", "gradient_descent", "steps_per_epoch", "train_slope"]


def _positive(value: float, name: str) -> float:
    number = real_number(value, name, "a number")
    if not (math.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return number


def _count(value: int, name: str, minimum: int) -> int:
    return whole_number(value, name, minimum)


def _function(fn: Callable, name: str) -> Callable:
    if not callable(fn):
        raise ValueError(f"{name} must be a function, got {type(fn).__name__}")
    return fn


def _loss_value(value: object, name: str) -> float:
    """What ``f`` returned, as one finite float: a tensor's value is read (its graph is not needed)."""
    if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        value = value.detach()
    number = real_number(value, name, "one real number")
    if not math.isfinite(number):
        raise ValueError(f"{name} is {number}: a finite difference needs finite values of f")
    return number


def finite_difference(f: Callable[[np.ndarray], float], w: float | np.ndarray, eps: float = 1e-6) -> float | np.ndarray:
    """Central-difference estimate of the gradient of scalar ``f`` at ``w``: (f(w + eps) - f(w - eps)) / (2 eps),
    one coordinate at a time. A float for a float ``w``, an array shaped like ``w`` otherwise.

    ``f`` must return one finite real number (a one-number tensor is read as its value); ``w``
    holds real, finite numbers; ``eps`` must be large enough that ``w + eps`` differs from ``w``.
    """
    f = _function(f, "f")
    eps = _positive(eps, "eps")
    point = finite_array(w, "w", train_with="torch autograd (loss.backward())")
    if np.any(point + eps == point) or np.any(point - eps == point):
        raise ValueError(f"eps={eps!r} is too small for w: w + eps rounds back to w in float64 "
                         "(an eps about 1e-6 times |w| works)")
    grad = np.zeros_like(point)
    for idx in np.ndindex(point.shape):
        step = np.zeros_like(point)
        step[idx] = eps
        up, down = _loss_value(f(point + step), "f(w + eps)"), _loss_value(f(point - step), "f(w - eps)")
        grad[idx] = (up - down) / (2 * eps)
    return float(grad) if grad.ndim == 0 else grad


def gradient_descent(grad: Callable[[np.ndarray], np.ndarray], w0: float | np.ndarray, lr: float,
                     steps: int) -> np.ndarray:
    """Positions of ``steps`` gradient-descent steps from ``w0``: ``w <- w - lr * grad(w)``.

    Returns an array of shape (steps + 1, *w0.shape): the start, then the weights after each step.
    ``grad(w)`` must return real numbers shaped like ``w0``. A run that diverges (too large an
    ``lr``) is returned as it went, to be seen.
    """
    grad = _function(grad, "grad")
    lr = _positive(lr, "lr")
    steps = _count(steps, "steps", 0)
    w = finite_array(w0, "w0", train_with="a torch optimizer").copy()
    path = [w.copy()]
    for _ in range(steps):
        g = real_array(grad(w), "grad(w)", train_with=None)
        if g.shape != w.shape:
            raise ValueError(f"grad(w) must have the shape of w0 {w.shape}, got {g.shape}")
        w = w - lr * g
        path.append(w.copy())
    return np.array(path)


def steps_per_epoch(n_examples: int, batch: int) -> int:
    """Steps in one pass over ``n_examples`` in batches of ``batch``; a last, smaller batch counts as a step."""
    n_examples = _count(n_examples, "n_examples", 1)
    batch = _count(batch, "batch", 1)
    return -(-n_examples // batch)


def train_slope(x: np.ndarray, y: np.ndarray, *, lr: float, batch: int, epochs: int, seed: int) -> dict:
    """Fit ``y ~ w * x`` by mini-batch gradient descent on the mean squared error.

    One generator, ``np.random.default_rng(seed)``, draws the starting weight (normal, mean 0,
    spread 1) and then a fresh shuffle of the examples for every epoch. Returns ``path`` (the
    weight before training and after every step), ``loss`` (the mean squared error on all the
    examples at each point of ``path``), ``steps_per_epoch`` and ``best`` (the least-squares
    weight, where the full-data loss is lowest).
    """
    x, y = real_array(x, "x", train_with=None), real_array(y, "y", train_with=None)
    if x.ndim != 1 or x.shape != y.shape or x.size == 0:
        raise ValueError(f"x and y must be 1-D arrays of the same length >= 1, got shapes {x.shape} and {y.shape}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))) or not np.any(x):
        raise ValueError("x and y must be finite, and x not all zero")
    with np.errstate(over="ignore"):
        squares = (np.dot(x, x), np.dot(y, y))
    if not all(np.isfinite(squares)):
        raise ValueError("x and y are too large: their squares overflow float64, so the squared error "
                         "cannot be computed (rescale them)")
    lr = _positive(lr, "lr")
    per_epoch = steps_per_epoch(x.size, batch)
    epochs = _count(epochs, "epochs", 1)
    seed = _count(seed, "seed", 0)

    def full_loss(w: float) -> float:
        return float(np.mean((w * x - y) ** 2))

    rng = np.random.default_rng(seed)
    w = float(rng.normal())
    path, loss = [w], [full_loss(w)]
    for _ in range(epochs):
        order = rng.permutation(x.size)
        for start in range(0, x.size, batch):
            xb, yb = x[order[start:start + batch]], y[order[start:start + batch]]
            grad = float(np.mean(2 * xb * (w * xb - yb)))  # d/dw of the batch's mean squared error
            w -= lr * grad
            path.append(w)
            loss.append(full_loss(w))
    return {"path": np.array(path), "loss": np.array(loss), "steps_per_epoch": per_epoch, "best": _least_squares(x, y)}


def _least_squares(x: np.ndarray, y: np.ndarray) -> float:
    """x.y / x.x; for tiny x, whose squares underflow to 0, computed on x and y scaled to 1 first."""
    xx = np.dot(x, x)
    if xx > 1e-300:  # squares of normal size (not denormal): the formula as written
        return float(np.dot(x, y) / xx)
    sx, sy = np.abs(x).max(), np.abs(y).max() or 1.0
    u, v = x / sx, y / sy
    return float(np.dot(u, v) / np.dot(u, u) * (sy / sx))
