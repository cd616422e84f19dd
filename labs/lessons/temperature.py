"""Temperature: the sharpness dial of InfoNCE, and what it does to training.

In plain terms: the temperature ``tau`` divides every cosine before the
softmax. A large ``tau`` keeps the softmax flat, so even a correctly ranked
card earns a small share and the loss keeps pulling on every row, gently. A
tiny ``tau`` makes the softmax nearly a hard max: a row whose right card
leads comfortably gets almost no gradient, and a row near a mistake (a wrong
card about as high as the right one, or higher) gets about ``1 / tau``. So a
cold loss spends its whole gradient on the few rows near a mistake.

Shapes
------
==============  ==========  ==================================================
name            shape       meaning
==============  ==========  ==================================================
queries         (n, 32)     raw features of the toy's queries (one view of z)
docs            (n, 32)     raw features of their documents (another view)
W               (32, 16)    the shared linear encoder being trained
losses          (steps,)    the training loss of each step's batch
heldout_top1    (steps,)    held-out top-1 accuracy after each step
==============  ==========  ==================================================

Relations: the loss is `labs.lessons.infonce.info_nce_torch`, the same loss as
sentence-transformers' MultipleNegativesRankingLoss with ``scale = 1 / tau``
(its default scale 20 is tau 0.05). Lesson: ``notebooks/04_temperature.ipynb``.

Every public function checks its arguments at its top and names the bad one in a ValueError:
counts and seeds are integers (NumPy's too; not bools, not floats such as 2.0), ``noise`` and
``lr`` finite numbers (not strings), ``optimizer`` one of `OPTIMIZERS`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from labs.lessons.infonce import info_nce_torch, positive_share
from labs.lessons.inputs import real_number, valid_tau, whole_number

__all__ = [
    "positive_loss_gradient",
    "make_toy_pairs",
    "TemperatureRun",
    "OPTIMIZERS",
    "train_at_temperature",
]

OPTIMIZERS = ("sgd", "adamw")  # plain SGD (the lesson's runs) and AdamW (torch's defaults but lr)
SILENT = 0.01  # a row whose pull is under 1% of 1/tau teaches (almost) nothing


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
    ``n``, ``latent`` and ``dim`` are integers >= 1, ``seed`` an integer >= 0, ``noise`` a finite number >= 0.
    """
    n, seed = whole_number(n, "n", 1), whole_number(seed, "seed", 0)
    latent, dim = whole_number(latent, "latent", 1), whole_number(dim, "dim", 1)
    noise = _noise(noise)
    rng = np.random.default_rng(seed)
    mixing = rng.standard_normal((latent, dim))
    data_rng = np.random.default_rng([seed, n])
    z = data_rng.standard_normal((n, latent))
    q = z @ mixing + noise * data_rng.standard_normal((n, dim))
    d = z @ mixing + noise * data_rng.standard_normal((n, dim))
    return torch.tensor(q, dtype=torch.float32), torch.tensor(d, dtype=torch.float32)


@dataclass
class TemperatureRun:
    """What one training run at one temperature produced.

    The last four numbers are averages over the second half of training (its
    steady part): ``jitter`` is in units of the loss, whose natural size is
    1/tau (a row wrong by a cosine gap g costs about g / tau), so ``jitter * tau``
    compares temperatures on one scale; ``rank_jitter`` needs no rescaling (a
    change of held-out top-1, 0.01 = one point). ``teaching_rows`` and
    ``wrong_rows`` describe the training batches' rows just before each step.
    """

    tau: float
    losses: np.ndarray  # (steps,) training loss of each step's batch
    heldout_top1: np.ndarray  # (steps,) held-out top-1 after each step
    accuracy: float  # held-out top-1 at the end: the right document ranks first among all held-out documents
    share: float  # mean softmax share of the positive in held-out batches of `batch`, at this tau
    jitter: float  # std of the step-to-step change of the training loss
    rank_jitter: float  # std of the step-to-step change of held-out top-1
    teaching_rows: float  # share of rows pulled with at least 1% of 1/tau (1 - share >= 0.01); NaN if steps=0
    wrong_rows: float  # share of rows whose right document is not first in its own batch; NaN if steps=0
    W: torch.Tensor  # (dim, 16) the trained encoder


def _noise(noise) -> float:
    value = real_number(noise, "noise", "a finite number >= 0")
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"noise must be a finite number >= 0, got {noise!r}")
    return value


def _step(opt: torch.optim.Optimizer, lr) -> None:
    """``opt.step()``, with torch's overflow of a learning rate too large for float32 weights named."""
    try:
        opt.step()
    except RuntimeError as err:
        if "overflow" not in str(err):
            raise
        raise ValueError(f"lr={lr!r} is too large for the float32 weights: the step overflows") from None


def _top1(Tq: torch.Tensor, Td: torch.Tensor, W: torch.Tensor) -> float:
    S = F.normalize(Tq @ W, dim=-1) @ F.normalize(Td @ W, dim=-1).T
    return (S.argmax(dim=1) == torch.arange(len(S))).double().mean().item()


def _step_jitter(values: np.ndarray) -> float:
    return float(np.std(np.diff(values))) if len(values) > 2 else 0.0


def train_at_temperature(
    tau: float,
    *,
    seed: int = 0,
    steps: int = 300,
    batch: int = 32,
    lr: float = 0.5,
    optimizer: str = "sgd",
    noise: float = 2.5,
    heldout: int = 500,
) -> TemperatureRun:
    """Train a shared linear encoder (32 -> 16, unit-length outputs) with InfoNCE at ``tau``.

    Same data, same initial weights and same batches for every ``tau``,
    ``optimizer`` and ``lr`` (all fixed by ``seed``), so runs differ only in
    those settings. ``optimizer`` is "sgd" (plain SGD) or "adamw" (torch's
    AdamW with its default betas and weight decay). ``steps=0`` trains nothing: the
    batch averages ``teaching_rows`` and ``wrong_rows`` are then NaN (no batch was seen).
    """
    tau = valid_tau(tau)
    if not isinstance(optimizer, str) or optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    rate = real_number(lr, "lr", "a finite number > 0")
    if not (math.isfinite(rate) and rate > 0):
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    seed = whole_number(seed, "seed", 0)
    if seed >= 2**64:
        raise ValueError(f"seed must be an integer from 0 to 2**64 - 1 (torch's seeds), got {seed}")
    steps, batch = whole_number(steps, "steps", 0), whole_number(batch, "batch", 2)
    heldout = whole_number(heldout, "heldout", batch)
    noise = _noise(noise)
    Xq, Xd = make_toy_pairs(steps * batch + heldout, seed=seed, noise=noise)
    Tq, Td = Xq[steps * batch :], Xd[steps * batch :]
    gen = torch.Generator().manual_seed(seed)
    W = torch.nn.Parameter(torch.randn(Xq.shape[1], 16, generator=gen) / 4)
    opt = torch.optim.SGD([W], lr=rate) if optimizer == "sgd" else torch.optim.AdamW([W], lr=rate)
    losses, top1 = np.zeros(steps), np.zeros(steps)
    teaching, wrong = [], []
    for s in range(steps):
        rows = slice(s * batch, (s + 1) * batch)
        if s >= steps // 2:
            with torch.no_grad():
                S = F.normalize(Xq[rows] @ W, dim=-1) @ F.normalize(Xd[rows] @ W, dim=-1).T
                missing = 1 - torch.softmax(S / tau, dim=1).diagonal()  # the pull, in units of 1/tau
            teaching.append((missing >= SILENT).double().mean().item())
            wrong.append((S.argmax(dim=1) != torch.arange(batch)).double().mean().item())
        q, d = Xq[rows] @ W, Xd[rows] @ W
        if not bool(torch.isfinite(q.detach()).all() and torch.isfinite(d.detach()).all()):
            raise ValueError(f"training diverged at step {s}: the encoded batch is no longer finite "
                             f"(is lr={lr!r} too large?)")
        loss = info_nce_torch(q, d, tau)
        opt.zero_grad()
        loss.backward()
        _step(opt, lr)
        if not bool(torch.isfinite(W.detach()).all()):
            raise ValueError(f"training diverged at step {s}: the encoder's weights are no longer finite "
                             f"(is lr={lr!r} too large?)")
        losses[s] = loss.item()
        with torch.no_grad():
            top1[s] = _top1(Tq, Td, W)
    with torch.no_grad():
        Q, D = F.normalize(Tq @ W, dim=-1), F.normalize(Td @ W, dim=-1)
        S = Q @ D.T
        shares = [
            torch.softmax(S[i : i + batch, i : i + batch] / tau, dim=1).diagonal().mean().item()
            for i in range(0, heldout - batch + 1, batch)
        ]
    half = steps // 2
    return TemperatureRun(
        tau, losses, top1, _top1(Tq, Td, W.detach()), float(np.mean(shares)),
        _step_jitter(losses[half:]), _step_jitter(top1[half:]),
        float(np.mean(teaching)) if teaching else float("nan"),
        float(np.mean(wrong)) if wrong else float("nan"), W.detach(),
    )
