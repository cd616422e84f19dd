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

Relations: the loss is `labs.infonce.info_nce_torch`, the same loss as
sentence-transformers' MultipleNegativesRankingLoss with ``scale = 1 / tau``
(its default scale 20 is tau 0.05). Lesson: ``notebooks/03_temperature.ipynb``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from labs.infonce import check_tau, info_nce_torch, positive_share
from labs.plumbing import number_answer, word_answer

__all__ = [
    "positive_loss_gradient",
    "make_toy_pairs",
    "TemperatureRun",
    "train_at_temperature",
    "check_sharper_tau",
    "check_share_threshold",
    "check_scale_for_tau",
]


def positive_loss_gradient(pos: float, negs: Sequence[float], tau: float) -> float:
    """d loss / d pos for one row: -(1 - share) / tau (how hard the loss still pulls the positive up)."""
    tau = check_tau(tau)
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
    tau = check_tau(tau)
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


def check_sharper_tau(answer: float | None) -> bool:
    """Exercise: the largest tau (to 2 decimals) at which a 0.2 cosine lead over three negatives earns >= 90%."""
    if answer is None:
        print("Not answered yet: fill in a temperature, e.g. answer = 0.5")
        return False
    try:
        tau = check_tau(answer, "answer")
    except ValueError as err:
        print(f"Not a temperature: {err}")
        return False
    share = positive_share(0.8, [0.6] * 3, tau)
    share_up = positive_share(0.8, [0.6] * 3, tau + 0.01)
    if share < 0.9:
        print(f"Not yet: at tau = {tau:g} the right card earns {share:.1%}, under 90%. Go sharper (smaller).")
        return False
    if share_up >= 0.9:
        print(f"Close: {tau:g} works, but a slightly warmer tau still reaches 90%. Find the largest one.")
        return False
    print(f"Right: at tau = {tau:g} the right card earns {share:.1%}; one step warmer it drops under 90%.")
    return True


def check_share_threshold(answer: str | None) -> bool:
    """Exercise: when the cosine gap shrinks, must tau go up or down to keep the same share?"""
    word = word_answer(answer, ("up", "down"), 'Not answered yet: fill in answer = "up" or answer = "down"',
                       'Answer with "up" or "down", got {answer!r}')
    if word is None:
        return False
    if word == "up":
        print("Not quite: try it on the slider. Halve the gap and watch what a warmer tau does to the share.")
        return False
    print("Right: the share depends on gap / tau, so a smaller gap needs a smaller tau for the same share.")
    return True


def check_scale_for_tau(answer: float | None) -> bool:
    """Exercise: CLIP starts at tau = 0.07; what `scale` gives MultipleNegativesRankingLoss that temperature?"""
    value = number_answer(answer, "Not answered yet: fill in answer = the scale, a number (1 decimal is enough)",
                          refuse_bool=True)
    if value is None:
        return False
    if abs(value - 1 / 0.07) < 0.05:
        print(f"Right: scale = 1 / tau, so tau = 0.07 is a scale of {value:.1f}.")
        return True
    if abs(value - 0.07) < 1e-9:
        print("Not quite: that is the temperature itself; the library takes its reciprocal.")
    elif abs(value - 0.07 * 20) < 1e-6 or abs(value - 20) < 1e-9:
        print("Hint: 20 is the default scale (tau = 0.05). Which scale is tau = 0.07?")
    else:
        print("Hint: scale and tau are reciprocals: scale = 1 / tau.")
    return False
