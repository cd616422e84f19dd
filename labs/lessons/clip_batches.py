"""Batches for CLIP on digits, and the false negatives they hold.

In plain terms: with ten digits, a random batch of 64 images shows each digit
about six times, so every row of the similarity table has captions of its own
digit among its "negatives". If an image cannot tell same-digit captions apart
(it should not have to), it can at best split its share evenly among them: a
row whose digit appears n times cannot go below ln n, and the batch not below
the mean of that, `false_negative_floor`. Batches of one image per digit
(`draw_batch` with "one_per_digit") have no floor; so do batches of 64 whose
loss masks same-digit columns (`labs.lessons.clip_digits.symmetric_loss_torch` with
labels).

Shapes
------
============  ==========  ==================================================
name          shape       meaning
============  ==========  ==================================================
y             (N,)        digit labels of the training images
batch index   (B,)        rows of y drawn for one step (B = 10 one per digit)
batch_labels  (B,)        the digits of one batch
============  ==========  ==================================================

Relations: used by `labs.lessons.clip_digits.train_image_tower`; the masked loss that
drops false negatives by score, not by label, is `labs.lessons.infonce.info_nce_masked`.
Lesson: ``notebooks/09_clip.ipynb`` ("False negatives, before and after").
"""

from __future__ import annotations

from functools import partial

import numpy as np
import torch

from labs.checks import MOST, arguments, choice, integer, integer_table, require, torch_generator

__all__ = ["SAMPLERS", "draw_batch", "false_negative_floor"]

#: How a training batch is drawn: "random" (any images, so one digit can fill several rows) or
#: "one_per_digit" (one image of each trained digit: no two rows share a digit, no false negatives).
SAMPLERS = ("random", "one_per_digit")


@arguments(y=partial(integer_table, ndim=1, nonempty=True, what="a non-empty 1-D array of digit labels"),
           sampler=partial(choice, allowed=SAMPLERS), gen=torch_generator)
def draw_batch(y: np.ndarray, batch: int | None, sampler: str, gen: torch.Generator) -> torch.Tensor:
    """Row indices into ``y`` for one training batch, drawn with ``gen``: (batch,) or (number of digits,).

    "random" draws ``batch`` images uniformly (with replacement); "one_per_digit"
    draws one image of each digit present in ``y``, in digit order, so the
    batch holds as many rows as there are digits and ``batch`` must be None or
    that number. ``y`` must be a non-empty 1-D array of integer labels and ``gen`` a
    ``torch.Generator`` (None would draw from torch's global random state, unseen by the caller).
    """
    if sampler == "random":
        batch = integer(batch, "batch", 2, MOST, what=f"an integer from 2 to {MOST} for the random sampler")
        return _draw(y, batch, sampler, gen)
    require(batch is None or integer(batch, "batch") == len(np.unique(y)), "one_per_digit batches hold one image "
            f"per digit ({len(np.unique(y))}), got batch={batch!r}")
    return _draw(y, batch, sampler, gen)


def _draw(y: np.ndarray, batch: int | None, sampler: str, gen: torch.Generator) -> torch.Tensor:
    """`draw_batch` of checked arguments (training calls this every step)."""
    if sampler == "random":
        return torch.randint(len(y), (int(batch),), generator=gen)
    picks = []
    for d in np.unique(y):
        rows = np.flatnonzero(y == d)
        picks.append(int(rows[int(torch.randint(len(rows), (1,), generator=gen))]))
    return torch.tensor(picks, dtype=torch.long)


def false_negative_floor(batch_labels: np.ndarray) -> float:
    """The lowest mean row loss a batch allows when rows of one digit cannot be told apart: (B,) -> float.

    A row whose digit appears n times in the batch can at best split its share
    evenly among those n same-digit columns (its own caption and n - 1 false
    negatives), a loss of ln n; the floor is the mean over rows. By symmetry the
    column direction has the same floor. 0 when every row's digit is unique. ``batch_labels``
    must be integers (digits), not floats, booleans or text.
    """
    labels = integer_table(batch_labels, "batch_labels", ndim=1, nonempty=True, what="a non-empty 1-D array")
    same = labels[:, None] == labels[None, :]
    return float(np.mean(np.log(same.sum(axis=1))))
