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
W (stacked)     (K, 32, 16) K encoders trained side by side (`train_at_temperatures`)
losses          (steps,)    the training loss of each step's batch
heldout_top1    (steps,)    held-out top-1 accuracy after each step
==============  ==========  ==================================================

Relations: each model's loss is `labs.lessons.infonce.info_nce_torch` (computed for the whole
stack at once; a test holds the two together), the same loss as sentence-transformers'
MultipleNegativesRankingLoss with ``scale = 1 / tau`` (its default scale 20 is tau 0.05).
Lesson: ``notebooks/04_temperature.ipynb``.

Every public function checks its arguments at its top and names the bad one in a ValueError:
counts and seeds are integers (NumPy's too; not bools, not floats such as 2.0), ``noise`` and
``lr`` finite numbers (not strings), ``optimizer`` one of `OPTIMIZERS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F

from labs.checks import (
    MOST, arguments, choice, flag, integer, items, number, positive, random_seed, require, still_finite, temperature,
    unit_rows,
)
from labs.lessons.infonce import info_nce_torch, positive_share

__all__ = [
    "positive_loss_gradient",
    "make_toy_pairs",
    "TemperatureRun",
    "OPTIMIZERS",
    "train_at_temperature",
    "train_at_temperatures",
    "optimizer_step",
]

OPTIMIZERS = ("sgd", "adamw")  # plain SGD (the lesson's runs) and AdamW (torch's defaults but lr)
SILENT = 0.01  # a row whose pull is under 1% of 1/tau teaches (almost) nothing


_NOISE = partial(number, what="a finite number >= 0", low=0.0, finite=True)


def positive_loss_gradient(pos: float, negs: Sequence[float], tau: float) -> float:
    """d loss / d pos for one row: -(1 - share) / tau (how hard the loss still pulls the positive up)."""
    tau = temperature(tau)
    return -(1.0 - positive_share(pos, negs, tau)) / tau


@arguments(n=partial(integer, minimum=1, maximum=MOST), seed=partial(integer, minimum=0),
           latent=partial(integer, minimum=1, maximum=MOST),
           dim=partial(integer, minimum=1, maximum=MOST), noise=_NOISE)
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


def _step_jitter(values: np.ndarray) -> float:
    return float(np.std(np.diff(values))) if len(values) > 2 else 0.0


# A learning rate too large shows up two ways: the step itself overflows (named here), or the weights
# stop being finite a few steps later (`labs.checks.still_finite`). rerank.py and clip_digits.py step here too.


def optimizer_step(optimizer, lr, weights: str = "the float32 weights") -> None:
    """``optimizer.step()``, with torch's overflow of a learning rate too large for ``weights`` named:
    ValueError "lr={lr!r} is too large for {weights}: the step overflows"."""
    try:
        optimizer.step()
    except RuntimeError as err:
        if "overflow" not in str(err):
            raise
        raise ValueError(f"lr={lr!r} is too large for {weights}: the step overflows") from None


@arguments(tau=temperature, seed=random_seed, steps=partial(integer, minimum=0, maximum=MOST),
           batch=partial(integer, minimum=2, maximum=MOST),
           lr=positive, optimizer=partial(choice, allowed=OPTIMIZERS), noise=_NOISE)
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

    The plain loop, one model, one batch per step. The lesson trains its grid of (tau, seed)
    runs with `train_at_temperatures`, which trains many of these side by side in one stack;
    tests/lessons/test_temperature.py holds each of its runs equal to this one.
    """
    heldout = integer(heldout, "heldout", batch, MOST)
    Xq, Xd = make_toy_pairs(steps * batch + heldout, seed=seed, noise=noise)  # (N, 32) each
    Tq, Td = Xq[steps * batch :], Xd[steps * batch :]  # (heldout, 32): never trained on
    W = torch.nn.Parameter(torch.randn(Xq.shape[1], 16, generator=torch.Generator().manual_seed(seed)) / 4)
    opt = torch.optim.SGD([W], lr=lr) if optimizer == "sgd" else torch.optim.AdamW([W], lr=lr)
    losses, top1, teaching, wrong = [], [], [], []
    for s in range(steps):
        rows = slice(s * batch, (s + 1) * batch)
        q, d = Xq[rows] @ W, Xd[rows] @ W  # (batch, 16)
        still_finite(torch.cat([q, d]), "the encoded batch is no longer finite", f"step {s}", lr)
        if s >= steps // 2:  # the steady half: which rows does this batch still pull, which are ranked wrong?
            with torch.no_grad():
                S = F.normalize(q, dim=-1) @ F.normalize(d, dim=-1).T  # (batch, batch) cosines
                missing = 1 - torch.softmax(S / tau, dim=1).diagonal()  # each row's pull, times tau
            teaching.append((missing >= SILENT).double().mean().item())
            wrong.append((S.argmax(dim=1) != torch.arange(batch)).double().mean().item())
        loss = info_nce_torch(q, d, tau)
        opt.zero_grad()
        loss.backward()
        optimizer_step(opt, lr)
        still_finite(W, "the encoder is no longer finite", f"step {s}", lr)
        losses.append(loss.item())
        top1.append(_top1(Tq[None], Td[None], W.detach()[None])[0])  # held-out top-1 after this step
    with torch.no_grad():
        S = F.normalize(Tq @ W, dim=-1) @ F.normalize(Td @ W, dim=-1).T  # (heldout, heldout)
    shares = [torch.softmax(S[i : i + batch, i : i + batch] / tau, dim=1).diagonal().mean().item()
              for i in range(0, heldout - batch + 1, batch)]  # held-out batches of `batch`
    losses, top1, half = np.array(losses), np.array(top1), steps // 2
    return TemperatureRun(
        tau, losses, top1, float(_top1(Tq[None], Td[None], W.detach()[None])[0]), float(np.mean(shares)),
        _step_jitter(losses[half:]), _step_jitter(top1[half:]),
        float(np.mean(teaching)) if teaching else float("nan"), float(np.mean(wrong)) if wrong else float("nan"),
        W.detach().clone(),
    )


@arguments(taus=partial(items, what="a non-empty list of values", nonempty=True, each=temperature),
           optimizer=partial(choice, allowed=OPTIMIZERS), lr=positive,
           seeds=partial(items, what="a non-empty list of values", nonempty=True, each=random_seed),
           steps=partial(integer, minimum=0, maximum=MOST), batch=partial(integer, minimum=2, maximum=MOST),
           noise=_NOISE, curve=flag)
def train_at_temperatures(
    taus: Sequence[float],
    seeds: Sequence[int],
    *,
    steps: int = 300,
    batch: int = 32,
    lr: float = 0.5,
    optimizer: str = "sgd",
    noise: float = 2.5,
    heldout: int = 500,
    curve: bool = True,
) -> list[list[TemperatureRun]]:
    """Every (tau, seed) run of `train_at_temperature` at once: ``runs[i][j]`` is at ``taus[i]`` with ``seeds[j]``.

    The len(taus) x len(seeds) encoders are trained side by side as one stack of weights,
    shape (K, 32, 16) with K = len(taus) * len(seeds): each step is a handful of batched
    matrix products instead of K small ones: the fast path beside the plain loop of
    `train_at_temperature`. The models never mix: each one's loss, gradient and optimizer state
    depend only on its own slice, and each run gives the numbers of
    ``train_at_temperature(taus[i], seed=seeds[j], ...)`` to float32 rounding (the stack sums in
    another order; tests/lessons/test_temperature.py). A held-out query counts as ranked
    first when its right document scores its row's maximum. With ``curve=False`` held-out top-1
    is measured at the end only (most of the time of a run goes into measuring it after every
    step): ``heldout_top1`` is NaN but for its last entry, and ``rank_jitter`` is NaN.
    """
    heldout = integer(heldout, "heldout", batch, MOST)
    T, n_seeds = len(taus), len(seeds)
    K = T * n_seeds  # model k = i * n_seeds + j: taus[i], seeds[j]
    pairs = [make_toy_pairs(steps * batch + heldout, seed=seed, noise=noise) for seed in seeds]
    Xq, Xd = torch.stack([q for q, _ in pairs]), torch.stack([d for _, d in pairs])  # (seeds, N, 32)
    Tq, Td = (X[:, steps * batch :].repeat(T, 1, 1) for X in (Xq, Xd))  # (K, heldout, 32)
    W = torch.nn.Parameter(torch.stack([
        torch.randn(Xq.shape[2], 16, generator=torch.Generator().manual_seed(seed)) / 4 for seed in seeds
    ]).repeat(T, 1, 1))  # (K, 32, 16)
    divisor = torch.tensor(taus, dtype=torch.float32).repeat_interleave(n_seeds)[:, None, None]
    opt = torch.optim.SGD([W], lr=lr) if optimizer == "sgd" else torch.optim.AdamW([W], lr=lr)
    labels = torch.arange(batch)
    losses, top1 = np.zeros((K, steps)), np.zeros((K, steps))
    teaching, wrong = [], []  # one (K,) array per step of the second half

    def what(k: int) -> str:
        return f"tau={taus[k // n_seeds]!r}, seed={seeds[k % n_seeds]!r}"

    for s in range(steps):
        rows = slice(s * batch, (s + 1) * batch)
        xq, xd = Xq[:, rows].repeat(T, 1, 1), Xd[:, rows].repeat(T, 1, 1)  # (K, batch, 32)
        if s >= steps // 2:
            with torch.no_grad():
                S = F.normalize(xq @ W, dim=-1) @ F.normalize(xd @ W, dim=-1).transpose(1, 2)
                missing = 1 - torch.softmax(S / divisor, dim=2).diagonal(dim1=1, dim2=2)  # pull x tau
            teaching.append((missing >= SILENT).double().mean(dim=1).numpy())
            wrong.append((S.argmax(dim=2) != labels).double().mean(dim=1).numpy())
        q, d = xq @ W, xd @ W
        bad = ~(torch.isfinite(q.detach()).flatten(1).all(1) & torch.isfinite(d.detach()).flatten(1).all(1))
        require(not bool(bad.any()), lambda: f"training diverged at step {s}: the encoded batch of "
                f"{what(int(bad.nonzero()[0]))} is no longer finite (is lr={lr!r} too large?)")
        logits = unit_rows(q, scaled=True) @ unit_rows(d, scaled=True).transpose(1, 2) / divisor  # (K, batch, batch)
        bad = ~torch.isfinite(logits.detach()).flatten(1).all(1)  # cosines are at most 1: only a tau near float32's
        require(not bool(bad.any()), lambda: f"tau={taus[int(bad.nonzero()[0]) // n_seeds]!r} is too small for these "
                f"scores: scores / tau overflows {logits.dtype}")  # smallest makes them overflow
        loss = torch.stack([F.cross_entropy(logits[k], labels) for k in range(K)])  # (K,) one InfoNCE each
        opt.zero_grad()
        loss.sum().backward()  # each slice of W gets its own model's gradient, nothing else
        optimizer_step(opt, lr)
        bad = ~torch.isfinite(W.detach()).flatten(1).all(1)
        require(not bool(bad.any()), lambda: f"training diverged at step {s}: the encoder of "
                f"{what(int(bad.nonzero()[0]))} is no longer finite (is lr={lr!r} too large?)")
        losses[:, s] = loss.detach().numpy()
        if curve:
            with torch.no_grad():
                top1[:, s] = _top1(Tq, Td, W)
    with torch.no_grad():
        Q, D = F.normalize(Tq @ W, dim=-1), F.normalize(Td @ W, dim=-1)
        S = Q @ D.transpose(1, 2)  # (K, heldout, heldout)
        final = _top1(Tq, Td, W)
    if not curve and steps:
        top1[:] = np.nan
        top1[:, -1] = final
    half = steps // 2
    runs = []
    for k in range(K):
        tau = taus[k // n_seeds]
        shares = [
            torch.softmax(S[k, i : i + batch, i : i + batch] / tau, dim=1).diagonal().mean().item()
            for i in range(0, heldout - batch + 1, batch)
        ]
        runs.append(TemperatureRun(
            tau, losses[k], top1[k], float(final[k]), float(np.mean(shares)),
            _step_jitter(losses[k, half:]), _step_jitter(top1[k, half:]) if curve else float("nan"),
            float(np.mean([t[k] for t in teaching])) if teaching else float("nan"),
            float(np.mean([w[k] for w in wrong])) if wrong else float("nan"), W.detach()[k].clone(),
        ))
    return [runs[i * n_seeds : (i + 1) * n_seeds] for i in range(T)]


def _top1(Tq: torch.Tensor, Td: torch.Tensor, W: torch.Tensor) -> np.ndarray:
    """Held-out top-1 of each model in the stack, shape (K,): the share of queries whose right
    document scores the maximum of their row (among all ``heldout`` documents)."""
    Q, D = F.normalize(Tq @ W, dim=-1), F.normalize(Td @ W, dim=-1)
    hits = np.empty(len(W))
    for k in range(len(W)):  # one model's (heldout, heldout) table at a time: it stays in the cache
        S = Q[k] @ D[k].T
        hits[k] = (S.diagonal() == S.amax(dim=1)).double().mean().item()
    return hits
