"""Benchmark of the hard-negative experiment: ``python benchmarks/hard_negatives.py``.

Times, on this machine and in one run:

- against the source material's reference implementation (written out below as
  `ReferenceBiEncoder`: the same model, loss, hand-derived gradient and batches, the way the
  source lesson's code computes them, on this course's topics and templates): the pair of
  400-step runs (in-batch and hard negatives), and both curves (the reference retrains a model
  for every checkpoint of its figure; `labs` records the curve during one run). It prints the
  ratio reference / labs for each; the issue's bar is 4x.
- both models trained for 400 steps while recording their unseen-topic curves at every 10th
  step (one run per model), against the same curves the naive way (a fresh model trained from
  scratch for every checkpoint), and checks that both give the same curve;
- the 10-seed table.

Timings on a shared machine vary; the ratios are the numbers to compare. Each side is the best of
15 runs, taken in turn: a 2-core virtual machine's speed swings by up to 2x within one run, and
with the best of 5 the pair's ratio ranged from 3.8x to 5.2x over seven runs (4.4x to 4.7x over
seven runs with 15). Budgets from the issue: 0.5 s for the models and curves, 5 s for the 10-seed
table.
"""

from __future__ import annotations

import argparse
import re
import sys
import time

import numpy as np

from labs.lessons import hard_negatives
from labs.lessons.hard_negatives import (
    CARD_TEMPLATES, QUESTION_TEMPLATES, TRAIN_TOPICS, UNSEEN_TOPICS, look_alike_accuracy, seed_sweep, train_bi_encoder,
)

CHECKPOINTS = range(0, 401, 10)
REFERENCE_CHECKPOINTS = (0, 10, 25, 50, 100, 200, 400)  # the source lesson's figure


# ---------------------------------------------------------------------------
# The peer: the source lesson's reference code, as it computes, on our data
# ---------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _triples(topics) -> list[tuple[str, str, str]]:
    other = {"howto": "policy", "policy": "howto"}
    return [(q.format(t=t), CARD_TEMPLATES[i].format(T=t.capitalize()), CARD_TEMPLATES[other[i]].format(T=t.capitalize()))
            for t in topics for i, templates in QUESTION_TEMPLATES.items() for q in templates]


class ReferenceBiEncoder:
    """The reference implementation's bi-encoder: texts are counted into words again at every
    step, rows are scaled by ``norm + 1e-12``, and the loss and its gradient are computed from
    ``Q P^T / tau`` as the reference writes them."""

    def __init__(self, hard_negatives: bool, dim: int = 16, tau: float = 0.1, steps: int = 400, batch: int = 8,
                 lr: float = 0.5, seed: int = 0):
        rng = np.random.default_rng(seed)
        train = _triples(TRAIN_TOPICS)
        everything = train + _triples(UNSEEN_TOPICS)
        self.vocab = sorted({w for triple in everything for text in triple for w in _words(text)})
        self.index = {w: i for i, w in enumerate(self.vocab)}
        self.W = rng.normal(0, 1 / np.sqrt(dim), (len(self.vocab), dim))
        groups = {}
        for t in TRAIN_TOPICS:
            for intent in QUESTION_TEMPLATES:
                right = CARD_TEMPLATES[intent].format(T=t.capitalize())
                groups[(t, intent)] = [p for p in train if p[1] == right]
        for _ in range(steps):
            intent = ("howto", "policy")[rng.integers(2)]
            topics = rng.choice(TRAIN_TOPICS, size=batch, replace=False)
            chosen = [groups[(t, intent)][rng.integers(len(groups[(t, intent)]))] for t in topics]
            questions = [c[0] for c in chosen]
            cards = [c[1] for c in chosen] + ([c[2] for c in chosen] if hard_negatives else [])
            self.W -= lr * self._grad(self.bag(questions), self.bag(cards), tau)

    def bag(self, texts: list[str]) -> np.ndarray:
        X = np.zeros((len(texts), len(self.vocab)))
        for r, text in enumerate(texts):
            for w in _words(text):
                if w in self.index:
                    X[r, self.index[w]] += 1
        return X

    @staticmethod
    def _unit(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        norms = np.linalg.norm(A, axis=1, keepdims=True) + 1e-12
        return A / norms, norms

    @staticmethod
    def _log_softmax(S: np.ndarray) -> np.ndarray:
        S = S - S.max(axis=1, keepdims=True)
        return S - np.log(np.exp(S).sum(axis=1, keepdims=True))

    def _grad(self, Xq: np.ndarray, Xp: np.ndarray, tau: float) -> np.ndarray:
        Q, nq = self._unit(Xq @ self.W)
        P, np_ = self._unit(Xp @ self.W)
        B, M = Q.shape[0], P.shape[0]
        S = Q @ P.T / tau
        float(-self._log_softmax(S)[np.arange(B), np.arange(B)].mean())  # the loss, as the reference computes it
        Y = np.zeros((B, M))
        Y[np.arange(B), np.arange(B)] = 1.0
        dS = (np.exp(self._log_softmax(S)) - Y) / B
        dQ, dP = dS @ P / tau, dS.T @ Q / tau
        back = lambda dU, U, n: (dU - U * np.sum(U * dU, axis=1, keepdims=True)) / n  # noqa: E731
        return Xq.T @ back(dQ, Q, nq) + Xp.T @ back(dP, P, np_)

    def look_alike_accuracy(self, topics=UNSEEN_TOPICS) -> float:
        triples = _triples(topics)
        Q, R, L = (self._unit(self.bag([t[k] for t in triples]) @ self.W)[0] for k in range(3))
        return float(np.mean(np.sum(Q * R, axis=1) > np.sum(Q * L, axis=1)))


def reference_pair() -> list[ReferenceBiEncoder]:
    return [ReferenceBiEncoder(hard) for hard in (False, True)]


def reference_curves() -> dict[bool, list[float]]:
    return {hard: [ReferenceBiEncoder(hard, steps=s).look_alike_accuracy() for s in REFERENCE_CHECKPOINTS]
            for hard in (False, True)}


# ---------------------------------------------------------------------------
# labs
# ---------------------------------------------------------------------------


def _fresh() -> None:
    """Forget the random draws of earlier runs: both models of a pair draw their batches once
    (`labs.lessons.hard_negatives` keeps them), so each timed repetition pays for its own draws."""
    hard_negatives._plan.cache_clear()


def labs_pair() -> list:
    _fresh()
    return [train_bi_encoder(hard, steps=400) for hard in (False, True)]


def labs_curves(checkpoints=REFERENCE_CHECKPOINTS) -> dict[bool, dict[int, float]]:
    """Both models, 400 steps each, the curve recorded during the run."""
    _fresh()
    return {hard: train_bi_encoder(hard, steps=400, checkpoints=checkpoints)[1] for hard in (False, True)}


def naive_curves() -> dict[bool, dict[int, float]]:
    """Both curves by retraining from scratch for each checkpoint."""
    return {hard: {s: look_alike_accuracy(train_bi_encoder(hard, steps=s)) for s in CHECKPOINTS}
            for hard in (False, True)}


def best_of(fn, repeats: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def interleaved(a, b, repeats: int) -> tuple[float, float, object, object]:
    """Best of ``repeats`` for each of two functions, run in turn (so both see the same machine load)."""
    best_a = best_b = float("inf")
    out_a = out_b = None
    for _ in range(repeats):
        t, out_a = best_of(a, 1)
        best_a = min(best_a, t)
        t, out_b = best_of(b, 1)
        best_b = min(best_b, t)
    return best_a, best_b, out_a, out_b


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15, help="take the best of this many runs (default 15)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    train_bi_encoder(True, steps=5)  # warm the caches of features
    t_ref_pair, t_pair, ref_models, models = interleaved(reference_pair, labs_pair, args.repeats)
    t_ref_curves, t_curves, ref_curves, curves = interleaved(reference_curves, labs_curves, args.repeats)
    t_one, one = best_of(lambda: labs_curves(CHECKPOINTS), args.repeats)
    t_naive, naive = best_of(naive_curves, 1)
    t_table, table = best_of(lambda: seed_sweep(range(10)), args.repeats)
    same = one == naive

    print(f"Hard-negative experiment, best of {args.repeats} (naive: one run), on this machine now")
    print("  against the source lesson's reference implementation (same model, loss, gradient and batches):")
    print(f"    the pair of 400-step runs: reference {t_ref_pair:7.3f} s, labs {t_pair:7.3f} s, "
          f"ratio {t_ref_pair / t_pair:.1f}x")
    print(f"    both curves at {len(REFERENCE_CHECKPOINTS)} checkpoints (reference: a run per checkpoint; labs: one run "
          f"each): reference {t_ref_curves:7.3f} s, labs {t_curves:7.3f} s, ratio {t_ref_curves / t_curves:.1f}x")
    print(f"    unseen look-alike accuracy after 400 steps, in-batch / hard: reference "
          f"{ref_models[0].look_alike_accuracy():.3f} / {ref_models[1].look_alike_accuracy():.3f}, labs "
          f"{look_alike_accuracy(models[0]):.3f} / {look_alike_accuracy(models[1]):.3f}")
    print(f"  both models x 400 steps + both curves at every 10th step (one run each): {t_one:7.3f} s  (budget 0.5 s)"
          f"  {'ok' if t_one <= 0.5 else 'OVER'}")
    print(f"  the same curves, retrained per checkpoint ({len(CHECKPOINTS)} points): {t_naive:7.3f} s")
    print(f"  ratio naive / one run: {t_naive / t_one:.1f}x; curves identical: {same}")
    print(f"  10-seed table (20 runs of 400 steps): {t_table:7.3f} s  (budget 5 s)  {'ok' if t_table <= 5 else 'OVER'}")
    print(f"  in-batch unseen mean {table['in_batch'].mean():.3f}, hard min {table['hard'].min():.3f}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
