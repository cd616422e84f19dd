"""CLIP on real pictures: handwritten digits meet a frozen sentence encoder.

In plain words: scikit-learn ships 1,797 small (8 x 8) pictures of handwritten
digits. We write a few captions per digit ("a handwritten seven", "the digit
7", ...), embed them once with the packaged all-MiniLM-L6-v2 and keep that text
tower frozen. A small image encoder (a two-layer network) is then trained with
the symmetric CLIP loss so each picture lands next to a caption of its digit.
Afterwards a picture is labelled "zero-shot" by its nearest caption, with no
classifier trained; the captions themselves name each training image's digit,
so they carry the labels, written as sentences.

With ten digits, a random batch of 64 shows each digit about six times: every
row has same-digit captions among its negatives (false negatives), and the loss
cannot fall below `false_negative_floor`. Two ways remove the floor: the
"one_per_digit" sampler (`draw_batch`) holds one image per digit, and
``mask_same_digit`` keeps batches of 64 but leaves same-digit captions out of
each row's negatives.

Shapes
------
=============  ===============  ==================================================
name           shape            meaning
=============  ===============  ==================================================
X              (N, 64)          pixel intensities scaled to [0, 1]
y              (N,)             digit labels 0..9
captions       10 lists of K    K phrasings per digit, digit d in list d
caption_emb    (10, K, 384)     frozen unit caption vectors (computed once)
class_vecs     (10, 384)        one unit vector per digit: the mean phrasing
image_vecs     (N, 384)         the image tower's unit vectors
=============  ===============  ==================================================

Relations: the loss is `labs.lessons.infonce.info_nce_torch` run both ways (images pick
captions, captions pick images), the same value as `labs.lessons.infonce.clip_loss` on
the similarity table. Freezing one tower and training the other is the idea of
LiT (Zhai et al., 2022), which froze the *image* tower and trained the text
one; here the roles are swapped because the pretrained tower we have offline is
a text model. `hit_at_1` is the hit rate of CLIP's retrieval tables (top-1
accuracy) and equals `labs.retrieval.metrics.mrr_at_k` with k = 1; it is not Recall@k,
which counts the share of *all* relevant items found. The linear probe is scikit-learn's
``LogisticRegression``.

Every public function checks its arguments at its top and names the bad one in a ValueError:
vectors and pixels must be real, finite numbers (not booleans, text or complex numbers), labels
and digits integers, settings numbers of the right kind (a string is neither a number nor True).
Rows are scaled to length 1 whatever their size (a tiny or a huge row keeps its direction), and
the same-digit mask leaves out exactly the cells whose row and column show one digit.

Lesson: ``notebooks/09_clip.ipynb`` (the toy version lives in `labs.lessons.clip`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial

import numpy as np
import torch
from torch import nn

from labs.checks import (
    MOST, arguments, choice, finite_table, flag, instance, integer, integer_table, items, number, optional, positive,
    require, random_seed, still_finite, temperature, template, tensor, texts, unit_rows,
)
from labs.lessons.clip_batches import SAMPLERS, draw_batch
from labs.lessons.infonce import info_nce_torch
from labs.lessons.temperature import optimizer_step

__all__ = [
    "DIGIT_WORDS",
    "CAPTION_TEMPLATES",
    "digit_captions",
    "DigitSplit",
    "load_digit_split",
    "embed_captions",
    "class_text_vectors",
    "ImageTower",
    "symmetric_loss_torch",
    "train_image_tower",
    "embed_images",
    "zero_shot_predict",
    "linear_probe_accuracy",
    "hit_at_1",
    "DigitsReport",
    "run_digits_lit",
]

DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")

#: Several phrasings per digit; ``{word}`` is the digit's name, ``{digit}`` its numeral.
CAPTION_TEMPLATES = (
    "a handwritten {word}",
    "the digit {digit}",
    "a scribbled number {word}",
    "a small picture of the number {digit}",
    "someone wrote a {word} by hand",
)


def digit_captions(templates: Sequence[str] = CAPTION_TEMPLATES) -> list[list[str]]:
    """Ten lists of captions, list d holding every phrasing for digit d.

    Each template is a format string with the fields ``{word}`` (the digit's name) and/or
    ``{digit}`` (its numeral) and no others; one that gives every digit the same caption is refused.
    """
    templates = texts(templates, "templates", "a non-empty sequence of strings with {word} or {digit}", nonempty=True)
    for i, t in enumerate(templates):
        filled = {template(t, f"templates[{i}]", "{word} and {digit}", word=w, digit=d) for d, w in enumerate(DIGIT_WORDS)}
        require(len(filled) == len(DIGIT_WORDS), f"templates: {t!r} names neither {{word}} nor {{digit}}, so it "
                "cannot tell digits apart")
    return [[t.format(word=w, digit=d) for t in templates] for d, w in enumerate(DIGIT_WORDS)]


@dataclass(frozen=True)
class DigitSplit:
    """A stratified train/test split of scikit-learn's digits, pixels scaled to [0, 1]."""

    X_train: np.ndarray  # (N_train, 64) float32
    y_train: np.ndarray  # (N_train,) int
    X_test: np.ndarray  # (N_test, 64) float32
    y_test: np.ndarray  # (N_test,) int

    @cached_property
    def pixel_probe(self) -> float:
        """The linear probe on the raw pixels: the yardstick no tower changes, so computed once per split."""
        return linear_probe_accuracy(self.X_train, self.y_train, self.X_test, self.y_test)


@arguments(test_size=partial(number, what="a number between 0 and 1", low=0.0, above=True, high=1.0, below=True,
                             otherwise="between 0 and 1"),
           seed=partial(random_seed, bits=32, user="scikit-learn's random_state"))
def load_digit_split(*, test_size: float = 0.3, seed: int = 0) -> DigitSplit:
    """Load the 1,797 digits shipped with scikit-learn (no download) and split them by class."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    n_test = math.ceil(test_size * len(y))  # scikit-learn's rounding of a fractional test_size
    require(min(n_test, len(y) - n_test) >= len(DIGIT_WORDS), f"test_size={test_size!r} leaves {n_test} test and "
            f"{len(y) - n_test} training images: a split by class needs at least {len(DIGIT_WORDS)} (one per digit) on "
            "each side")
    X = (X / 16.0).astype(np.float32)  # the pixels hold 0..16
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=test_size, stratify=y, random_state=seed)
    return DigitSplit(Xtr, ytr.astype(np.int64), Xte, yte.astype(np.int64))


def _caption_lists(captions, name: str) -> list[list[str]]:
    """Ten lists of captions, one per digit, all of one non-zero length."""
    lists = items(captions, name, "10 lists of strings (digit_captions())")
    require(len(lists) == len(DIGIT_WORDS), f"captions must hold one list per digit (10), got {len(lists)}")
    lists = [texts(items(c, name, "10 lists of strings, all of the same non-zero length"), f"{name}[{d}]")
             for d, c in enumerate(lists)]
    require(len({len(c) for c in lists}) == 1 and lists[0], "captions must be 10 lists of strings, all of the same "
            "non-zero length")
    return lists


def embed_captions(captions: Sequence[Sequence[str]], model) -> torch.Tensor:
    """Embed every caption once with the frozen text tower: (10, K, D) unit vectors, no gradient.

    ``model`` is a SentenceTransformer (the lesson uses the packaged all-MiniLM-L6-v2,
    `labs.retrieval.models.load_minilm`).
    """
    captions = _caption_lists(captions, "captions")
    require(callable(getattr(model, "encode", None)), "model must be a SentenceTransformer "
            f"(labs.retrieval.models.load_minilm()), got {type(model).__name__}")
    with torch.no_grad():
        vecs = model.encode([c for per_digit in captions for c in per_digit], convert_to_tensor=True,
                            normalize_embeddings=True, show_progress_bar=False)
    return vecs.detach().float().cpu().reshape(len(captions), len(captions[0]), -1)


def _caption_emb(caption_emb, name: str) -> torch.Tensor:
    """The (10, K, D) caption vectors of `embed_captions`: real, finite floats, K and D at least 1."""
    x = tensor(caption_emb, name, ndim=3, what="a (10, K, D) tensor from embed_captions", floats=True, finite=True)
    require(x.shape[0] == 10 and 0 not in x.shape, f"{name} must be a (10, K, D) tensor from embed_captions, with "
            f"K >= 1 phrasings of D >= 1 numbers, got {tuple(x.shape)}")
    return x


def class_text_vectors(caption_emb: torch.Tensor) -> torch.Tensor:
    """One unit vector per digit: the normalized mean of its phrasings, (10, K, D) -> (10, D).

    float16 and bfloat16 phrasings are averaged in float32 (their sum could overflow), and the
    result is returned in their dtype. A digit whose phrasings average to zero has no direction
    and is refused; a tiny mean keeps its direction (see `labs.checks.unit_rows`).
    """
    emb = _caption_emb(caption_emb, "caption_emb")
    mean = (emb.float() if emb.dtype in (torch.float16, torch.bfloat16) else emb).mean(dim=1)
    return unit_rows(mean, "caption_emb's mean phrasing of digit").to(emb.dtype)


class ImageTower(nn.Module):
    """The trainable image encoder: 64 pixels -> hidden (ReLU) -> D, the text tower's size."""

    def __init__(self, out_dim: int = 384, hidden: int = 256, in_dim: int = 64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, out_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


_VECTORS = partial(tensor, ndim=2, what="2-D (rows x dim)", finite=True)


@arguments(image_vecs=partial(_VECTORS, directions=True), text_vecs=partial(_VECTORS, directions=True),
           tau=partial(temperature, learned=True), labels=optional(integer_table))
def symmetric_loss_torch(
    image_vecs: torch.Tensor, text_vecs: torch.Tensor, tau: float, labels: torch.Tensor | None = None
) -> torch.Tensor:
    """CLIP loss on (B, D) and (B, D): half images-pick-captions plus half captions-pick-images.

    With ``labels`` (B,), every off-diagonal cell whose row and column show the
    same digit is left out of both softmaxes: a caption that is right for an
    image is no longer counted as its negative (no false-negative floor). A batch
    whose rows all show one digit then has no negative left, and its loss is 0.

    The vectors must be real, finite tensors (or tables) of one dtype and device, with no row of
    zeros; every row is scaled to length 1 whatever its size, so a row and its unit direction
    give the same loss. ``labels`` are integers (digits). ``tau`` is a finite number > 0, or a
    one-number tensor that requires grad (a learned temperature), as in `info_nce_torch`; a tau
    so small that the scores overflow is refused.
    """
    _one_batch(image_vecs, text_vecs, tau, labels)
    return _symmetric_loss(image_vecs, text_vecs, tau, None if labels is None else
                           torch.from_numpy(labels).to(image_vecs.device))


def _one_batch(image_vecs: torch.Tensor, text_vecs: torch.Tensor, tau, labels: np.ndarray | None) -> None:
    """The rules between `symmetric_loss_torch`'s arguments: one (B, D) batch on one dtype and device."""
    require(image_vecs.shape == text_vecs.shape and 0 not in image_vecs.shape, "image_vecs and text_vecs must have "
            f"the same (B, D) shape and need at least one row and one column, got {tuple(image_vecs.shape)} and "
            f"{tuple(text_vecs.shape)}")
    require(image_vecs.dtype == text_vecs.dtype and image_vecs.device == text_vecs.device, "image_vecs and text_vecs "
            f"must share dtype and device, got {image_vecs.dtype} on {image_vecs.device} and {text_vecs.dtype} on "
            f"{text_vecs.device}")
    require(not isinstance(tau, torch.Tensor) or tau.device == image_vecs.device,
            f"tau is on {getattr(tau, 'device', 'cpu')} but image_vecs is on {image_vecs.device}")
    require(labels is None or labels.shape == (image_vecs.shape[0],), f"labels must hold one digit per row "
            f"({image_vecs.shape[0]}), got {None if labels is None else tuple(labels.shape)}")


def _symmetric_loss(image_vecs: torch.Tensor, text_vecs: torch.Tensor, tau, labels: torch.Tensor | None) -> torch.Tensor:
    """`symmetric_loss_torch` on checked arguments (training calls this every step); ``tau`` is a float
    or a learned 0-d tensor."""
    if labels is None:  # info_nce_torch's body: the arguments are checked
        loss = info_nce_torch.__wrapped__
        return 0.5 * loss(image_vecs, text_vecs, tau) + 0.5 * loss(text_vecs, image_vecs, tau)
    logits = unit_rows(image_vecs, "image_vecs row") @ unit_rows(text_vecs, "text_vecs row").T / tau
    if not bool(torch.isfinite(logits.detach()).all()):
        raise ValueError(f"tau={float(tau)!r} is too small for these scores: scores / tau overflows {logits.dtype}")
    same = (labels[:, None] == labels[None, :]) & ~torch.eye(len(labels), dtype=torch.bool, device=labels.device)
    logits = logits.masked_fill(same, float("-inf"))
    target = torch.arange(len(labels), device=labels.device)
    return 0.5 * nn.functional.cross_entropy(logits, target) + 0.5 * nn.functional.cross_entropy(logits.T, target)


def _pixels(X, name: str) -> torch.Tensor:
    """Images as a float32 tensor (N, P), N and P at least 1, every pixel finite in float32."""
    with np.errstate(over="ignore"):
        Xt = torch.as_tensor(finite_table(X, name).astype(np.float32))
    require(Xt.ndim == 2 and Xt.shape[0] > 0, f"{name} must be a non-empty 2-D array (images x pixels), got shape "
            f"{tuple(Xt.shape)}")
    require(Xt.shape[1] > 0, f"{name} has no pixels (shape {tuple(Xt.shape)})")
    require(bool(torch.isfinite(Xt).all()), f"{name} holds values too large for float32 (they overflow to infinity)")
    return Xt


def _frozen_captions(caption_emb, name: str) -> torch.Tensor:
    """`_caption_emb`, and not a tensor that requires grad: the text tower is frozen."""
    require(not _caption_emb(caption_emb, name).requires_grad, f"{name} requires grad, but the text tower is frozen "
            f"here: only the image tower trains. Pass {name}.detach()")
    return caption_emb


def _digits(value, name: str) -> list[int]:
    """Sorted distinct digits 0..9 from a list of integers, or ValueError naming ``name``: one string
    (read letter by letter), floats such as 1.5 (int() would make it 1) and booleans are refused."""
    digits = [integer(c, f"{name} entry") for c in items(value, name, "a list of digits 0..9")]
    require(all(0 <= c <= 9 for c in digits), f"{name} must be digits 0..9, got "
            f"{next((c for c in digits if not 0 <= c <= 9), None)}")
    return sorted(set(digits))


@arguments(tau=temperature, caption_emb=_frozen_captions, X=_pixels, y=integer_table, sampler=partial(choice, allowed=SAMPLERS),
           steps=partial(integer, minimum=0, maximum=MOST), hidden=partial(integer, minimum=1, maximum=MOST),
           lr=positive, seed=random_seed,
           mask_same_digit=flag, classes=optional(_digits))
def train_image_tower(
    X: np.ndarray,
    y: np.ndarray,
    caption_emb: torch.Tensor,
    *,
    classes: Sequence[int] | None = None,
    steps: int = 300,
    tau: float = 0.1,
    batch: int | None = None,
    lr: float = 1e-3,
    hidden: int = 256,
    seed: int = 0,
    sampler: str = "random",
    mask_same_digit: bool = False,
) -> tuple[ImageTower, list[float]]:
    """Train the image tower against frozen captions with the symmetric loss (Adam).

    Each step draws a batch of training images (only of ``classes``, all ten by
    default; see `draw_batch` for the two samplers) and pairs each with a random
    phrasing of its own digit. ``batch`` is the random sampler's size (None:
    64); one_per_digit batches hold one image per trained digit. Returns the
    tower and the loss of every step. ``mask_same_digit`` leaves same-digit
    captions out of each row's negatives (see `symmetric_loss_torch`).

    ``X`` holds real, finite pixels (N, P), ``y`` integer digits (N,), ``caption_emb`` the frozen
    (10, K, D) caption vectors (a tensor that requires grad is refused: nothing here would train
    it); ``classes`` are digits 0..9; ``lr`` a finite number > 0; ``seed`` an integer >= 0;
    ``mask_same_digit`` True or False (and needs two or more classes, or no negative is left).
    """
    require(y.shape == (X.shape[0],), f"y must hold one label per image ({X.shape[0]}), got shape {y.shape}")
    classes, batch = _batch_plan(y, classes, batch, sampler, mask_same_digit)
    keep = np.isin(y, classes)
    Xt, yt = X[torch.as_tensor(keep)], torch.as_tensor(y[keep], dtype=torch.long)

    torch.manual_seed(seed)  # the tower's initial weights
    gen = torch.Generator().manual_seed(seed)  # the batches and phrasings
    tower = ImageTower(out_dim=caption_emb.shape[2], hidden=hidden, in_dim=Xt.shape[1])
    opt = torch.optim.Adam(tower.parameters(), lr=lr)
    caption_emb = caption_emb.float()  # the tower's dtype (no copy when it is float32 already)
    n_phrasings = caption_emb.shape[1]
    losses = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # matrices this small gain nothing from more threads, and one thread is reproducible
    try:
        for _ in range(steps):
            idx = draw_batch.__wrapped__(yt.numpy(), batch, sampler, gen)  # checked once, above
            phrasing = torch.randint(n_phrasings, (len(idx),), generator=gen)
            text = caption_emb[yt[idx], phrasing]  # (batch, D), frozen
            image = tower(Xt[idx])
            still_finite(image, "the image tower's vectors are no longer finite", f"step {len(losses)}", lr)
            loss = _symmetric_loss(image, text, tau, yt[idx] if mask_same_digit else None)
            opt.zero_grad()
            loss.backward()
            optimizer_step(opt, lr, "the float32 tower")
            losses.append(loss.item())
    finally:
        torch.set_num_threads(threads)
    return tower.eval(), losses


def _batch_plan(y: np.ndarray, classes: list[int] | None, batch, sampler: str,
                mask_same_digit: bool) -> tuple[list[int], int | None]:
    """The rules between `train_image_tower`'s arguments: the digits trained and the batch size."""
    classes = list(range(10)) if classes is None else classes
    batch = 64 if sampler == "random" and batch is None else batch
    batch = batch if batch is None else integer(batch, "batch", 2 if sampler == "random" else 1, MOST)
    require(classes, "classes must be a non-empty subset of 0..9, got []")
    require(not mask_same_digit or len(classes) >= 2, f"mask_same_digit=True needs two or more classes: with only "
            f"{classes}, every caption in a batch shows the row's own digit, so none is left as a negative (loss 0)")
    kept = y[np.isin(y, classes)]
    require(sampler != "random" or len(kept) >= batch, f"only {len(kept)} training images of classes {classes}, "
            f"fewer than batch={batch}")
    missing = sorted(set(classes) - set(kept.tolist()))
    require(sampler != "one_per_digit" or not (missing or batch not in (None, len(classes))), "one_per_digit batches "
            f"hold one image per trained digit ({len(classes)}); got batch={batch!r}, digits without images: {missing}")
    return classes, batch


@arguments(tower=partial(instance, kind=ImageTower, what="an ImageTower (from train_image_tower)"), X=_pixels)
def embed_images(tower: ImageTower, X: np.ndarray) -> torch.Tensor:
    """Unit image vectors (N, D) from a trained tower, without gradients.

    ``X`` must hold real, finite pixels, as many per image as the tower reads."""
    require(X.shape[1] == tower.net[0].in_features, f"X has {X.shape[1]} pixels per image, but the tower reads "
            f"{tower.net[0].in_features}")
    with torch.no_grad():
        return unit_rows(tower(X), "the tower's vector of image")


def _pair(a, a_name: str, b, b_name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Two 2-D tables of real, finite numbers that share D, as tensors of one dtype, without gradients."""
    a, b = _VECTORS(a, a_name).detach(), _VECTORS(b, b_name).detach()
    require(a.shape[1] == b.shape[1], f"{a_name} (N, D) and {b_name} (C, D) must share D, got {tuple(a.shape)} and "
            f"{tuple(b.shape)}")
    require(a.device == b.device, f"{a_name} is on {a.device} but {b_name} is on {b.device}")
    wide = torch.promote_types(a.dtype, b.dtype)
    return (a, b) if a.dtype == b.dtype else (a.to(wide), b.to(wide))


def _similarity(a: torch.Tensor, a_name: str, b: torch.Tensor, b_name: str) -> torch.Tensor:
    S = a @ b.T
    require(bool(torch.isfinite(S).all()), f"{a_name} @ {b_name}.T overflows {S.dtype}: scale the vectors down (unit rows)")
    return S.cpu()


def zero_shot_predict(image_vecs: torch.Tensor, class_vecs: torch.Tensor) -> np.ndarray:
    """Label each image by its most similar class caption vector: (N, D), (C, D) -> (N,).

    Tensors (or tables) of real, finite numbers; two float dtypes are compared in the wider one.
    A similarity that overflows is refused rather than ranked."""
    image_vecs, class_vecs = _pair(image_vecs, "image_vecs", class_vecs, "class_vecs")
    require(class_vecs.shape[0] > 0, "class_vecs has no rows: there is no class to predict")
    return _similarity(image_vecs, "image_vecs", class_vecs, "class_vecs").argmax(dim=1).numpy()


@arguments(train_feats=finite_table, test_feats=finite_table)
def linear_probe_accuracy(
    train_feats: np.ndarray, y_train: np.ndarray, test_feats: np.ndarray, y_test: np.ndarray
) -> float:
    """Accuracy of a logistic regression trained on the features with labels (the probe)."""
    from sklearn.linear_model import LogisticRegression

    y_train, y_test = _probe_labels(train_feats, y_train, test_feats, y_test)
    probe = LogisticRegression(max_iter=2000).fit(train_feats, y_train)
    return float(probe.score(test_feats, y_test))


def _probe_labels(A: np.ndarray, y_train, B: np.ndarray, y_test) -> tuple[np.ndarray, np.ndarray]:
    """The labels of `linear_probe_accuracy`, and the rules between its arguments."""
    require(A.ndim == 2 and B.ndim == 2 and A.shape[1] == B.shape[1],
            f"train_feats and test_feats must be 2-D with equal widths, got {A.shape} and {B.shape}")
    y_train, y_test = integer_table(y_train, "y_train"), integer_table(y_test, "y_test")
    for name, feats, labels in (("train", A, y_train), ("test", B, y_test)):
        require(labels.shape == (feats.shape[0],), f"y_{name} must hold one label per row of {name}_feats "
                f"({feats.shape[0]}), got shape {labels.shape}")
    require(len(B) > 0, "test_feats has no rows: there is nothing to score")
    require(len(np.unique(y_train)) >= 2, "y_train must hold at least two classes for a probe to tell apart, got "
            f"{np.unique(y_train).tolist()}")
    return y_train, y_test


def hit_at_1(
    image_vecs: torch.Tensor, image_labels: np.ndarray, text_vecs: torch.Tensor, text_labels: np.ndarray
) -> tuple[float, float]:
    """hit@1 (top-1 accuracy) both ways: a hit when the top result shows the same digit.

    Returns (image -> text: share of images whose most similar caption names
    their digit, text -> image: share of captions whose most similar image shows
    it). The two directions rank different pools, so they differ. The vectors are tensors (or
    tables) of real, finite numbers, the labels integers (digits).
    """
    (image_vecs, text_vecs), il, tl = (_pair(image_vecs, "image_vecs", text_vecs, "text_vecs"),
                                       integer_table(image_labels, "image_labels"), integer_table(text_labels, "text_labels"))
    require(il.shape == (image_vecs.shape[0],) and tl.shape == (text_vecs.shape[0],) and len(il) and len(tl),
            "image_labels and text_labels need one label per row of their vectors, and hit@1 needs at least one image "
            f"and one caption; got {len(il)} labels for {image_vecs.shape[0]} images and {len(tl)} for "
            f"{text_vecs.shape[0]} captions")
    S = _similarity(image_vecs, "image_vecs", text_vecs, "text_vecs").numpy()  # (N images, M captions)
    return float(np.mean(tl[S.argmax(axis=1)] == il)), float(np.mean(il[S.argmax(axis=0)] == tl))


@dataclass
class DigitsReport:
    """Everything the notebook's results table shows for one training run."""

    zero_shot: float  # zero-shot accuracy on the test images of the evaluated classes
    probe: float  # linear probe on the tower's test vectors (NaN when run with probe=False)
    pixel_probe: float  # linear probe on the raw pixels
    chance: float  # 1 / number of classes
    image_to_text: float  # hit@1, test images against every caption
    text_to_image: float  # hit@1, every caption against the test images
    per_class: np.ndarray  # (10,) zero-shot accuracy per digit
    predictions: np.ndarray = field(repr=False)  # (N_test,) zero-shot label of every test image
    losses: list[float] = field(repr=False, default_factory=list)
    tower: ImageTower | None = field(default=None, repr=False)


@arguments(split=partial(instance, kind=DigitSplit, what="a DigitSplit from load_digit_split()"), held_out=_digits,
           probe=flag)
def run_digits_lit(
    split: DigitSplit,
    caption_emb: torch.Tensor,
    *,
    held_out: Sequence[int] = (),
    steps: int = 300,
    tau: float = 0.1,
    seed: int = 0,
    sampler: str = "random",
    mask_same_digit: bool = False,
    probe: bool = True,
) -> DigitsReport:
    """Train on every digit except ``held_out``, then evaluate on all ten test classes.

    ``sampler="one_per_digit"`` trains on batches of one image per trained digit
    (no false negatives; see `draw_batch`); "random" on batches of 64 images,
    with same-digit captions masked out of the negatives if ``mask_same_digit``.
    ``probe=False`` skips fitting the linear probe on the tower's vectors (``probe`` is then NaN).
    ``split`` comes from `load_digit_split`; ``held_out`` is a list of digits (integers 0..9);
    ``probe`` and ``mask_same_digit`` are True or False; the rest is checked by `train_image_tower`.
    """
    require(len(held_out) < 10, f"held_out must name some (not all) digits 0..9, got {held_out!r}")
    seen = [c for c in range(10) if c not in held_out]
    tower, losses = train_image_tower(split.X_train, split.y_train, caption_emb, classes=seen, steps=steps,
                                      tau=tau, seed=seed, sampler=sampler, mask_same_digit=mask_same_digit)
    test_vecs, train_vecs = embed_images(tower, split.X_test), embed_images(tower, split.X_train)
    pred = zero_shot_predict(test_vecs, class_text_vectors(caption_emb))
    per_class = np.array([np.mean(pred[split.y_test == c] == c) for c in range(10)])
    n_phrasings = caption_emb.shape[1]
    text_vecs = caption_emb.reshape(-1, caption_emb.shape[2])
    text_labels = np.repeat(np.arange(10), n_phrasings)
    i2t, t2i = hit_at_1(test_vecs, split.y_test, text_vecs, text_labels)
    return DigitsReport(
        zero_shot=float(np.mean(pred == split.y_test)),
        probe=(linear_probe_accuracy(train_vecs.numpy(), split.y_train, test_vecs.numpy(), split.y_test)
               if probe else float("nan")),
        pixel_probe=split.pixel_probe,
        chance=0.1,
        image_to_text=i2t,
        text_to_image=t2i,
        per_class=per_class,
        predictions=pred,
        losses=losses,
        tower=tower,
    )
