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
from functools import partial

import numpy as np

from labs.checks import MOST, arguments, finite_table, function, integer, number, positive, require, table

__all__ = ["finite_difference", "gradient_descent", "steps_per_epoch", "train_slope"]


def _value(value: object, name: str) -> float:
    """What ``f`` returned, as one finite float: a tensor's value is read (its graph is not needed)."""
    x = number(value.detach() if type(value).__module__.startswith("torch") else value, name, "one real number")
    require(math.isfinite(x), f"{name} is {x}: a finite difference needs finite values of f")
    return x


@arguments(f=function, eps=partial(positive, what="a number"),
           w=partial(finite_table, train_with="torch autograd (loss.backward())"))
def finite_difference(f: Callable[[np.ndarray], float], w: float | np.ndarray, eps: float = 1e-6) -> float | np.ndarray:
    """Central-difference estimate of the gradient of scalar ``f`` at ``w``: (f(w + eps) - f(w - eps)) / (2 eps),
    one coordinate at a time. A float for a float ``w``, an array shaped like ``w`` otherwise.

    ``f`` must return one finite real number (a one-number tensor is read as its value); ``w``
    holds real, finite numbers; ``eps`` must be large enough that ``w + eps`` differs from ``w``.
    """
    require(not (np.any(w + eps == w) or np.any(w - eps == w)), f"eps={eps!r} is too small for w: w + eps rounds "
            "back to w in float64 (an eps about 1e-6 times |w| works)")
    grad = np.zeros_like(w)
    for idx in np.ndindex(w.shape):
        step = np.zeros_like(w)
        step[idx] = eps
        grad[idx] = (_value(f(w + step), "f(w + eps)") - _value(f(w - step), "f(w - eps)")) / (2 * eps)
    return float(grad) if grad.ndim == 0 else grad


@arguments(grad=function, lr=partial(positive, what="a number"), steps=partial(integer, minimum=0, maximum=MOST),
           w0=partial(finite_table, train_with="a torch optimizer"))
def gradient_descent(grad: Callable[[np.ndarray], np.ndarray], w0: float | np.ndarray, lr: float,
                     steps: int) -> np.ndarray:
    """Positions of ``steps`` gradient-descent steps from ``w0``: ``w <- w - lr * grad(w)``.

    Returns an array of shape (steps + 1, *w0.shape): the start, then the weights after each step.
    ``grad(w)`` must return real numbers shaped like ``w0``. A run that diverges (too large an
    ``lr``) is returned as it went, to be seen.
    """
    w, path = w0.copy(), [w0.copy()]
    for _ in range(steps):
        g = table(grad(w), "grad(w)", train_with=None)
        require(g.shape == w.shape, f"grad(w) must have the shape of w0 {w.shape}, got {g.shape}")
        w = w - lr * g
        path.append(w.copy())
    return np.array(path)


def steps_per_epoch(n_examples: int, batch: int) -> int:
    """Steps in one pass over ``n_examples`` in batches of ``batch``; a last, smaller batch counts as a step."""
    return -(-integer(n_examples, "n_examples", 1) // integer(batch, "batch", 1))


@arguments(x=finite_table, y=finite_table, lr=partial(positive, what="a number"),
           batch=partial(integer, minimum=1, maximum=MOST),
           epochs=partial(integer, minimum=1, maximum=100_000), seed=partial(integer, minimum=0))
def train_slope(x: np.ndarray, y: np.ndarray, *, lr: float, batch: int, epochs: int, seed: int) -> dict:
    """Fit ``y ~ w * x`` by mini-batch gradient descent on the mean squared error.

    One generator, ``np.random.default_rng(seed)``, draws the starting weight (normal, mean 0,
    spread 1) and then a fresh shuffle of the examples for every epoch. Returns ``path`` (the
    weight before training and after every step), ``loss`` (the mean squared error on all the
    examples at each point of ``path``), ``steps_per_epoch`` and ``best`` (the least-squares
    weight, where the full-data loss is lowest). ``x`` and ``y`` are 1-D, of one length, finite,
    and ``x`` is not all zero (nor so large that its squares overflow). A run whose loss grows past
    `DIVERGED` times its start (``lr`` far too large) is refused, naming ``lr``.
    """
    require(x.ndim == 1 and x.shape == y.shape and x.size > 0 and np.any(x), "x and y must be 1-D arrays of the "
            f"same length >= 1, and x not all zero; got shapes {x.shape} and {y.shape}")
    with np.errstate(over="ignore"):
        require(np.isfinite(np.dot(x, x)) and np.isfinite(np.dot(y, y)), "x and y are too large: their squares "
                "overflow float64, so the squared error cannot be computed (rescale them)")

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
            with np.errstate(over="ignore"):
                loss.append(full_loss(w))
            require(math.isfinite(loss[-1]) and loss[-1] <= DIVERGED * max(loss[0], 1.0), lambda: "training "
                    f"diverged at step {len(path) - 1}: the loss grew {_growth(loss[-1], loss[0])} its start "
                    f"(lr={lr!r} is too large for this x)")
    return {"path": np.array(path), "loss": np.array(loss), "steps_per_epoch": steps_per_epoch(x.size, batch),
            "best": _least_squares(x, y)}


#: A loss this many times its start (or 1, if it started below 1) is a run that only diverges: refused.
DIVERGED = 1e12


def _growth(now: float, start: float) -> str:
    """How far the loss grew, in words: "past float64's range" or "1e+12-fold"."""
    return "past float64's range from" if not math.isfinite(now) else f"{now / max(start, 1.0):.0e}-fold from"


def _least_squares(x: np.ndarray, y: np.ndarray) -> float:
    """x.y / x.x; for tiny x, whose squares underflow to 0, computed on x and y scaled to 1 first."""
    xx = np.dot(x, x)
    if xx > 1e-300:  # squares of normal size (not denormal): the formula as written
        return float(np.dot(x, y) / xx)
    sx, sy = np.abs(x).max(), np.abs(y).max() or 1.0
    u, v = x / sx, y / sy
    return float(np.dot(u, v) / np.dot(u, u) * (sy / sx))
