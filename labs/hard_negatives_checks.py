"""The hard-negative lesson's slider exercise (notebook 04) and its check.

The lesson's steps slider trains the in-batch model on seed `SLIDER_SEED`, which
its ten-seed table does not show; the question asks for the best unseen
look-alike accuracy along the slider. The check prints "Right: ..." or a hint,
never the answer; `labs.checks` gathers it with every other lesson's.
"""

from __future__ import annotations

import numpy as np

from labs.hard_negatives import SLIDER_SEED, train_bi_encoder

__all__ = ["best_in_batch_accuracy", "check_best_in_batch"]


def best_in_batch_accuracy(tau: float = 0.1, *, seed: int = SLIDER_SEED, every: int = 40,
                           max_steps: int = 400) -> float:
    """Highest unseen look-alike accuracy the in-batch model shows at any multiple of ``every`` steps.

    The defaults are the lesson's steps slider: seed `SLIDER_SEED`, positions 0, 40, ..., 400.
    """
    _, curve = train_bi_encoder(False, seed=seed, tau=tau, steps=max_steps, checkpoints=range(0, max_steps + 1, every))
    return max(curve.values())


def check_best_in_batch(answer: object) -> bool:
    """The slider question: the in-batch model's best unseen accuracy over the steps slider (seed 10, tau 0.1).

    Accepts a share (0.6) or a percentage (60).
    """
    if answer is None:
        print("Not answered yet: fill in the highest accuracy you saw (a share, e.g. 0.5).")
        return False
    if isinstance(answer, bool) or not isinstance(answer, (int, float, np.integer, np.floating)) or not 0 <= answer <= 100:
        print(f"The answer is a number: a share from 0 to 1 or a percentage from 0 to 100, got {answer!r}.")
        return False
    share = answer / 100 if answer > 1 else float(answer)
    truth = best_in_batch_accuracy(0.1)
    if abs(share - truth) < 0.01:
        print(f"Right: at its best the in-batch model gets {truth:.0%} of the unseen look-alikes on this seed; "
              "the hard-negative model gets all of them.")
        return True
    print("Higher than it ever gets: check that the dropdown says in-batch negatives only." if share > truth
          else "It does better than that at some step: slide through all the steps and keep the highest value.")
    return False
