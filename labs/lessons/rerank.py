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
index. Lesson: ``notebooks/09_beyond_one_vector.ipynb``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import torch


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
    "fill",
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


def fill(template: str, rule: tuple[str, str]) -> str:
    """Put a (group, action) rule into a template with {g}, {G} (capitalised) and {a}."""
    group, action = rule
    return template.format(g=group, G=group[0].upper() + group[1:], a=action)


def labelled_pairs(rules: Sequence[tuple[str, str]], q_templates: Sequence[str],
                   yes_templates: Sequence[str], no_templates: Sequence[str]) -> list[tuple[str, str, int]]:
    """(question, passage, label) rows: each yes passage (1), each negation (0), and the
    next rule's first yes passage (0), for every rule and question template."""
    if len(rules) < 2:
        raise ValueError(f"rules: need at least two rules (one is the other's off-topic passage), got {len(rules)}")
    rows = []
    for i, rule in enumerate(rules):
        other = rules[(i + 1) % len(rules)]
        for qt in q_templates:
            q = fill(qt, rule)
            rows += [(q, fill(t, rule), 1) for t in yes_templates]
            rows += [(q, fill(t, rule), 0) for t in no_templates]
            rows.append((q, fill(yes_templates[0], other), 0))
    return rows


def test_triples(rules: Sequence[tuple[str, str]], q_templates: Sequence[str],
                 yes_templates: Sequence[str], no_templates: Sequence[str]) -> list[tuple[str, str, str, str]]:
    """(question, yes passage, its negation, another rule's yes passage) for every rule,
    question template and matching (yes, no) template pair."""
    if len(rules) < 2:
        raise ValueError(f"rules: need at least two rules, got {len(rules)}")
    out = []
    for i, rule in enumerate(rules):
        other = rules[(i + 1) % len(rules)]
        for qt in q_templates:
            for yes, no in zip(yes_templates, no_templates):
                out.append((fill(qt, rule), fill(yes, rule), fill(no, rule), fill(yes, other)))
    return out


test_triples.__test__ = False  # a data builder, not a pytest test


def collection() -> list[str]:
    """Every passage the templates make for every rule, plus the helmet passages; sorted, distinct."""
    templates = YES_SEEN + NO_SEEN + YES_NEW + NO_NEW
    passages = {fill(t, r) for r in RULES_TRAIN + RULES_HELD_OUT for t in templates}
    return sorted(passages | set(HELMET_PASSAGES))


def train_cross_encoder(rows: Sequence[tuple[str, str, int]], base_model: str, seed: int = 0, lr: float = 2e-4,
                        batch_size: int = 16, max_length: int = 64) -> CrossEncoder:
    """One pass over shuffled (question, passage, label) rows; returns the trained CrossEncoder.

    Starts from ``base_model``, a local model folder (the lesson passes the packaged
    all-MiniLM-L6-v2, `labs.retrieval.models.minilm_path()`), with a fresh one-number head;
    the word embedding table stays frozen (fewer weights to update, a faster lesson).
    """
    if not rows:
        raise ValueError("rows is empty: nothing to train on")
    bad = [r for r in rows if len(r) != 3 or r[2] not in (0, 1)]
    if bad:
        raise ValueError(f"rows must be (question, passage, 0 or 1); first bad row: {bad[0]!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    from sentence_transformers import CrossEncoder
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # "some weights were newly initialised": the head, on purpose
    torch.manual_seed(seed)
    cross = CrossEncoder(str(base_model), num_labels=1, max_length=max_length, device="cpu",
                         local_files_only=True)
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
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    cross.eval()
    return cross


def shortlist(query_vec: torch.Tensor, doc_vecs: torch.Tensor, k: int) -> list[int]:
    """The ``k`` rows of ``doc_vecs`` with the highest dot product with ``query_vec``, best first.

    Equal scores keep the lower row first.
    """
    if query_vec.ndim != 1 or doc_vecs.ndim != 2 or doc_vecs.shape[1] != query_vec.shape[0]:
        raise ValueError(f"query_vec must be (D,) and doc_vecs (N, D), got {tuple(query_vec.shape)} "
                         f"and {tuple(doc_vecs.shape)}")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= doc_vecs.shape[0]:
        raise ValueError(f"k must be an integer from 1 to {doc_vecs.shape[0]}, got {k!r}")
    scores = (doc_vecs @ query_vec).tolist()
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]


def rerank(candidates: Sequence[int], scores: Sequence[float]) -> list[int]:
    """Reorder ``candidates`` by their ``scores``, highest first; equal scores keep their order."""
    if len(candidates) != len(scores):
        raise ValueError(f"candidates and scores differ in length: {len(candidates)} vs {len(scores)}")
    order = sorted(range(len(candidates)), key=lambda j: -float(scores[j]))
    return [candidates[j] for j in order]


def retrieve_then_rerank(query_vec: torch.Tensor, doc_vecs: torch.Tensor, k: int,
                         score: Callable[[list[int]], Sequence[float]]) -> list[int]:
    """Shortlist ``k`` rows by cosine, then reorder them by ``score(shortlist)`` (one score each)."""
    candidates = shortlist(query_vec, doc_vecs, k)
    return rerank(candidates, score(candidates))


def binary_cross_entropy(probabilities: Sequence[float], labels: Sequence[int]) -> float:
    """Mean of -[y ln p + (1 - y) ln(1 - p)] over the rows: minus the log of the probability of the right label.

    ``probabilities`` are the model's p = sigmoid(logit) of "yes"; ``labels`` are 1 (yes) or 0 (no).
    """
    p = torch.as_tensor(list(probabilities), dtype=torch.float64)
    y = torch.as_tensor(list(labels), dtype=torch.float64)
    if p.ndim != 1 or p.shape != y.shape or len(p) == 0:
        raise ValueError(f"need one probability per label, got {tuple(p.shape)} and {tuple(y.shape)}")
    if not bool(((y == 0) | (y == 1)).all()):
        raise ValueError("labels must be 0 or 1")
    if not bool(((p > 0) & (p < 1)).all()):
        raise ValueError("probabilities must lie strictly between 0 and 1")
    return float(-(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean())
