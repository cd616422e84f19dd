"""Beyond one vector: a cross-encoder trained here, and retrieve-then-rerank.

In plain terms: a bi-encoder turns the question and each passage into one
vector *separately* and compares them by cosine, so a single "not" barely
moves a passage's vector. A cross-encoder reads question and passage as one
input and outputs one relevance score; it can relate "have to" to "must not",
but it must run once per (question, passage) pair. The usual pipeline lets the
bi-encoder fetch a shortlist of ``k`` passages (fast, precomputed vectors) and
the cross-encoder reorder that shortlist. A reranker only reorders: a passage
the shortlist missed stays missed.

Data
----
`RULES_TRAIN` and `RULES_HELD_OUT` are (group, action) rules; the templates fill
them into questions ("Do {g} have to {a}?") and passages that say yes ("{G}
must {a}.") or no ("{G} must not {a}."). `labelled_pairs` makes (question,
passage, label) rows: the rule (1), its negations (0), another group's rule
stated as a yes (0). The helmet rule is held out from training.

Shapes
------
==========  ===========  ===============================================
name        shape        meaning
==========  ===========  ===============================================
query_vec   (D,)         one question's unit vector
doc_vecs    (N, D)       the collection's unit vectors
shortlist   list[int]    the top ``k`` rows of doc_vecs, best first
scores      (k,)         the cross-encoder's score per shortlisted passage
==========  ===========  ===============================================

Relations: `train_cross_encoder` is sentence-transformers' ``CrossEncoder`` on
the packaged all-MiniLM-L6-v2 with a new one-number head and
``BinaryCrossEntropyLoss``, whose value `binary_cross_entropy` computes by hand;
`shortlist` equals ``torch.topk`` on the cosines, with ties broken by the lower
index. Lesson: ``notebooks/10_beyond_one_vector.ipynb``.

Every public function checks its arguments at its top and names the bad one in a ValueError:
templates and texts are strings (a list of them, not one string read letter by letter), a rule is
a (group, action) pair of non-empty strings, labels are 0 or 1 (not True or False), vectors and
scores real, finite numbers, and counts integers (NumPy's too).
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import torch

from labs.checks import (
    MOST, arguments, finite_table, function, integer, items, positive, random_seed, require, still_finite, table, template,
    tensor, texts,
)
from labs.lessons.temperature import optimizer_step


if TYPE_CHECKING:  # imported lazily: sentence-transformers is slow to import
    from sentence_transformers import CrossEncoder

__all__ = [
    "HELMET_PASSAGES",
    "HELMET_QUESTIONS",
    "RULES_TRAIN",
    "RULES_HELD_OUT",
    "Q_SEEN",
    "Q_NEW",
    "YES_SEEN",
    "NO_SEEN",
    "YES_NEW",
    "NO_NEW",
    "fill_rule",
    "labelled_pairs",
    "test_triples",
    "collection",
    "train_cross_encoder",
    "shortlist",
    "rerank",
    "retrieve_then_rerank",
    "binary_cross_entropy",
]

#: The negation lab: a rule, its negation, and a paraphrase with no shared words.
HELMET_PASSAGES = [
    "Riders under 16 must wear a helmet.",
    "Riders under 16 must not wear a helmet.",
    "Children on bikes have to put on head protection.",
]
#: The first question's answer is the rule; the second turns the meaning around.
HELMET_QUESTIONS = [
    "Do 15-year-olds have to wear a helmet?",
    "Do riders under 16 have to take their helmet off?",
]

RULES_TRAIN = [
    ("visitors", "show an ID at the gate"), ("passengers", "fasten a seatbelt"),
    ("employees", "wear a badge"), ("students", "bring a calculator"),
    ("drivers", "carry a licence"), ("guests", "check out by noon"),
    ("players", "wear shin guards"), ("hikers", "carry a map"),
    ("swimmers", "wear a cap"), ("tenants", "pay a deposit"),
]
RULES_HELD_OUT = [
    ("riders under 16", "wear a helmet"), ("cooks", "wear gloves"),
    ("pilots", "file a flight plan"), ("members", "renew the card every year"),
]
Q_SEEN = ["Do {g} have to {a}?", "Must {g} {a}?", "Is it required for {g} to {a}?"]
Q_NEW = ["Are {g} obliged to {a}?"]
YES_SEEN = ["{G} must {a}.", "{G} are required to {a}.", "All {g} need to {a}."]
NO_SEEN = ["{G} must not {a}.", "{G} are not required to {a}.", "{G} do not need to {a}."]
YES_NEW = ["{G} always have to {a}."]
NO_NEW = ["{G} never have to {a}."]


_FIELDS = "{g}, {G} and {a}"


def _rule(rule, name: str = "rule") -> tuple[str, str]:
    """A (group, action) pair of non-empty strings."""
    rule = tuple(items(rule, name, "a (group, action) pair of strings"))
    require(len(rule) == 2 and all(isinstance(part, str) and part for part in rule),
            f"{name} must be a (group, action) pair of non-empty strings, got {rule!r:.60}")
    return rule


def _rules(rules, name: str) -> list[tuple[str, str]]:
    """At least two rules (each rule's off-topic passage is the next rule's)."""
    rules = [_rule(r, f"{name}[{i}]") for i, r in enumerate(items(rules, name, "a list of (group, action) pairs"))]
    require(len(rules) >= 2, f"rules: need at least two rules (one is the other's off-topic passage), got {len(rules)}")
    return rules


def _templates(templates, name: str) -> list[str]:
    """A non-empty list of templates with only {g}, {G} and {a} (each is tried on a placeholder rule)."""
    templates = texts(templates, name, nonempty=True)
    for i, t in enumerate(templates):
        template(t, f"{name}[{i}]", _FIELDS, g="group", G="Group", a="action")
    return templates


def fill_rule(template: str, rule: tuple[str, str]) -> str:
    """Put a (group, action) rule into a template with {g}, {G} (capitalised) and {a}."""
    require(isinstance(template, str), f"template must be a string with {{g}}, {{G}} or {{a}}, got {template!r:.60}")
    return _fill(template, _rule(rule))


def _fill(text: str, rule: tuple[str, str], name: str = "template") -> str:
    group, action = rule
    return template(text, name, _FIELDS, g=group, G=group[0].upper() + group[1:], a=action)


@arguments(rules=_rules, q_templates=_templates, yes_templates=_templates, no_templates=_templates)
def labelled_pairs(rules: Sequence[tuple[str, str]], q_templates: Sequence[str],
                   yes_templates: Sequence[str], no_templates: Sequence[str]) -> list[tuple[str, str, int]]:
    """(question, passage, label) rows: each yes passage (1), each negation (0), and the
    next rule's first yes passage (0), for every rule and question template."""
    rows = []
    for i, rule in enumerate(rules):
        other = rules[(i + 1) % len(rules)]
        for qt in q_templates:
            q = _fill(qt, rule)
            rows += [(q, _fill(t, rule), 1) for t in yes_templates]
            rows += [(q, _fill(t, rule), 0) for t in no_templates]
            rows.append((q, _fill(yes_templates[0], other), 0))
    return rows


@arguments(rules=_rules, q_templates=_templates, yes_templates=_templates, no_templates=_templates)
def test_triples(rules: Sequence[tuple[str, str]], q_templates: Sequence[str],
                 yes_templates: Sequence[str], no_templates: Sequence[str]) -> list[tuple[str, str, str, str]]:
    """(question, yes passage, its negation, another rule's yes passage) for every rule,
    question template and matching (yes, no) template pair: ``yes_templates[i]`` is paired
    with its negation ``no_templates[i]``, so the two lists have one length."""
    require(len(yes_templates) == len(no_templates), "yes_templates and no_templates pair up one to one (a passage "
            f"and its negation), got {len(yes_templates)} and {len(no_templates)}")
    out = []
    for i, rule in enumerate(rules):
        other = rules[(i + 1) % len(rules)]
        for qt in q_templates:
            for yes, no in zip(yes_templates, no_templates):
                out.append((_fill(qt, rule), _fill(yes, rule), _fill(no, rule), _fill(yes, other)))
    return out


test_triples.__test__ = False  # a data builder, not a pytest test


def collection() -> list[str]:
    """Every passage the templates make for every rule, plus the helmet passages; sorted, distinct."""
    templates = YES_SEEN + NO_SEEN + YES_NEW + NO_NEW
    passages = {fill_rule(t, r) for r in RULES_TRAIN + RULES_HELD_OUT for t in templates}
    return sorted(passages | set(HELMET_PASSAGES))


def _rows(rows, name: str) -> list:
    """A non-empty list of (question, passage, label): two strings and a label 0 or 1 (not True or False)."""
    rows = items(rows, name, "a list of (question, passage, 0 or 1)")
    require(rows, f"{name} is empty: nothing to train on")
    bad = [r for r in rows if not _good_row(r)]
    require(not bad, lambda: f"{name} must be (question, passage, 0 or 1); first bad row: {bad[0]!r:.120}")
    return rows


def _good_row(row) -> bool:
    if isinstance(row, (str, bytes)) or not isinstance(row, Sequence) or len(row) != 3:
        return False
    question, passage, label = row
    return isinstance(question, str) and isinstance(passage, str) and _is_0_or_1(label)


def _is_0_or_1(label) -> bool:
    """0 or 1 as an int or float (NumPy's too); True and False are not numbers here."""
    return not isinstance(label, (bool, np.bool_)) and isinstance(label, (int, float, np.integer, np.floating)) \
        and label in (0, 1)


def _model_folder(base_model, name: str) -> str:
    """A local model folder (what it names may still fail to load: that is named when it is loaded)."""
    require(isinstance(base_model, (str, os.PathLike)) and str(base_model), f"{name} must be a local model folder "
            f"(such as labs.retrieval.models.minilm_path()), got {base_model!r:.60}")
    folder = os.path.expanduser(str(base_model))
    require(not (os.path.isabs(folder) or folder.startswith(".") or os.path.exists(folder)) or os.path.isdir(folder),
            f"{name} {str(base_model)!r:.80} is not a folder: give a local model folder, such as "
            "labs.retrieval.models.minilm_path()")
    return str(base_model)


@arguments(rows=_rows, seed=random_seed, batch_size=partial(integer, minimum=1, maximum=MOST),
           max_length=partial(integer, minimum=1, maximum=MOST),
           lr=positive, base_model=_model_folder)
def train_cross_encoder(rows: Sequence[tuple[str, str, int]], base_model: str, seed: int = 0, lr: float = 2e-4,
                        batch_size: int = 16, max_length: int = 64) -> CrossEncoder:
    """One pass over shuffled (question, passage, label) rows; returns the trained CrossEncoder.

    Starts from ``base_model``, a local model folder (the lesson passes the packaged
    all-MiniLM-L6-v2, `labs.retrieval.models.minilm_path()`), with a fresh one-number head;
    the word embedding table stays frozen (fewer weights to update, a faster lesson).
    Every argument is checked before the model loads: ``rows`` is a list of (question,
    passage, label) with two strings and a label 0 or 1 (not True or False), ``seed`` an
    integer >= 0, ``lr`` a finite number > 0, ``batch_size`` and ``max_length`` integers >= 1.
    A model that cannot be loaded from ``base_model`` is named in one ValueError.
    """
    from sentence_transformers import CrossEncoder
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # "some weights were newly initialised": the head, on purpose
    torch.manual_seed(seed)
    try:
        cross = CrossEncoder(base_model, num_labels=1, max_length=max_length, device="cpu", local_files_only=True)
    except (OSError, ValueError) as err:
        raise ValueError(f"base_model {base_model!r:.80} could not be loaded as a model: "
                         f"{' '.join(str(err).split())[:200]}") from None
    for p in cross.model.base_model.embeddings.parameters():
        p.requires_grad_(False)
    loss_fn = BinaryCrossEntropyLoss(cross)
    optimizer = torch.optim.AdamW([p for p in cross.parameters() if p.requires_grad], lr=lr)
    order = list(rows)
    random.Random(seed).shuffle(order)
    cross.train()
    for start in range(0, len(order), batch_size):
        batch = order[start:start + batch_size]
        labels = torch.tensor([float(y) for *_, y in batch])
        loss = loss_fn([[q for q, _, _ in batch], [p for _, p, _ in batch]], labels)
        still_finite(loss, f"the loss is {loss.item()}", f"batch {start // batch_size + 1}", lr)
        optimizer.zero_grad()
        loss.backward()
        optimizer_step(optimizer, lr, "the float32 model")
    cross.eval()
    return cross


def _vector_pair(query_vec, doc_vecs) -> tuple[torch.Tensor, torch.Tensor]:
    """query_vec (D,) and doc_vecs (N, D) as tensors of one float dtype, finite, without gradients."""
    q, docs = tensor(query_vec, "query_vec").detach(), tensor(doc_vecs, "doc_vecs").detach()
    require(q.ndim == 1 and docs.ndim == 2 and docs.shape[1] == q.shape[0],
            f"query_vec must be (D,) and doc_vecs (N, D), got {tuple(q.shape)} and {tuple(docs.shape)}")
    q, docs = tensor(q, "query_vec", finite=True), tensor(docs, "doc_vecs", finite=True)
    require(q.device == docs.device, f"query_vec is on {q.device} but doc_vecs is on {docs.device}")
    require(docs.shape[0] > 0, "doc_vecs has no rows: there is nothing to shortlist")
    wide = torch.promote_types(q.dtype, docs.dtype)
    return (q, docs) if q.dtype == docs.dtype else (q.to(wide), docs.to(wide))


def shortlist(query_vec: torch.Tensor, doc_vecs: torch.Tensor, k: int) -> list[int]:
    """The ``k`` rows of ``doc_vecs`` with the highest dot product with ``query_vec``, best first.

    Equal scores keep the lower row first. The vectors are tensors or tables of real, finite
    numbers (two float dtypes are compared in the wider one); ``k`` is an integer (NumPy's too).
    A score that overflows is refused rather than ranked.
    """
    query_vec, doc_vecs = _vector_pair(query_vec, doc_vecs)
    k = integer(k, "k", 1, doc_vecs.shape[0])
    scores = doc_vecs @ query_vec
    require(bool(torch.isfinite(scores).all()), f"doc_vecs @ query_vec overflows {scores.dtype}: scale the vectors down "
            "(unit rows)")
    scores = scores.tolist()
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]


def rerank(candidates: Sequence[int], scores: Sequence[float]) -> list[int]:
    """Reorder ``candidates`` by their ``scores``, highest first; equal scores keep their order.

    ``candidates`` is a list (not one string, nor an unordered set); ``scores`` one real, finite
    number per candidate (a NaN would sort anywhere)."""
    return _rerank(candidates, scores, "scores")


def _rerank(candidates, scores, scores_name: str) -> list[int]:
    candidates = items(candidates, "candidates", "a list (in shortlist order)", ordered=True)
    values = finite_table(scores, scores_name, ndim=1, what="one number per candidate")
    require(len(candidates) == len(values), f"candidates and {scores_name} differ in length: {len(candidates)} vs "
            f"{len(values)}")
    order = sorted(range(len(candidates)), key=lambda j: -float(values[j]))
    return [candidates[j] for j in order]


def retrieve_then_rerank(query_vec: torch.Tensor, doc_vecs: torch.Tensor, k: int,
                         score: Callable[[list[int]], Sequence[float]]) -> list[int]:
    """Shortlist ``k`` rows by cosine, then reorder them by ``score(shortlist)`` (one score each).

    ``score`` must be callable; what it returns is checked as `rerank` checks ``scores``."""
    score = function(score, "score", "a function of the shortlist's row numbers")
    candidates = shortlist(query_vec, doc_vecs, k)
    return _rerank(candidates, score(candidates), "score(candidates)")


@arguments(probabilities=partial(table, train_with="torch's binary_cross_entropy"),
           labels=partial(table, train_with=None))
def binary_cross_entropy(probabilities: Sequence[float], labels: Sequence[int]) -> float:
    """Mean of -[y ln p + (1 - y) ln(1 - p)] over the rows: minus the log of the probability of the right label.

    ``probabilities`` are the model's p = sigmoid(logit) of "yes"; ``labels`` are 1 (yes) or 0 (no),
    as integers or floats (not True or False). Both are real numbers, one probability per label;
    the sum is taken in float64.
    """
    p, y = torch.from_numpy(probabilities), torch.from_numpy(labels)
    _probabilities_and_labels(p, y)
    return float(-(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean())


def _probabilities_and_labels(p: torch.Tensor, y: torch.Tensor) -> None:
    """The rules between `binary_cross_entropy`'s arguments: one probability in (0, 1) per label 0 or 1."""
    require(p.ndim == 1 and p.shape == y.shape and len(p) > 0,
            f"need one probability per label, got {tuple(p.shape)} and {tuple(y.shape)}")
    require(bool(((y == 0) | (y == 1)).all()), "labels must be 0 or 1")
    outside = torch.nonzero(~((p > 0) & (p < 1))).flatten().tolist()
    require(not outside, lambda: f"probabilities must lie strictly between 0 and 1, got {float(p[outside[0]])!r} at "
            f"index {outside[0]}")
