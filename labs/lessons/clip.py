"""CLIP on a toy: two encoders trained into one shared space, gradients by hand.

In plain words: every example has a hidden meaning z (its class prototype plus
noise). An "image" shows z through one random mixing matrix, a "caption"
through another of a different size, so the raw image and caption features
live in unrelated spaces. Two linear encoders map each into 16 numbers, scaled
to length 1, and the symmetric (CLIP) loss trains them together: each image
must pick its own caption from the batch, and each caption its own image.
Afterwards an image is labelled "zero-shot" by its nearest clean class caption;
no classifier is ever trained on the labels.

Shapes
------
===============  ==========  =====================================================
name             shape       meaning
===============  ==========  =====================================================
images           (n, 32)     image features: z through the image mixing, plus noise
captions         (n, 24)     caption features: z through the caption mixing, plus noise
labels           (n,)        the class 0..4 behind each pair
Wi               (32, 16)    the image encoder (linear)
Wt               (24, 16)    the caption encoder (linear)
I, T             (n, 16)     unit image and caption vectors; S = I T^T / tau
class captions   (5, 24)     one clean caption per class: the prototype, mixed
===============  ==========  =====================================================

Relations: the loss value is `labs.lessons.infonce.clip_loss`; the gradients through
the similarity table and through the unit-length scaling are
`labs.lessons.hard_negatives.info_nce_grads` (``symmetric=True``) and
`labs.lessons.hard_negatives.normalize_backward`, reused here, not copied. In PyTorch
the same loss is ``0.5 * (cross_entropy(S, arange(n)) + cross_entropy(S.T,
arange(n)))``, which the tests use to check the hand gradients. The real-image
version (scikit-learn digits and a frozen sentence encoder) is `labs.lessons.clip_digits`.

Every public function checks its arguments at its top and names the bad one in a ValueError:
tables must hold real, finite numbers (not booleans, text, complex numbers, nor a tensor that
requires grad: these functions compute with NumPy), labels must be integers, and random numbers
come from a ``np.random.Generator`` that the caller passes.

Lesson: ``notebooks/09_clip.ipynb``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from labs.checks import (
    MOST, arguments, finite_table, generator, instance, integer, integer_table, items, positive, require, scaled_scores,
    temperature, unit_rows,
)
from labs.lessons.hard_negatives import info_nce_grads, normalize_backward
from labs.lessons.infonce import clip_loss

__all__ = [
    "N_CLASSES",
    "ToyWorld",
    "make_toy_world",
    "sample_pairs",
    "class_captions",
    "embed",
    "clip_loss_and_grads",
    "nearest_class_caption",
    "ClipToy",
    "train_clip_toy",
    "staircase_misses",
]

N_CLASSES, LATENT_DIM, IMAGE_DIM, CAPTION_DIM = 5, 8, 32, 24


@dataclass(frozen=True)
class ToyWorld:
    """The hidden meanings and the two unrelated ways of seeing them."""

    prototypes: np.ndarray  # (5, 8) one hidden meaning per class
    image_mix: np.ndarray  # (8, 32) how an image shows z
    caption_mix: np.ndarray  # (8, 24) how a caption tells z
    meaning_noise: float = 0.5  # spread of z around its prototype
    feature_noise: float = 0.3  # noise added to every image and caption feature


_WORLD = partial(instance, kind=ToyWorld, what="a ToyWorld from make_toy_world")


def _encode(X: np.ndarray, W: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Unit rows of X @ W and their lengths; X and W are checked finite, so only the product can
    overflow, and a row with no direction is named as the product's."""
    with np.errstate(over="ignore", invalid="ignore"):
        A = X @ W
    require(np.all(np.isfinite(A)), f"{name} overflows float64: its inputs are finite, but too large to multiply")
    return unit_rows(A, f"{name} row", return_lengths=True)


def make_toy_world(rng: np.random.Generator) -> ToyWorld:
    """Draw 5 class prototypes and the two random mixing matrices."""
    rng = generator(rng)
    return ToyWorld(
        prototypes=rng.standard_normal((N_CLASSES, LATENT_DIM)),
        image_mix=rng.standard_normal((LATENT_DIM, IMAGE_DIM)),
        caption_mix=rng.standard_normal((LATENT_DIM, CAPTION_DIM)),
    )


@arguments(world=_WORLD, n=partial(integer, minimum=1, maximum=MOST), rng=generator)
def sample_pairs(world: ToyWorld, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n (image, caption) pairs that share a hidden meaning: (n, 32), (n, 24), labels (n,)."""
    labels = rng.integers(N_CLASSES, size=n)
    z = world.prototypes[labels] + world.meaning_noise * rng.standard_normal((n, LATENT_DIM))
    images = z @ world.image_mix + world.feature_noise * rng.standard_normal((n, IMAGE_DIM))
    captions = z @ world.caption_mix + world.feature_noise * rng.standard_normal((n, CAPTION_DIM))
    return images, captions, labels


def class_captions(world: ToyWorld) -> np.ndarray:
    """One clean caption per class, (5, 24): the prototype seen through the caption mixing, no noise."""
    world = _WORLD(world, "world")
    return world.prototypes @ world.caption_mix


def embed(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Encode rows of X (n, k) with a linear encoder W (k, d) and scale them to length 1: (n, d).

    X and W must hold real, finite numbers; a row of X @ W that is all zeros (no direction) or a
    product too large for float64 is refused, naming ``X @ W``."""
    X, W = finite_table(X, "X"), finite_table(W, "W")
    require(X.ndim == 2 and W.ndim == 2 and X.shape[1] == W.shape[0],
            f"X (n, k) and W (k, d) must fit, got shapes {X.shape} and {W.shape}")
    return _encode(X, W, "X @ W")[0]


@arguments(images=finite_table, captions=finite_table, Wi=finite_table, Wt=finite_table, tau=temperature)
def clip_loss_and_grads(
    images: np.ndarray, captions: np.ndarray, Wi: np.ndarray, Wt: np.ndarray, tau: float
) -> tuple[float, np.ndarray, np.ndarray]:
    """Symmetric loss of a batch of pairs and its gradients with respect to Wi and Wt, by hand.

    Forward: A = X W, unit rows U = A / |A|, S = I T^T / tau, loss = clip_loss.
    Backward: the table's gradient gives dI, dT (`info_nce_grads`); the unit
    scaling keeps only their sideways part (`normalize_backward`); then dW = X^T dA.
    """
    X, Y = images, captions
    require(X.ndim == 2 and Y.ndim == 2 and X.shape[0] == Y.shape[0] and X.shape[0] >= 2,
            f"images (n, k) and captions (n, m) need the same number n >= 2 of rows, got {X.shape} and {Y.shape}")
    require(Wi.ndim == 2 and Wt.ndim == 2 and Wi.shape == (X.shape[1], Wt.shape[1]) and Wt.shape[0] == Y.shape[1],
            f"Wi {Wi.shape} and Wt {Wt.shape} do not fit images {X.shape} and captions {Y.shape}")
    return _loss_and_grads(X, Y, Wi, Wt, tau)


def _loss_and_grads(X: np.ndarray, Y: np.ndarray, Wi: np.ndarray, Wt: np.ndarray, tau: float):
    """`clip_loss_and_grads` of checked arguments (training calls this every step)."""
    I, image_norms = _encode(X, Wi, "images @ Wi")
    T, caption_norms = _encode(Y, Wt, "captions @ Wt")
    S = I @ T.T
    scaled_scores(S, tau, name="the cosine table I @ T.T")  # names a tau too small for the cosines
    loss = clip_loss(S, tau)
    dI, dT = info_nce_grads.__wrapped__(I, T, tau, True)  # their arguments are checked: the bodies only
    dWi = X.T @ normalize_backward.__wrapped__(dI, I, image_norms)
    dWt = Y.T @ normalize_backward.__wrapped__(dT, T, caption_norms)
    return loss, dWi, dWt


@arguments(image_vecs=finite_table, caption_vecs=finite_table)
def nearest_class_caption(image_vecs: np.ndarray, caption_vecs: np.ndarray) -> np.ndarray:
    """Label each image by its most similar class caption (zero-shot): (n, d), (C, d) -> (n,).

    Both tables must hold real, finite numbers; they are compared in float64 (a float16 product
    would overflow), and a similarity that still overflows is refused rather than ranked.
    """
    I, C = image_vecs, caption_vecs
    require(I.ndim == 2 and C.ndim == 2 and I.shape[1] == C.shape[1],
            f"image_vecs (n, d) and caption_vecs (C, d) must share d, got {I.shape} and {C.shape}")
    require(C.shape[0] > 0, "caption_vecs has no rows: there is no class to predict")
    with np.errstate(over="ignore", invalid="ignore"):
        S = I @ C.T
    require(np.all(np.isfinite(S)), "image_vecs @ caption_vecs.T overflows float64: scale the vectors down (unit rows)")
    return np.argmax(S, axis=1)


@dataclass
class ClipToy:
    """The trained encoders and what the lesson shows about them."""

    Wi: np.ndarray  # (32, 16) image encoder
    Wt: np.ndarray  # (24, 16) caption encoder
    zero_shot_accuracy: float  # on the held-out test images
    similarity: np.ndarray  # (n_show, 5) cosines of the first test images, sorted by class, with the 5 captions
    labels: np.ndarray  # (n_show,) their true classes, sorted
    losses: list[float] = field(default_factory=list, repr=False)  # the loss of every training step
    accuracy_at: dict[int, float] = field(default_factory=dict)  # zero-shot accuracy after each checkpoint
    world: ToyWorld | None = field(default=None, repr=False)


@arguments(seed=partial(integer, minimum=0), steps=partial(integer, minimum=0, maximum=MOST), tau=temperature,
           lr=positive,
           batch=partial(integer, minimum=2, maximum=MOST), dim=partial(integer, minimum=1, maximum=MOST),
           n_test=partial(integer, minimum=1, maximum=MOST),
           n_show=partial(integer, minimum=1, maximum=MOST), checkpoints=partial(items, what="a list of step counts"))
def train_clip_toy(
    *,
    seed: int = 0,
    steps: int = 300,
    tau: float = 0.1,
    lr: float = 0.5,
    batch: int = 32,
    dim: int = 16,
    n_test: int = 500,
    n_show: int = 40,
    checkpoints: Sequence[int] = (),
) -> ClipToy:
    """Train the two linear encoders with the symmetric loss and plain gradient descent.

    The world, the training batches and the held-out test set come from three
    separate random streams of ``seed``, so the test set does not depend on
    ``steps`` and ``steps=0`` measures the untrained encoders on the same images.
    ``checkpoints`` (step counts <= steps) also records the zero-shot accuracy
    reached after each of them, as one run, in ``accuracy_at``.
    """
    require(n_show <= n_test, f"n_show={n_show} cannot exceed n_test={n_test}")
    marks = {integer(c, "checkpoints", 0, steps, what=f"step counts between 0 and steps={steps}") for c in checkpoints}
    world_rng, batch_rng, test_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    world = make_toy_world(world_rng)
    Wi = world_rng.normal(0.0, 1.0 / math.sqrt(dim), (IMAGE_DIM, dim))
    Wt = world_rng.normal(0.0, 1.0 / math.sqrt(dim), (CAPTION_DIM, dim))
    test_images, _, test_labels = sample_pairs(world, n_test, test_rng)
    clean = class_captions(world)

    def accuracy() -> float:
        return float(np.mean(nearest_class_caption(embed(test_images, Wi), embed(clean, Wt)) == test_labels))

    losses, accuracy_at = [], {}
    for step in range(steps + 1):
        if step in marks:
            accuracy_at[step] = accuracy()
        if step == steps:
            break
        images, captions, _ = sample_pairs(world, batch, batch_rng)
        loss, dWi, dWt = _loss_and_grads(images, captions, Wi, Wt, tau)
        Wi -= lr * dWi
        Wt -= lr * dWt
        losses.append(loss)

    I, L = embed(test_images, Wi), embed(clean, Wt)
    order = np.argsort(test_labels[:n_show], kind="stable")
    return ClipToy(Wi=Wi, Wt=Wt, zero_shot_accuracy=accuracy(), similarity=(I[:n_show] @ L.T)[order],
                   labels=test_labels[:n_show][order], losses=losses, accuracy_at=accuracy_at, world=world)


@arguments(similarity=finite_table, labels=integer_table)
def staircase_misses(similarity: np.ndarray, labels: np.ndarray) -> list[tuple[int, int, int]]:
    """Rows whose brightest caption is another class's: (row, true class, predicted class) each.

    ``similarity`` must hold real, finite numbers (a NaN row has no brightest caption) and
    ``labels`` integers (the class numbers, columns of ``similarity``)."""
    require(similarity.ndim == 2 and labels.shape == (similarity.shape[0],),
            f"similarity (n, C) and labels (n,) do not fit: {similarity.shape} and {labels.shape}")
    require(similarity.shape[1] > 0 or not len(labels), "similarity has no columns: there is no caption to pick")
    predicted = similarity.argmax(axis=1)
    return [(int(r), int(labels[r]), int(predicted[r])) for r in np.flatnonzero(predicted != labels)]
