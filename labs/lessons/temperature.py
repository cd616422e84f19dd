"""Temperature: the sharpness dial of InfoNCE, and what it does to training.

In plain terms: the temperature ``tau`` divides every cosine before the
softmax. A large ``tau`` keeps the softmax flat, so even a correctly ranked
card earns a small share and the loss keeps pushing; a tiny ``tau`` makes the
softmax nearly a hard max, so the gradient is 1/tau times larger and follows
the single hardest negative, and plain SGD at a fixed learning rate starts to
jump around.

Shapes
------
==========  ==========  ==================================================
name        shape       meaning
==========  ==========  ==================================================
queries     (n, 32)     raw features of the toy's queries (one view of z)
docs        (n, 32)     raw features of their documents (another view)
W           (32, 16)    the shared linear encoder being trained
losses      (steps,)    the training loss after each step
==========  ==========  ==================================================

Relations: the loss is `labs.lessons.infonce.info_nce_torch`, the same loss as
sentence-transformers' MultipleNegativesRankingLoss with ``scale = 1 / tau``
(its default scale 20 is tau 0.05). Lesson: ``notebooks/04_temperature.ipynb``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from labs.lessons.infonce import info_nce_torch, positive_share
from labs.lessons.inputs import valid_tau

__all__ = [
    "positive_loss_gradient",
    "make_toy_pairs",
    "TemperatureRun",
    "train_at_temperature",
]


def positive_loss_gradient(pos: float, negs: Sequence[float], tau: float) -> float:
    """d loss / d pos for one row: -(1 - share) / tau (how hard the loss still pulls the positive up)."""
    tau = valid_tau(tau)
    return -(1.0 - positive_share(pos, negs, tau)) / tau


def make_toy_pairs(
    n: int, *, seed: int = 0, latent: int = 16, dim: int = 32, noise: float = 2.5
) -> tuple[torch.Tensor, torch.Tensor]:
    """n (query, document) pairs: two noisy views of one hidden meaning each, shapes (n, dim) and (n, dim).

    Every pair shares a hidden vector z (``latent`` numbers); both sides see it
    through the same random mixing matrix, each with its own noise. With noise
    2.5 the views are far from identical, so look-alike documents exist and
    ranking is not trivial. The mixing matrix depends on ``seed`` only.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if noise < 0:
        raise ValueError(f"noise must be >= 0, got {noise}")
    rng = np.random.default_rng(seed)
    mixing = rng.standard_normal((latent, dim))
    data_rng = np.random.default_rng([seed, n])
    z = data_rng.standard_normal((n, latent))
    q = z @ mixing + noise * data_rng.standard_normal((n, dim))
    d = z @ mixing + noise * data_rng.standard_normal((n, dim))
    return torch.tensor(q, dtype=torch.float32), torch.tensor(d, dtype=torch.float32)


@dataclass
class TemperatureRun:
    """What one training run at one temperature produced."""

    tau: float
    losses: np.ndarray  # (steps,) training loss after each step
    accuracy: float  # held-out top-1: the right document ranks first among all held-out documents
    share: float  # mean softmax share of the positive in held-out batches of `batch`
    jitter: float  # std of step-to-step loss changes over the last half of training
    W: torch.Tensor  # (dim, 16) the trained encoder


def train_at_temperature(
    tau: float,
    *,
    seed: int = 0,
    steps: int = 300,
    batch: int = 32,
    lr: float = 0.5,
    noise: float = 2.5,
    heldout: int = 500,
) -> TemperatureRun:
    """Train a shared linear encoder (32 -> 16, unit-length outputs) with InfoNCE at ``tau``, plain SGD.

    Same data, same initial weights and same batches for every ``tau`` (all
    fixed by ``seed``), so runs differ only in the temperature.
    """
    tau = valid_tau(tau)
    if steps < 0 or batch < 2 or heldout < batch:
        raise ValueError(f"need steps >= 0, batch >= 2 and heldout >= batch; got {steps}, {batch}, {heldout}")
    Xq, Xd = make_toy_pairs(steps * batch + heldout, seed=seed, noise=noise)
    Tq, Td = Xq[steps * batch :], Xd[steps * batch :]
    gen = torch.Generator().manual_seed(seed)
    W = torch.nn.Parameter(torch.randn(Xq.shape[1], 16, generator=gen) / 4)
    opt = torch.optim.SGD([W], lr=lr)
    losses = np.zeros(steps)
    for s in range(steps):
        rows = slice(s * batch, (s + 1) * batch)
        loss = info_nce_torch(Xq[rows] @ W, Xd[rows] @ W, tau)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses[s] = loss.item()
    with torch.no_grad():
        Q, D = F.normalize(Tq @ W, dim=-1), F.normalize(Td @ W, dim=-1)
        S = Q @ D.T
        accuracy = (S.argmax(dim=1) == torch.arange(len(S))).double().mean().item()
        shares = [
            torch.softmax(S[i : i + batch, i : i + batch] / tau, dim=1).diagonal().mean().item()
            for i in range(0, heldout - batch + 1, batch)
        ]
    tail = losses[steps // 2 :]
    jitter = float(np.std(np.diff(tail))) if len(tail) > 2 else 0.0
    return TemperatureRun(tau, losses, accuracy, float(np.mean(shares)), jitter, W.detach())


# ---- exercise checks: say right, or how it is wrong, never the answer ----------
