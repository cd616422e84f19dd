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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import torch
from torch import nn

from labs.lessons.clip_batches import SAMPLERS, draw_batch
from labs.lessons.infonce import temperature_divisor, unit_rows, info_nce_torch
from labs.lessons.inputs import (
    finite_array, one_bool, real_number, real_tensor, text_list, valid_tau, whole_array, whole_number,
)

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
    if isinstance(templates, str):
        raise ValueError("templates must be a non-empty sequence of strings with {word} or {digit}, not one "
                         f"string; wrap it: [{templates!r:.40}]")
    if templates is None or not isinstance(templates, Iterable):
        raise ValueError(f"templates must be a non-empty sequence of strings with {{word}} or {{digit}}, "
                         f"got {templates!r:.40}")
    templates = text_list(templates, "templates")
    if not templates:
        raise ValueError("templates must be a non-empty sequence of strings with {word} or {digit}")
    for i, t in enumerate(templates):
        try:
            filled = {t.format(word=w, digit=d) for d, w in enumerate(DIGIT_WORDS)}
        except (KeyError, IndexError, ValueError, AttributeError) as err:
            raise ValueError(f"templates[{i}] = {t!r:.60} is not a template with only {{word}} and {{digit}}: "
                             f"{type(err).__name__} {err}") from None
        if len(filled) < len(DIGIT_WORDS):
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

    size = real_number(test_size, "test_size", "a number between 0 and 1")
    if not 0.0 < size < 1.0:
        raise ValueError(f"test_size must be between 0 and 1, got {test_size!r}")
    seed = whole_number(seed, "seed", 0)
    if seed >= 2**32:
        raise ValueError(f"seed must be an integer from 0 to 2**32 - 1 (scikit-learn's random_state), got {seed}")
    X, y = load_digits(return_X_y=True)
    n_test = math.ceil(size * len(y))  # scikit-learn's rounding of a fractional test_size
    if min(n_test, len(y) - n_test) < len(DIGIT_WORDS):
        raise ValueError(f"test_size={test_size!r} leaves {n_test} test and {len(y) - n_test} training images: a "
                         f"split by class needs at least {len(DIGIT_WORDS)} (one per digit) on each side")
    X = (X / 16.0).astype(np.float32)  # the pixels hold 0..16
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=size, stratify=y, random_state=seed)
    return DigitSplit(Xtr, ytr.astype(np.int64), Xte, yte.astype(np.int64))


def embed_captions(captions: Sequence[Sequence[str]], model) -> torch.Tensor:
    """Embed every caption once with the frozen text tower: (10, K, D) unit vectors, no gradient.

    ``model`` is a SentenceTransformer (the lesson uses the packaged all-MiniLM-L6-v2,
    `labs.retrieval.models.load_minilm`).
    """
    if isinstance(captions, (str, bytes)) or not isinstance(captions, Iterable):
        raise ValueError(f"captions must be 10 lists of strings (digit_captions()), got {captions!r:.40}")
    captions = list(captions)
    if len(captions) != len(DIGIT_WORDS):
        raise ValueError(f"captions must hold one list per digit (10), got {len(captions)}")
    if any(isinstance(c, (str, bytes)) or not isinstance(c, Iterable) for c in captions):
        raise ValueError("captions must be 10 lists of strings, all of the same non-zero length")
    captions = [text_list(c, f"captions[{d}]") for d, c in enumerate(captions)]
    sizes = {len(c) for c in captions}
    if len(sizes) != 1 or 0 in sizes:
        raise ValueError("captions must be 10 lists of strings, all of the same non-zero length")
    if not callable(getattr(model, "encode", None)):
        raise ValueError(f"model must be a SentenceTransformer (labs.retrieval.models.load_minilm()), "
                         f"got {type(model).__name__}")
    flat = [c for per_digit in captions for c in per_digit]
    with torch.no_grad():
        vecs = model.encode(flat, convert_to_tensor=True, normalize_embeddings=True, show_progress_bar=False)
    return vecs.detach().float().cpu().reshape(len(captions), sizes.pop(), -1)


def class_text_vectors(caption_emb: torch.Tensor) -> torch.Tensor:
    """One unit vector per digit: the normalized mean of its phrasings, (10, K, D) -> (10, D).

    float16 and bfloat16 phrasings are averaged in float32 (their sum could overflow), and the
    result is returned in their dtype. A digit whose phrasings average to zero has no direction
    and is refused; a tiny mean keeps its direction (see `_unit`).
    """
    _check_caption_emb(caption_emb)
    low = caption_emb.dtype in (torch.float16, torch.bfloat16)
    mean = (caption_emb.float() if low else caption_emb).mean(dim=1)
    return _unit(mean, "caption_emb's mean phrasing of digit").to(caption_emb.dtype)


def _check_caption_emb(caption_emb: torch.Tensor) -> None:
    if not isinstance(caption_emb, torch.Tensor) or caption_emb.ndim != 3 or caption_emb.shape[0] != 10:
        shape = tuple(caption_emb.shape) if isinstance(caption_emb, torch.Tensor) else type(caption_emb).__name__
        raise ValueError(f"caption_emb must be a (10, K, D) tensor from embed_captions, got {shape}")
    if caption_emb.shape[1] == 0 or caption_emb.shape[2] == 0:
        raise ValueError(f"caption_emb must hold K >= 1 phrasings of D >= 1 numbers, got {tuple(caption_emb.shape)}")
    if not caption_emb.is_floating_point():
        what = "complex numbers" if caption_emb.dtype.is_complex else f"dtype {caption_emb.dtype}"
        raise ValueError(f"caption_emb must hold real floating-point numbers, got {what}")
    if not bool(torch.isfinite(caption_emb.detach()).all()):
        raise ValueError("caption_emb contains NaN or infinite entries")


_SMALL = 1e-10  # rows shorter than this go the careful way: F.normalize clamps lengths below 1e-12


def _unit(x: torch.Tensor, name: str) -> torch.Tensor:
    """Rows of ``x`` (n, D) at unit length: ``F.normalize``, bit for bit, where a row's length is
    comfortably representable; a tiny row (which F.normalize would clamp, leaving it short of
    unit length) or a huge one (whose squared length overflows) is first divided by its largest
    entry, so it keeps its direction. A row of zeros has none and is refused, naming ``name``."""
    with torch.no_grad():
        largest = x.detach().abs().amax(dim=-1)
        norms = torch.linalg.vector_norm(x.detach(), dim=-1)
    zero = torch.nonzero(largest == 0)
    if len(zero):
        raise ValueError(f"{name} {int(zero[0, 0])} is all zeros: it has no direction to scale to length 1")
    risky = ~((norms > _SMALL) & torch.isfinite(norms))
    if not bool(risky.any()):
        return nn.functional.normalize(x, dim=-1)
    plain = nn.functional.normalize(torch.where(risky[:, None], torch.ones_like(x), x), dim=-1)
    return torch.where(risky[:, None], unit_rows(x), plain)


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
    image is no longer counted as its negative (no false-negative floor). A batch
    whose rows all show one digit then has no negative left, and its loss is 0.

    The vectors must be real, finite tensors (or tables) of one dtype and device, with no row of
    zeros; every row is scaled to length 1 whatever its size, so a row and its unit direction
    give the same loss. ``labels`` are integers (digits). ``tau`` is a finite number > 0, or a
    one-number tensor that requires grad (a learned temperature), as in `info_nce_torch`; a tau
    so small that the scores overflow is refused.
    """
    _, divisor = temperature_divisor(tau)
    image_vecs, text_vecs = _vectors(image_vecs, "image_vecs"), _vectors(text_vecs, "text_vecs")
    if image_vecs.shape != text_vecs.shape:
        raise ValueError(
            f"image_vecs and text_vecs must have the same (B, D) shape, got "
            f"{tuple(image_vecs.shape)} and {tuple(text_vecs.shape)}"
        )
    if image_vecs.shape[0] == 0 or image_vecs.shape[1] == 0:
        raise ValueError(f"image_vecs and text_vecs need at least one row and one column, got {tuple(image_vecs.shape)}")
    if image_vecs.dtype != text_vecs.dtype or image_vecs.device != text_vecs.device:
        raise ValueError(f"image_vecs and text_vecs must share dtype and device, got {image_vecs.dtype} on "
                         f"{image_vecs.device} and {text_vecs.dtype} on {text_vecs.device}")
    if isinstance(divisor, torch.Tensor) and divisor.device != image_vecs.device:
        raise ValueError(f"tau is on {divisor.device} but image_vecs is on {image_vecs.device}")
    for name, x in (("image_vecs", image_vecs), ("text_vecs", text_vecs)):
        zero = torch.nonzero(x.detach().abs().amax(dim=1) == 0)
        if len(zero):
            raise ValueError(f"{name} row {int(zero[0, 0])} is all zeros: it has no direction to normalise")
    if labels is not None:
        labels = whole_array(labels, "labels")
        if labels.shape != (image_vecs.shape[0],):
            raise ValueError(f"labels must hold one digit per row ({image_vecs.shape[0]}), got {tuple(labels.shape)}")
        labels = torch.from_numpy(labels).to(image_vecs.device)
    return _symmetric_loss(image_vecs, text_vecs, tau, labels)


def _symmetric_loss(image_vecs: torch.Tensor, text_vecs: torch.Tensor, tau, labels: torch.Tensor | None) -> torch.Tensor:
    """`symmetric_loss_torch` on checked arguments (training calls this every step)."""
    if labels is None:
        return 0.5 * info_nce_torch(image_vecs, text_vecs, tau) + 0.5 * info_nce_torch(text_vecs, image_vecs, tau)
    value, divisor = temperature_divisor(tau)
    logits = _unit(image_vecs, "image_vecs row") @ _unit(text_vecs, "text_vecs row").T / divisor
    if not bool(torch.isfinite(logits.detach()).all()):
        raise ValueError(f"tau={value!r} is too small for these scores: scores / tau overflows {logits.dtype}")
    same = (labels[:, None] == labels[None, :]) & ~torch.eye(len(labels), dtype=torch.bool, device=labels.device)
    logits = logits.masked_fill(same, float("-inf"))
    target = torch.arange(len(labels), device=labels.device)
    return 0.5 * nn.functional.cross_entropy(logits, target) + 0.5 * nn.functional.cross_entropy(logits.T, target)


def _vectors(value, name: str) -> torch.Tensor:
    """A 2-D tensor of real, finite numbers (see `real_tensor`), or ValueError naming ``name``."""
    x = real_tensor(value, name)
    if x.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows x dim), got shape {tuple(x.shape)}")
    if not bool(torch.isfinite(x.detach()).all()):
        raise ValueError(f"{name} contains NaN or infinite entries")
    return x


def _as_tensor(X: np.ndarray | torch.Tensor, name: str) -> torch.Tensor:
    with np.errstate(over="ignore"):
        X = torch.as_tensor(finite_array(X, name).astype(np.float32))
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array (images x pixels), got shape {tuple(X.shape)}")
    if X.shape[1] == 0:
        raise ValueError(f"{name} has no pixels (shape {tuple(X.shape)})")
    if not bool(torch.isfinite(X).all()):
        raise ValueError(f"{name} holds values too large for float32 (they overflow to infinity)")
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

    ``X`` holds real, finite pixels (N, P), ``y`` integer digits (N,), ``caption_emb`` the frozen
    (10, K, D) caption vectors (a tensor that requires grad is refused: nothing here would train
    it); ``classes`` are digits 0..9; ``lr`` a finite number > 0; ``seed`` an integer >= 0;
    ``mask_same_digit`` True or False (and needs two or more classes, or no negative is left).
    """
    tau = valid_tau(tau)
    _check_caption_emb(caption_emb)
    if caption_emb.requires_grad:
        raise ValueError("caption_emb requires grad, but the text tower is frozen here: only the image tower "
                         "trains. Pass caption_emb.detach()")
    Xt = _as_tensor(X, "X")
    y = whole_array(y, "y")
    if y.shape != (Xt.shape[0],):
        raise ValueError(f"y must hold one label per image ({Xt.shape[0]}), got shape {y.shape}")
    if not isinstance(sampler, str) or sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
    if sampler == "random" and batch is None:
        batch = 64
    steps, hidden = whole_number(steps, "steps", 0), whole_number(hidden, "hidden", 1)
    if sampler == "random":
        batch = whole_number(batch, "batch", 2)
    elif batch is not None:
        batch = whole_number(batch, "batch", 1)
    rate = real_number(lr, "lr", "a finite number > 0")
    if not (math.isfinite(rate) and rate > 0):
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    seed = _seed(seed)
    mask_same_digit = one_bool(mask_same_digit, "mask_same_digit")
    keep_classes = list(range(10)) if classes is None else _digit_set(classes, "classes")
    if not keep_classes:
        raise ValueError(f"classes must be a non-empty subset of 0..9, got {classes!r}")
    if mask_same_digit and len(keep_classes) < 2:
        raise ValueError(f"mask_same_digit=True needs two or more classes: with only {keep_classes}, every "
                         "caption in a batch shows the row's own digit, so none is left as a negative (loss 0)")
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
    tower = ImageTower(out_dim=caption_emb.shape[2], hidden=hidden, in_dim=Xt.shape[1])
    opt = torch.optim.Adam(tower.parameters(), lr=rate)
    caption_emb = caption_emb.float()  # the tower's dtype (no copy when it is float32 already)
    n_phrasings = caption_emb.shape[1]
    losses = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # matrices this small gain nothing from more threads, and one thread is reproducible
    try:
        for _ in range(steps):
            idx = draw_batch(yt.numpy(), batch, sampler, gen)
            phrasing = torch.randint(n_phrasings, (len(idx),), generator=gen)
            text = caption_emb[yt[idx], phrasing]  # (batch, D), frozen
            image = tower(Xt[idx])
            if not bool(torch.isfinite(image.detach()).all()):
                raise ValueError(f"training diverged at step {len(losses)}: the image tower's vectors are no "
                                 f"longer finite (is lr={lr!r} too large?)")
            loss = _symmetric_loss(image, text, tau, yt[idx] if mask_same_digit else None)
            opt.zero_grad()
            loss.backward()
            try:
                opt.step()
            except RuntimeError as err:
                if "overflow" not in str(err):
                    raise
                raise ValueError(f"lr={lr!r} is too large for the float32 tower: the step overflows") from None
            losses.append(loss.item())
    finally:
        torch.set_num_threads(threads)
    return tower.eval(), losses


def _seed(seed) -> int:
    seed = whole_number(seed, "seed", 0)
    if seed >= 2**64:
        raise ValueError(f"seed must be an integer from 0 to 2**64 - 1 (torch's seeds), got {seed}")
    return seed


def _digit_set(value, name: str) -> list[int]:
    """Sorted distinct digits 0..9 from a list of integers, or ValueError naming ``name``: one string
    (read letter by letter), floats such as 1.5 (int() would make it 1) and booleans are refused."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ValueError(f"{name} must be a list of digits 0..9, got {value!r:.40}")
    digits = set()
    for c in value:
        c = whole_number(c, f"{name} entry")
        if not 0 <= c <= 9:
            raise ValueError(f"{name} must be digits 0..9, got {c}")
        digits.add(c)
    return sorted(digits)


def embed_images(tower: ImageTower, X: np.ndarray) -> torch.Tensor:
    """Unit image vectors (N, D) from a trained tower, without gradients.

    ``X`` must hold real, finite pixels, as many per image as the tower reads."""
    if not isinstance(tower, ImageTower):
        raise ValueError(f"tower must be an ImageTower (from train_image_tower), got {type(tower).__name__}")
    Xt = _as_tensor(X, "X")
    if Xt.shape[1] != tower.net[0].in_features:
        raise ValueError(f"X has {Xt.shape[1]} pixels per image, but the tower reads {tower.net[0].in_features}")
    with torch.no_grad():
        return _unit(tower(Xt), "the tower's vector of image")


def zero_shot_predict(image_vecs: torch.Tensor, class_vecs: torch.Tensor) -> np.ndarray:
    """Label each image by its most similar class caption vector: (N, D), (C, D) -> (N,).

    Tensors (or tables) of real, finite numbers; two float dtypes are compared in the wider one.
    A similarity that overflows is refused rather than ranked."""
    image_vecs, class_vecs = _pair(image_vecs, "image_vecs", class_vecs, "class_vecs")
    if class_vecs.shape[0] == 0:
        raise ValueError("class_vecs has no rows: there is no class to predict")
    return _similarity(image_vecs, "image_vecs", class_vecs, "class_vecs").argmax(dim=1).numpy()


def _pair(a, a_name: str, b, b_name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Two 2-D tables of real, finite numbers that share D, as tensors of one dtype, without gradients."""
    a, b = _vectors(a, a_name).detach(), _vectors(b, b_name).detach()
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"{a_name} (N, D) and {b_name} (C, D) must share D, got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.device != b.device:
        raise ValueError(f"{a_name} is on {a.device} but {b_name} is on {b.device}")
    if a.dtype != b.dtype:
        wide = torch.promote_types(a.dtype, b.dtype)
        a, b = a.to(wide), b.to(wide)
    return a, b


def _similarity(a: torch.Tensor, a_name: str, b: torch.Tensor, b_name: str) -> torch.Tensor:
    S = a @ b.T
    if not bool(torch.isfinite(S).all()):
        raise ValueError(f"{a_name} @ {b_name}.T overflows {S.dtype}: scale the vectors down (unit rows)")
    return S.cpu()


def linear_probe_accuracy(
    train_feats: np.ndarray, y_train: np.ndarray, test_feats: np.ndarray, y_test: np.ndarray
) -> float:
    """Accuracy of a logistic regression trained on the features with labels (the probe)."""
    from sklearn.linear_model import LogisticRegression

    A, B = finite_array(train_feats, "train_feats"), finite_array(test_feats, "test_feats")
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise ValueError(f"train_feats and test_feats must be 2-D with equal widths, got {A.shape} and {B.shape}")
    y_train, y_test = whole_array(y_train, "y_train"), whole_array(y_test, "y_test")
    for name, feats, labels in (("train", A, y_train), ("test", B, y_test)):
        if labels.shape != (feats.shape[0],):
            raise ValueError(f"y_{name} must hold one label per row of {name}_feats ({feats.shape[0]}), "
                             f"got shape {labels.shape}")
    if len(B) == 0:
        raise ValueError("test_feats has no rows: there is nothing to score")
    if len(np.unique(y_train)) < 2:
        raise ValueError(f"y_train must hold at least two classes for a probe to tell apart, got {np.unique(y_train).tolist()}")
    probe = LogisticRegression(max_iter=2000).fit(A, y_train)
    return float(probe.score(B, y_test))


def hit_at_1(
    image_vecs: torch.Tensor, image_labels: np.ndarray, text_vecs: torch.Tensor, text_labels: np.ndarray
) -> tuple[float, float]:
    """hit@1 (top-1 accuracy) both ways: a hit when the top result shows the same digit.

    Returns (image -> text: share of images whose most similar caption names
    their digit, text -> image: share of captions whose most similar image shows
    it). The two directions rank different pools, so they differ. The vectors are tensors (or
    tables) of real, finite numbers, the labels integers (digits).
    """
    image_vecs, text_vecs = _pair(image_vecs, "image_vecs", text_vecs, "text_vecs")
    il, tl = whole_array(image_labels, "image_labels"), whole_array(text_labels, "text_labels")
    if il.shape != (image_vecs.shape[0],) or tl.shape != (text_vecs.shape[0],):
        raise ValueError("image_labels and text_labels need one label per row of their vectors")
    if len(il) == 0 or len(tl) == 0:
        raise ValueError(f"hit@1 needs at least one image and one caption, got {len(il)} and {len(tl)}")
    S = _similarity(image_vecs, "image_vecs", text_vecs, "text_vecs").numpy()  # (N images, M captions)
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
    ``split`` comes from `load_digit_split`; ``held_out`` is a list of digits (integers 0..9);
    ``probe`` and ``mask_same_digit`` are True or False; the rest is checked by `train_image_tower`.
    """
    if not isinstance(split, DigitSplit):
        raise ValueError(f"split must be a DigitSplit from load_digit_split(), got {type(split).__name__}")
    held = _digit_set(held_out, "held_out")
    if len(held) >= 10:
        raise ValueError(f"held_out must name some (not all) digits 0..9, got {held_out!r}")
    probe = one_bool(probe, "probe")
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
