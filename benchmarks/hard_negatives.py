"""Benchmark of the hard-negative experiment: ``python benchmarks/hard_negatives.py``.

Times, on this machine and in one run: both models trained for 400 steps
while recording their unseen-topic curves (one run per model), the same
curves the naive way (a fresh model trained from scratch for every
checkpoint, as the source lesson did), and the 10-seed table. It prints the
ratio naive / one-run and checks that both ways give the same curve. Timings
on a shared machine vary; the ratio is the number to compare. Budgets from
the issue: 0.5 s for the models and curves, 5 s for the 10-seed table.
"""

from __future__ import annotations

import argparse
import sys
import time

from labs.lessons.hard_negatives import (
    look_alike_accuracy, seed_sweep, train_bi_encoder,
)

CHECKPOINTS = range(0, 401, 10)


def one_run_curves() -> dict[bool, dict[int, float]]:
    """Both models, 400 steps each, the curve recorded during the run."""
    return {hard: train_bi_encoder(hard, steps=400, checkpoints=CHECKPOINTS)[1] for hard in (False, True)}


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="take the best of this many runs (default 3)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    train_bi_encoder(True, steps=5)  # warm the caches of features
    t_one, one = best_of(one_run_curves, args.repeats)
    t_naive, naive = best_of(naive_curves, 1)
    t_table, table = best_of(lambda: seed_sweep(range(10)), args.repeats)
    same = one == naive

    print(f"Hard-negative experiment, best of {args.repeats} (naive: one run), on this machine now")
    print(f"  both models x 400 steps + both curves (one run each): {t_one:7.3f} s  (budget 0.5 s)"
          f"  {'ok' if t_one <= 0.5 else 'OVER'}")
    print(f"  the same curves, retrained per checkpoint ({len(CHECKPOINTS)} points): {t_naive:7.3f} s")
    print(f"  ratio naive / one run: {t_naive / t_one:.1f}x; curves identical: {same}")
    print(f"  10-seed table (20 runs of 400 steps): {t_table:7.3f} s  (budget 5 s)  {'ok' if t_table <= 5 else 'OVER'}")
    print(f"  in-batch unseen mean {table['in_batch'].mean():.3f}, hard min {table['hard'].min():.3f}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
