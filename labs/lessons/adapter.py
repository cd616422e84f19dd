"""A query-side adapter: one 384 x 384 matrix that moves a frozen model's questions, trained by hand.

In plain words: the model stays as it is, and so do its article vectors (no index is rebuilt).
Only the question's vector q (unit length, from the frozen model) passes through a square
matrix W that starts as the identity, and is scaled back to length 1: q' = unit(W q). The
score of an article p is the cosine q' . p. W is trained with InfoNCE at temperature tau: each
question of a batch must pick its own steps article among the batch's steps articles
(in-batch negatives), and, in the second arm, also among the batch's look-alikes (one extra
column per pair). The gradient with respect to W is derived by hand (below, beside the
forward pass) and W takes plain SGD steps with a fixed learning rate, all in float64.

Written down so that another program (the book's page) can repeat a run bit for bit:

- W starts as the identity, float64.
- The batches come from `Mulberry32` (a 32-bit generator, a few lines in any language):
  each epoch draws one wording per topic (topic order, ``below(wordings)``), then shuffles the
  topics (Fisher-Yates from the last position down, ``j = below(i + 1)``), and cuts the
  shuffled list into full batches of ``batch`` (a remainder smaller than ``batch`` is dropped).
  Both arms walk the same plan (`batch_plan`).
- A step: forward, backward, ``W <- W - lr * dW``.

Shapes
------
=====  ==========  ==========================================================
name   shape       meaning
=====  ==========  ==========================================================
Q      (B, d)      the frozen model's unit question vectors, d = 384
W      (d, d)      the adapter; A = Q W^T (row i is W q_i), U = unit rows of A
P      (M, d)      unit article vectors, M >= B: article i answers question i,
                   articles B..M-1 (the look-alikes) are negatives for every row
S      (B, M)      U P^T, cosines; loss = ``labs.lessons.infonce.info_nce(S, tau)``
plan   (steps, B)  the row of the training set each step takes
=====  ==========  ==========================================================

Forward and backward, side by side (one batch):

============================  ==============================================
forward                       backward
============================  ==============================================
A = Q W^T                     dW = dA^T Q
U = A / |A| (row by row)      dA = (dU - U (U . dU)) / |A|  (`normalize_backward`)
S = U P^T                     dU = dS P
L = mean_i -log softmax(S_i / tau)_i    dS = (softmax(S / tau) - I) / (B tau)
============================  ==============================================

Relations: the bi-encoder of `labs.lessons.hard_negatives` trains a whole (toy) encoder on both
sides with the same loss and backward pieces (`normalize_backward`); here only the question side
moves. `train_adapter_torch` is the same run through torch autograd (tested equal within 1e-9).
The look-alike set is `labs.lessons.lookalikes`; ``benchmarks/lookalike_experiment.py`` runs
both arms on the real all-MiniLM-L6-v2 over several seeds.

Lesson: ``notebooks/05_hard_negatives.ipynb``.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import torch

from labs.checks import (MOST, arguments, finite_table, integer, integer_table, positive, require, scaled_scores,
                         temperature, unit_rows)
from labs.lessons.hard_negatives import normalize_backward
from labs.lessons.infonce import info_nce, info_nce_torch, log_softmax_rows

__all__ = ["Mulberry32", "batch_plan", "adapt", "adapter_loss_and_grad", "train_adapter", "train_adapter_torch",
           "finite_difference_check", "look_alike_wins", "TAU", "LR", "STEPS", "BATCH"]

TAU = 0.05   # temperature: sentence-transformers' MultipleNegativesRankingLoss default (scale 20)
LR = 0.5     # plain SGD, fixed
STEPS = 100  # steps of one run (lr and steps chosen on the validation topics; the benchmark records the lr grid)
BATCH = 16   # questions per step (one per topic)

_MASK = 0xFFFFFFFF


class Mulberry32:
    """A small 32-bit random generator (mulberry32), so that a page can draw the same batches.

    ``next()`` returns a float in [0, 1) from the 32-bit state; ``below(n)`` is ``floor(next() * n)``.
    In JavaScript: ``a = (a + 0x6D2B79F5) | 0; t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t; return ((t ^ (t >>> 14)) >>> 0) / 4294967296``.
    """

    def __init__(self, seed: int) -> None:
        self.state = integer(seed, "seed", 0, _MASK)

    def next(self) -> float:
        self.state = (self.state + 0x6D2B79F5) & _MASK
        a = self.state
        t = _imul(a ^ (a >> 15), 1 | a)
        t = ((t + _imul(t ^ (t >> 7), 61 | t)) & _MASK) ^ t
        return ((t ^ (t >> 14)) & _MASK) / 4294967296

    def below(self, n: int) -> int:
        return int(self.next() * n)


def _imul(a: int, b: int) -> int:
    """The low 32 bits of a * b (JavaScript's Math.imul, as an unsigned number)."""
    return (a * b) & _MASK


@arguments(topics=partial(integer, minimum=2, maximum=MOST), wordings=partial(integer, minimum=1, maximum=MOST),
           batch=partial(integer, minimum=2, maximum=MOST), steps=partial(integer, minimum=0, maximum=MOST),
           seed=partial(integer, minimum=0))
def batch_plan(topics: int, wordings: int, batch: int, steps: int, seed: int) -> np.ndarray:
    """The rows each step trains on, (steps, batch): row ``wordings * t + w`` is wording w of topic t.

    Epoch by epoch (see the module docstring): one wording per topic, the topics shuffled, cut into
    full batches, so no batch holds a topic twice (its steps article would be its own negative).
    """
    require(batch <= topics, f"batch must be at most the number of topics ({topics}), got {batch}")
    require(seed <= _MASK, f"seed must be below 2**32, got {seed}")
    rng, plan = Mulberry32(seed), []
    while len(plan) < steps:
        chosen = [wordings * t + rng.below(wordings) for t in range(topics)]
        for i in range(topics - 1, 0, -1):
            j = rng.below(i + 1)
            chosen[i], chosen[j] = chosen[j], chosen[i]
        plan += [chosen[k:k + batch] for k in range(0, topics - batch + 1, batch)]
    return np.array(plan[:steps], dtype=np.int64).reshape(steps, batch)


def _unit(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return unit_rows(A, "W q row", return_lengths=True, why_zero="W sends this question to 0")


@arguments(W=finite_table, Q=finite_table)
def adapt(W: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """The adapted questions unit(Q W^T), (n, d): each row is W q scaled to length 1."""
    require(W.ndim == 2 and Q.ndim == 2 and W.shape == (Q.shape[1], Q.shape[1]),
            f"W must be (d, d) for questions Q (n, d), got W {W.shape}, Q {Q.shape}")
    return _unit(Q @ W.T)[0]


def _grad(W: np.ndarray, Q: np.ndarray, P: np.ndarray, tau: float) -> tuple[float, np.ndarray]:
    """Loss and dW (d, d) of one batch, on checked arrays: the forward, then the backward, by hand."""
    U, norms = _unit(Q @ W.T)                       # A = Q W^T, U = A / |A|
    S = U @ P.T                                     # (B, M) cosines
    B = S.shape[0]
    logp = log_softmax_rows(scaled_scores(S, tau))  # S / tau, or tau named where it overflows
    loss = float(-logp[np.arange(B), np.arange(B)].mean())
    dS = np.exp(logp)
    dS[np.arange(B), np.arange(B)] -= 1.0
    dS /= B * tau                                   # dL/dS
    dU = dS @ P                                     # dL/dU
    dA = normalize_backward(dU, U, norms)           # dL/dA
    return loss, dA.T @ Q                           # dL/dW


@arguments(W=finite_table, Q=finite_table, P=finite_table, tau=temperature)
def adapter_loss_and_grad(W: np.ndarray, Q: np.ndarray, P: np.ndarray, tau: float = TAU) -> tuple[float, np.ndarray]:
    """InfoNCE of one batch through the adapter and its gradient dW (d, d), by hand.

    Q (B, d) unit questions, P (M, d) unit articles with M >= B (article i answers question i).
    The loss equals ``info_nce(adapt(W, Q) @ P.T, tau)``.
    """
    require(Q.ndim == 2 and P.ndim == 2 and W.shape == (Q.shape[1], Q.shape[1]) and P.shape[1] == Q.shape[1],
            f"Q (B, d), P (M, d) and W (d, d) must fit, got {Q.shape}, {P.shape}, {W.shape}")
    require(Q.shape[0] >= 1 and P.shape[0] >= Q.shape[0], "P needs at least as many rows as Q >= 1 (article i "
            f"answers question i), got {P.shape[0]} and {Q.shape[0]}")
    loss, dW = _grad(W, Q, P, tau)
    require(np.isclose(loss, info_nce(adapt(W, Q) @ P.T, tau)), "the loss disagrees with info_nce")
    return loss, dW


def _training_set(Q, P, L) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    Q, P = finite_table(Q, "Q"), finite_table(P, "P")
    L = None if L is None else finite_table(L, "L")
    require(Q.ndim == 2 and Q.shape == P.shape and (L is None or L.shape == Q.shape),
            f"Q, P (and L) must be (n, d) each, one row per training question, got Q {Q.shape}, P {P.shape}"
            + ("" if L is None else f", L {L.shape}"))
    return Q, P, L


@arguments(steps=partial(integer, minimum=0, maximum=MOST), tau=temperature, lr=positive)
def train_adapter(Q: np.ndarray, P: np.ndarray, L: np.ndarray | None, plan: np.ndarray, *, steps: int = STEPS,
                  tau: float = TAU, lr: float = LR) -> tuple[np.ndarray, list[float]]:
    """Train W from the identity: ``steps`` steps of plain SGD on the rows of ``plan``; returns W and the losses.

    Row r of Q (n, d) is a training question, of P (n, d) its steps article and of L (n, d) its
    look-alike. Each step takes the rows ``plan[step]``; the table's columns are their steps
    articles and, when L is given, their look-alikes after them (the look-alike arm). L None is the
    in-batch arm.
    """
    Q, P, L = _training_set(Q, P, L)
    plan = _plan(plan, steps, len(Q))
    W, losses = np.eye(Q.shape[1]), []
    for rows in plan[:steps]:
        columns = P[rows] if L is None else np.concatenate([P[rows], L[rows]])
        loss, dW = _grad(W, Q[rows], columns, tau)
        W -= lr * dW
        losses.append(loss)
    return W, losses


def _plan(plan, steps: int, n: int) -> np.ndarray:
    """The rows of each step, (at least steps, batch), every entry a row of Q (0..n-1)."""
    plan = integer_table(plan, "plan", ndim=2, what=f"(steps, batch) rows of Q, at least {steps} steps")
    require(len(plan) >= steps and plan.size and plan.min() >= 0 and plan.max() < n,
            f"plan must be (steps, batch) rows of Q (0..{n - 1}), at least {steps} steps, got shape {plan.shape}")
    return plan


@arguments(steps=partial(integer, minimum=0, maximum=MOST), tau=temperature, lr=positive)
def train_adapter_torch(Q, P, L, plan, *, steps: int = STEPS, tau: float = TAU, lr: float = LR) -> np.ndarray:
    """The same run as `train_adapter` through torch autograd in float64 (the check on the hand gradient)."""
    Q, P, L = _training_set(Q, P, L)
    plan = _plan(plan, steps, len(Q))
    Qt, Pt = torch.tensor(np.asarray(Q, dtype=np.float64)), torch.tensor(np.asarray(P, dtype=np.float64))
    Lt = None if L is None else torch.tensor(np.asarray(L, dtype=np.float64))
    W = torch.eye(Qt.shape[1], dtype=torch.float64, requires_grad=True)
    for rows in np.asarray(plan)[:steps]:
        idx = torch.as_tensor(rows)
        columns = Pt[idx] if Lt is None else torch.cat([Pt[idx], Lt[idx]])
        loss = info_nce_torch(Qt[idx] @ W.T, columns, tau, normalize=True)  # normalizes both sides: P is unit
        (grad,) = torch.autograd.grad(loss, W)
        with torch.no_grad():
            W -= lr * grad
    return W.detach().numpy()


@arguments(seed=partial(integer, minimum=0), eps=positive, tau=temperature)
def finite_difference_check(seed: int = 0, eps: float = 1e-6, tau: float = 0.5) -> float:
    """Largest |hand gradient - central finite difference| over every entry of a random W (5, 5)."""
    rng = np.random.default_rng(seed)
    Q, P = _unit(rng.standard_normal((3, 5)))[0], _unit(rng.standard_normal((6, 5)))[0]
    W = np.eye(5) + 0.3 * rng.standard_normal((5, 5))
    dW = _grad(W, Q, P, tau)[1]
    worst = 0.0
    for idx in np.ndindex(W.shape):
        E = np.zeros_like(W)
        E[idx] = eps
        numeric = (_grad(W + E, Q, P, tau)[0] - _grad(W - E, Q, P, tau)[0]) / (2 * eps)
        worst = max(worst, abs(numeric - dW[idx]))
    return worst


@arguments(W=finite_table, Q=finite_table, P=finite_table, L=finite_table)
def look_alike_wins(W: np.ndarray, Q: np.ndarray, P: np.ndarray, L: np.ndarray) -> np.ndarray:
    """Per question (n,): True where the adapted question scores its look-alike (row of L) at least as
    high as its steps article (row of P); the identity W is the untouched model."""
    U = adapt(W, Q)
    require(P.shape == U.shape and L.shape == U.shape, f"P and L must be (n, d) like Q, got {P.shape}, {L.shape}")
    return np.einsum("ij,ij->i", U, L) >= np.einsum("ij,ij->i", U, P)
