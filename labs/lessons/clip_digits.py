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

Lesson: ``notebooks/08_clip.ipynb`` (the toy version lives in `labs.lessons.clip`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import torch
from torch import nn

from labs.lessons.clip_batches import SAMPLERS, draw_batch
from labs.lessons.infonce import info_nce_torch
from labs.lessons.inputs import valid_tau

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
    """Ten lists of captions, list d holding every phrasing for digit d."""
    if isinstance(templates, str) or len(templates) == 0:
        raise ValueError("templates must be a non-empty sequence of strings with {word} or {digit}")
    for t in templates:
        if not isinstance(t, str) or ("{word}" not in t and "{digit}" not in t):
            raise ValueError(f"templates: {t!r} names neither {{word}} nor {{digit}}, so it cannot tell digits apart")
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


def load_digit_split(*, test_size: float = 0.3, seed: int = 0) -> DigitSplit:
    """Load the 1,797 digits shipped with scikit-learn (no download) and split them by class."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if not 0.0 < float(test_size) < 1.0:
        raise ValueError(f"test_size must be between 0 and 1, got {test_size!r}")
    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)  # the pixels hold 0..16
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=test_size, stratify=y, random_state=seed)
    return DigitSplit(Xtr, ytr.astype(np.int64), Xte, yte.astype(np.int64))


def embed_captions(captions: Sequence[Sequence[str]], model) -> torch.Tensor:
    """Embed every caption once with the frozen text tower: (10, K, D) unit vectors, no gradient.

    ``model`` is a SentenceTransformer (the lesson uses the packaged all-MiniLM-L6-v2,
    `labs.retrieval.models.load_minilm`).
    """
    if len(captions) != len(DIGIT_WORDS):
        raise ValueError(f"captions must hold one list per digit (10), got {len(captions)}")
    sizes = {len(c) for c in captions}
    if len(sizes) != 1 or 0 in sizes or any(isinstance(c, str) for c in captions):
        raise ValueError("captions must be 10 lists of strings, all of the same non-zero length")
    flat = [c for per_digit in captions for c in per_digit]
    with torch.no_grad():
        vecs = model.encode(flat, convert_to_tensor=True, normalize_embeddings=True, show_progress_bar=False)
    return vecs.detach().float().cpu().reshape(len(captions), sizes.pop(), -1)


def class_text_vectors(caption_emb: torch.Tensor) -> torch.Tensor:
    """One unit vector per digit: the normalized mean of its phrasings, (10, K, D) -> (10, D)."""
    _check_caption_emb(caption_emb)
    return nn.functional.normalize(caption_emb.mean(dim=1), dim=-1)


def _check_caption_emb(caption_emb: torch.Tensor) -> None:
    if not isinstance(caption_emb, torch.Tensor) or caption_emb.ndim != 3 or caption_emb.shape[0] != 10:
        shape = tuple(caption_emb.shape) if isinstance(caption_emb, torch.Tensor) else type(caption_emb).__name__
        raise ValueError(f"caption_emb must be a (10, K, D) tensor from embed_captions, got {shape}")


class ImageTower(nn.Module):
    """The trainable image encoder: 64 pixels -> hidden (ReLU) -> D, the text tower's size."""

    def __init__(self, out_dim: int = 384, hidden: int = 256, in_dim: int = 64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, out_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def symmetric_loss_torch(
    image_vecs: torch.Tensor, text_vecs: torch.Tensor, tau: float, labels: torch.Tensor | None = None
) -> torch.Tensor:
    """CLIP loss on (B, D) and (B, D): half images-pick-captions plus half captions-pick-images.

    With ``labels`` (B,), every off-diagonal cell whose row and column show the
    same digit is left out of both softmaxes: a caption that is right for an
    image is no longer counted as its negative (no false-negative floor).
    """
    if image_vecs.shape != text_vecs.shape:
        raise ValueError(
            f"image_vecs and text_vecs must have the same (B, D) shape, got "
            f"{tuple(image_vecs.shape)} and {tuple(text_vecs.shape)}"
        )
    if labels is None:
        return 0.5 * info_nce_torch(image_vecs, text_vecs, tau) + 0.5 * info_nce_torch(text_vecs, image_vecs, tau)
    tau = valid_tau(tau)
    labels = torch.as_tensor(labels)
    if labels.shape != (image_vecs.shape[0],):
        raise ValueError(f"labels must hold one digit per row ({image_vecs.shape[0]}), got {tuple(labels.shape)}")
    logits = nn.functional.normalize(image_vecs, dim=-1) @ nn.functional.normalize(text_vecs, dim=-1).T / tau
    same = (labels[:, None] == labels[None, :]) & ~torch.eye(len(labels), dtype=torch.bool)
    logits = logits.masked_fill(same, float("-inf"))
    target = torch.arange(len(labels))
    return 0.5 * nn.functional.cross_entropy(logits, target) + 0.5 * nn.functional.cross_entropy(logits.T, target)


def _as_tensor(X: np.ndarray | torch.Tensor, name: str) -> torch.Tensor:
    X = torch.as_tensor(np.asarray(X, dtype=np.float32))
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array (images x pixels), got shape {tuple(X.shape)}")
    return X


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
    """
    tau = valid_tau(tau)
    _check_caption_emb(caption_emb)
    Xt = _as_tensor(X, "X")
    y = np.asarray(y)
    if y.shape != (Xt.shape[0],):
        raise ValueError(f"y must hold one label per image ({Xt.shape[0]}), got shape {y.shape}")
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
    if sampler == "random" and batch is None:
        batch = 64
    for name, value, low in (("steps", steps, 0), ("hidden", hidden, 1)) + (
        (("batch", batch, 2),) if sampler == "random" else ()
    ):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    keep_classes = list(range(10)) if classes is None else sorted({int(c) for c in classes})
    if not keep_classes or not set(keep_classes) <= set(range(10)):
        raise ValueError(f"classes must be a non-empty subset of 0..9, got {classes!r}")
    keep = np.isin(y, keep_classes)
    Xt, yt = Xt[torch.as_tensor(keep)], torch.as_tensor(y[keep], dtype=torch.long)
    if sampler == "random" and len(yt) < batch:
        raise ValueError(f"only {len(yt)} training images of classes {keep_classes}, fewer than batch={batch}")
    missing = sorted(set(keep_classes) - set(yt.tolist()))
    if sampler == "one_per_digit" and (missing or batch not in (None, len(keep_classes))):
        raise ValueError(f"one_per_digit batches hold one image per trained digit ({len(keep_classes)}); "
                         f"got batch={batch!r}, digits without images: {missing}")

    torch.manual_seed(seed)  # the tower's initial weights
    gen = torch.Generator().manual_seed(seed)  # the batches and phrasings
    tower = ImageTower(out_dim=caption_emb.shape[2], hidden=hidden)
    opt = torch.optim.Adam(tower.parameters(), lr=lr)
    n_phrasings = caption_emb.shape[1]
    losses = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # matrices this small gain nothing from more threads, and one thread is reproducible
    try:
        for _ in range(steps):
            idx = draw_batch(yt.numpy(), batch, sampler, gen)
            phrasing = torch.randint(n_phrasings, (len(idx),), generator=gen)
            text = caption_emb[yt[idx], phrasing]  # (batch, D), frozen
            loss = symmetric_loss_torch(tower(Xt[idx]), text, tau, yt[idx] if mask_same_digit else None)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    finally:
        torch.set_num_threads(threads)
    return tower.eval(), losses


def embed_images(tower: ImageTower, X: np.ndarray) -> torch.Tensor:
    """Unit image vectors (N, D) from a trained tower, without gradients."""
    with torch.no_grad():
        return nn.functional.normalize(tower(_as_tensor(X, "X")), dim=-1)


def zero_shot_predict(image_vecs: torch.Tensor, class_vecs: torch.Tensor) -> np.ndarray:
    """Label each image by its most similar class caption vector: (N, D), (C, D) -> (N,)."""
    if image_vecs.ndim != 2 or class_vecs.ndim != 2 or image_vecs.shape[1] != class_vecs.shape[1]:
        raise ValueError(
            f"image_vecs (N, D) and class_vecs (C, D) must share D, got "
            f"{tuple(image_vecs.shape)} and {tuple(class_vecs.shape)}"
        )
    return (image_vecs @ class_vecs.T).argmax(dim=1).numpy()


def linear_probe_accuracy(
    train_feats: np.ndarray, y_train: np.ndarray, test_feats: np.ndarray, y_test: np.ndarray
) -> float:
    """Accuracy of a logistic regression trained on the features with labels (the probe)."""
    from sklearn.linear_model import LogisticRegression

    A, B = np.asarray(train_feats, dtype=np.float64), np.asarray(test_feats, dtype=np.float64)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise ValueError(f"train_feats and test_feats must be 2-D with equal widths, got {A.shape} and {B.shape}")
    probe = LogisticRegression(max_iter=2000).fit(A, np.asarray(y_train))
    return float(probe.score(B, np.asarray(y_test)))


def hit_at_1(
    image_vecs: torch.Tensor, image_labels: np.ndarray, text_vecs: torch.Tensor, text_labels: np.ndarray
) -> tuple[float, float]:
    """hit@1 (top-1 accuracy) both ways: a hit when the top result shows the same digit.

    Returns (image -> text: share of images whose most similar caption names
    their digit, text -> image: share of captions whose most similar image shows
    it). The two directions rank different pools, so they differ.
    """
    il, tl = np.asarray(image_labels), np.asarray(text_labels)
    if image_vecs.ndim != 2 or text_vecs.ndim != 2 or image_vecs.shape[1] != text_vecs.shape[1]:
        raise ValueError("image_vecs (N, D) and text_vecs (M, D) must be 2-D and share D")
    if il.shape != (image_vecs.shape[0],) or tl.shape != (text_vecs.shape[0],):
        raise ValueError("image_labels and text_labels need one label per row of their vectors")
    S = (image_vecs @ text_vecs.T).numpy()  # (N images, M captions)
    image_to_text = float(np.mean(tl[S.argmax(axis=1)] == il))
    text_to_image = float(np.mean(il[S.argmax(axis=0)] == tl))
    return image_to_text, text_to_image


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
    """
    held = sorted({int(c) for c in held_out})
    if not set(held) <= set(range(10)) or len(held) >= 10:
        raise ValueError(f"held_out must name some (not all) digits 0..9, got {held_out!r}")
    seen = [c for c in range(10) if c not in held]
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
