"""The hard-negative experiment: a bi-encoder small enough to read, trained two ways.

In plain words: a text becomes word counts (a bag of words), one shared matrix
W turns the counts into 16 numbers, and the result is scaled to length 1. Two
copies of this model are trained with InfoNCE on the same batches of
(question, answer card) pairs. Each batch holds one intent (how-to or policy)
across 8 topics, so its in-batch negatives differ from the right card only by
topic. The hard-negative copy also sees each question's same-topic,
other-intent card as an extra negative. The exam, on four topics neither copy
has seen: does the right card beat its look-alike? The gradient is derived by
hand through the unit scaling (no autograd) and checked against finite
differences and torch autograd.

Shapes
------
=========  ==========  =======================================================
name       shape       meaning
=========  ==========  =======================================================
X          (n, V)      word counts of n texts over the vocabulary of V words
W          (V, d)      the shared projection, d = 16 by default
A = X W    (n, d)      raw vectors; U = A / |A| row by row (unit rows)
Q, P       (B, d)      unit question vectors; (M, d) unit card vectors, M >= B:
                       card i answers question i, cards B..M-1 are extra
                       (hard) negatives for every question
S          (B, M)      Q P^T, cosines; the loss is ``labs.lessons.infonce.info_nce(S, tau)``
=========  ==========  =======================================================

Relations: `info_nce_grads` is what ``loss.backward()`` computes for
``labs.lessons.infonce.info_nce_torch`` with ``normalize=False``; `normalize_backward`
is the backward pass of ``torch.nn.functional.normalize``. `labs.lessons.clip` reuses
`normalize_rows`, `normalize_backward` and `info_nce_grads` for its two
encoders. sentence-transformers trains the same loss as
MultipleNegativesRankingLoss (``scale = 1 / tau``), where a third column of
hard negatives plays the role of our extra cards. The 2-D pull/push toy the
lesson starts from lives in `labs.lessons.margin_toy` (`pull` and `push` are
re-exported here); mining hard negatives from a real corpus lives in
`labs.lessons.mining`.

Lesson: ``notebooks/05_hard_negatives.ipynb``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from labs.lessons.infonce import info_nce, info_nce_torch, log_softmax_rows
from labs.lessons.inputs import (
    finite_array, one_bool, real_array, real_number, scaled_scores, text_list, valid_tau, whole_number,
)

__all__ = [
    "TRAIN_TOPICS", "UNSEEN_TOPICS", "INTENTS", "QUESTION_TEMPLATES", "CARD_TEMPLATES", "PROBE_QUERY",
    "tokenize", "build_vocab", "bag_of_words", "card", "make_triples",
    "normalize_rows", "normalize_checked", "normalize_backward", "info_nce_grads", "encoder_loss_and_grad",
    "finite_difference_check", "autograd_check",
    "BiEncoder", "first_batch", "train_bi_encoder", "look_alike_accuracy", "topic_accuracy", "seed_sweep",
    "SLIDER_SEED",
]

# ---------------------------------------------------------------------------
# The data: 12 training topics, 4 unseen ones, two intents per topic
# ---------------------------------------------------------------------------

TRAIN_TOPICS = ("vpn", "laptop", "printer", "email", "wifi", "badge",
                "payroll", "expenses", "invoice", "travel", "parking", "calendar")
UNSEEN_TOPICS = ("password", "monitor", "phone", "desk")
INTENTS = ("howto", "policy")

# Questions and cards of one intent share no word but the topic, so "fix goes
# with restart" has to be learned; it cannot be read off the overlap.
QUESTION_TEMPLATES = {
    "howto": ("how do i fix my {t}", "my {t} is broken", "{t} stopped working today",
              "i am stuck with the {t}", "why does {t} keep failing"),
    "policy": ("what are the rules on {t}", "is there a limit on {t}", "who is allowed to use {t}",
               "am i permitted to have {t}", "can my team get {t}"),
}
CARD_TEMPLATES = {
    "howto": "{T}: restart, reinstall, then follow every setup step.",
    "policy": "{T}: approval, compliance, usage limits, staff eligibility.",
}
PROBE_QUERY = "my password is broken and i am stuck"


def _other(intent: str) -> str:
    return INTENTS[1 - INTENTS.index(intent)]


def card(topic: str, intent: str) -> str:
    """The answer card of one topic and intent, e.g. ``card("password", "howto")``."""
    if not isinstance(topic, str) or not topic:
        raise ValueError(f"topic must be a topic name (a non-empty string), got {topic!r:.40}")
    if not isinstance(intent, str) or intent not in INTENTS:
        raise ValueError(f"intent must be one of {INTENTS}, got {intent!r}")
    return CARD_TEMPLATES[intent].format(T=topic.capitalize())


def make_triples(topics: Iterable[str]) -> list[tuple[str, str, str, str]]:
    """(question, right card, look-alike card, intent) for 10 questions per topic.

    The look-alike has the same topic and the other intent: the classic hard
    negative ("my password is broken" against the password policy card).
    """
    topics = text_list(topics, "topics")
    for t in topics:
        card(t, INTENTS[0])  # refuses an empty name
    return [(q.format(t=t), card(t, intent), card(t, _other(intent)), intent)
            for t in topics for intent in INTENTS for q in QUESTION_TEMPLATES[intent]]


def tokenize(text: str) -> list[str]:
    """Lower-case words of letters and digits: ``"Password: restart"`` -> ``["password", "restart"]``."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    return re.findall(r"[a-z0-9]+", text.lower())


def build_vocab(texts: Iterable[str]) -> tuple[str, ...]:
    """The sorted set of words in ``texts``: one slot of the bag of words per word."""
    return tuple(sorted({w for text in text_list(texts, "texts") for w in tokenize(text)}))


@lru_cache(maxsize=8)
def _word_index(vocab: tuple[str, ...]) -> dict[str, int]:
    return {w: i for i, w in enumerate(vocab)}


def bag_of_words(texts: Sequence[str], vocab: tuple[str, ...]) -> np.ndarray:
    """Word counts (n, V) of n texts. Words outside the vocabulary are dropped."""
    texts = text_list(texts, "texts")
    vocab = tuple(text_list(vocab, "vocab"))
    index = _word_index(vocab)
    if len(index) != len(vocab):
        raise ValueError("vocab has a word twice: each word needs one slot (build it with build_vocab)")
    X = np.zeros((len(texts), len(index)))
    for row, text in enumerate(texts):
        for w in tokenize(text):
            if w in index:
                X[row, index[w]] += 1.0
    return X


# Every text of the experiment, so the unseen topics' words have rows in W.
# Those rows never get a gradient (no training text contains them): they keep
# their random start, and the exam asks what the model makes of them.
VOCAB = build_vocab(x for t in make_triples(TRAIN_TOPICS + UNSEEN_TOPICS) for x in t[:3])

# ---------------------------------------------------------------------------
# Forward and backward, by hand
# ---------------------------------------------------------------------------


def normalize_rows(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scale each row of A (n, d) to length 1: returns U (n, d) and the lengths (n, 1).

    ``A`` must hold real, finite numbers (not booleans, text, complex numbers, nor a tensor that
    requires grad: detach it, or use ``torch.nn.functional.normalize`` to train through it). A row
    of any size keeps its direction: a tiny row (1e-200) or a huge one (1e200), whose squared
    length would underflow or overflow float64, is scaled by its largest entry first.
    """
    A = real_array(A, "A", train_with="torch.nn.functional.normalize")
    if A.ndim != 2:
        raise ValueError(f"A must be 2-D (rows x dim), got shape {A.shape}")
    return normalize_checked(A, "A")


def normalize_checked(A: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """`normalize_rows` of an array already checked to be 2-D float64 (training calls this every step);
    ``name`` names it in a refusal."""
    norms = np.sqrt(np.einsum("ij,ij->i", A, A))[:, None]
    if not norms.min(initial=1.0) > _SMALL or not norms.max(initial=1.0) < np.inf:  # also catches NaN
        return _normalize_with_care(A, norms, name)
    return A / norms, norms


_SMALL = 1e-150  # below this length the squares lose digits to underflow (float64's smallest normal is 2.2e-308)


def _normalize_with_care(A: np.ndarray, norms: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The rows whose squared length under- or overflowed (or that are not finite) get scaled first."""
    finite = np.all(np.isfinite(A), axis=1)
    if not finite.all():
        bad = int(np.flatnonzero(~finite)[0])
        raise ValueError(f"{name} row {bad} has an entry that is not a finite number (NaN or infinite)")
    largest = np.abs(A).max(axis=1, initial=0.0)
    if not largest.min(initial=1.0) > 0:
        bad = int(np.flatnonzero(~(largest > 0))[0])
        raise ValueError(f"{name} row {bad} has length 0: it has no direction to keep (a text with no known words?)")
    redo = ~((norms[:, 0] > _SMALL) & (norms[:, 0] < np.inf))
    scaled = A[redo] / largest[redo, None]
    lengths = np.sqrt(np.einsum("ij,ij->i", scaled, scaled))[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):  # the rows to redo are replaced just below
        U, norms = A / norms, norms.copy()
    U[redo] = scaled / lengths
    with np.errstate(over="ignore"):
        norms[redo] = largest[redo, None] * lengths
    if not np.all(np.isfinite(norms)):
        bad = int(np.flatnonzero(~np.isfinite(norms[:, 0]))[0])
        raise ValueError(f"{name} row {bad} is longer than float64 can hold (its length overflows)")
    return U, norms


def normalize_backward(dU: np.ndarray, U: np.ndarray, norms: np.ndarray) -> np.ndarray:
    """Gradient through U = A / |A|: dA = (dU - U (U . dU)) / |A|, row by row; shape (n, d).

    Moving a along its own direction does not change u (the scaling takes it
    back out), so only the sideways part of dU survives, shrunk by the length.
    """
    dU, U = finite_array(dU, "dU"), finite_array(U, "U")
    norms = finite_array(norms, "norms")
    if dU.shape != U.shape or U.ndim != 2 or norms.size != U.shape[0] or norms.ndim not in (1, 2):
        raise ValueError(f"dU and U must share one (n, d) shape and norms have n rows, "
                         f"got dU {dU.shape}, U {U.shape}, norms {norms.shape}")
    norms = norms.reshape(-1, 1)
    if not np.all(norms > 0):
        raise ValueError("norms must be the rows' lengths (> 0), as normalize_rows returns them")
    return (dU - U * np.einsum("ij,ij->i", U, dU)[:, None]) / norms


def _table_grad(S: np.ndarray, tau: float) -> np.ndarray:
    """dL/dS of the mean InfoNCE loss on a (B, M) table: (softmax(S / tau) - one-hot) / (B tau)."""
    B = S.shape[0]
    G = np.exp(log_softmax_rows(S / tau))  # the loss module's stable softmax, one version of it
    G[np.arange(B), np.arange(B)] -= 1.0
    return G / (B * tau)


def info_nce_grads(Q: np.ndarray, P: np.ndarray, tau: float, symmetric: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Gradients (dQ (B, d), dP (M, d)) of InfoNCE on S = Q P^T with respect to Q and P.

    The loss is ``info_nce(Q @ P.T, tau)``; with ``symmetric=True`` it is
    ``clip_loss(Q @ P.T, tau)`` (rows pick columns and columns pick rows), which
    needs M == B. Softmax cross-entropy gives dS = (softmax - one-hot) / B per
    row; the rest is the chain rule through S = Q P^T / tau.
    """
    tau = valid_tau(tau)
    symmetric = one_bool(symmetric, "symmetric")
    Q, P = finite_array(Q, "Q", train_with="info_nce_torch"), finite_array(P, "P", train_with="info_nce_torch")
    if Q.ndim != 2 or P.ndim != 2 or Q.shape[1] != P.shape[1]:
        raise ValueError(f"Q (B, d) and P (M, d) must be 2-D with the same d, got {Q.shape} and {P.shape}")
    if Q.shape[0] == 0 or Q.shape[1] == 0:
        raise ValueError(f"Q needs at least one row and one column, got shape {Q.shape}")
    if P.shape[0] < Q.shape[0]:
        raise ValueError(f"P needs at least as many rows as Q (card i answers question i), got {P.shape[0]} < {Q.shape[0]}")
    if symmetric and P.shape[0] != Q.shape[0]:
        raise ValueError(f"symmetric=True needs a square table (M == B), got B={Q.shape[0]}, M={P.shape[0]}")
    with np.errstate(over="ignore"):
        S = Q @ P.T
    scaled_scores(S, tau, name="Q @ P.T")  # refuses a table that overflows, or overflows once divided by tau
    dS = _table_grad(S, tau)
    if symmetric:
        dS = 0.5 * dS + 0.5 * _table_grad(S.T, tau).T
    return dS @ P, dS.T @ Q


def encoder_loss_and_grad(W: np.ndarray, Xq: np.ndarray, Xp: np.ndarray, tau: float) -> tuple[float, np.ndarray]:
    """Loss of the bi-encoder on one batch and its gradient dW (V, d), by hand.

    Forward: Q = unit(Xq W), P = unit(Xp W), loss = info_nce(Q P^T, tau).
    Backward: `info_nce_grads`, then `normalize_backward`, then dW = X^T dA
    for both sides (W is shared, so the two contributions add).
    """
    tau = valid_tau(tau)
    W, Xq, Xp = finite_array(W, "W"), finite_array(Xq, "Xq"), finite_array(Xp, "Xp")
    if W.ndim != 2 or Xq.ndim != 2 or Xp.ndim != 2 or Xq.shape[1] != W.shape[0] or Xp.shape[1] != W.shape[0]:
        raise ValueError(f"Xq (B, V), Xp (M, V) and W (V, d) must fit, got {Xq.shape}, {Xp.shape}, {W.shape}")
    if Xq.shape[0] == 0 or Xp.shape[0] < Xq.shape[0]:
        raise ValueError(f"Xp needs at least as many rows as Xq >= 1 (card i answers question i), "
                         f"got {Xp.shape[0]} and {Xq.shape[0]}")
    with np.errstate(over="ignore"):
        Q, P = normalize_checked(Xq @ W, "Xq @ W")[0], normalize_checked(Xp @ W, "Xp @ W")[0]
    return info_nce(Q @ P.T, tau), _encoder_grad(W, Xq, Xp, tau)


def _encoder_grad(W: np.ndarray, Xq: np.ndarray, Xp: np.ndarray, tau: float) -> np.ndarray:
    """dW (V, d) of the batch loss: the backward pass that training runs every step."""
    Q, q_norms = normalize_checked(Xq @ W, "Xq @ W")
    P, p_norms = normalize_checked(Xp @ W, "Xp @ W")
    dS = _table_grad(Q @ P.T, tau)  # = what info_nce_grads starts from
    dQ, dP = dS @ P, dS.T @ Q
    return Xq.T @ normalize_backward(dQ, Q, q_norms) + Xp.T @ normalize_backward(dP, P, p_norms)


def _check_problem(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.random((3, 6)), rng.random((5, 6)), rng.standard_normal((6, 4))


def finite_difference_check(seed: int = 0, eps: float = 1e-6, tau: float = 0.5) -> float:
    """Largest |hand gradient - central finite difference| over every entry of W (6, 4)."""
    seed, tau = whole_number(seed, "seed", 0), valid_tau(tau)
    eps = real_number(eps, "eps", "a finite number > 0")
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be a finite number > 0, got {eps!r}")
    Xq, Xp, W = _check_problem(seed)
    _, dW = encoder_loss_and_grad(W, Xq, Xp, tau)
    worst = 0.0
    for idx in np.ndindex(W.shape):
        E = np.zeros_like(W)
        E[idx] = eps
        up, down = encoder_loss_and_grad(W + E, Xq, Xp, tau)[0], encoder_loss_and_grad(W - E, Xq, Xp, tau)[0]
        worst = max(worst, abs((up - down) / (2 * eps) - dW[idx]))
    return worst


def autograd_check(seed: int = 0, tau: float = 0.5) -> float:
    """Largest |hand gradient - torch autograd gradient| of the same loss, float64."""
    seed, tau = whole_number(seed, "seed", 0), valid_tau(tau)
    Xq, Xp, W = _check_problem(seed)
    _, dW = encoder_loss_and_grad(W, Xq, Xp, tau)
    Wt = torch.tensor(W, requires_grad=True)
    loss = info_nce_torch(torch.tensor(Xq) @ Wt, torch.tensor(Xp) @ Wt, tau, normalize=True)
    loss.backward()
    return float(np.max(np.abs(Wt.grad.numpy() - dW)))


# ---------------------------------------------------------------------------
# The model and the experiment
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BiEncoder:
    """One shared projection W (V, d) for questions and cards; `encode` gives unit rows (n, d)."""

    vocab: tuple[str, ...]
    W: np.ndarray

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return normalize_rows(bag_of_words(texts, self.vocab) @ self.W)[0]


@lru_cache(maxsize=1)
def _training_features() -> tuple[np.ndarray, np.ndarray]:
    """Questions (topics, 2 intents, 5 templates, V) and cards (topics, 2 intents, V) of the training topics."""
    questions = np.stack([[bag_of_words([q.format(t=t) for q in QUESTION_TEMPLATES[i]], VOCAB) for i in INTENTS]
                          for t in TRAIN_TOPICS])
    cards = np.stack([bag_of_words([card(t, i) for i in INTENTS], VOCAB) for t in TRAIN_TOPICS])
    return questions, cards


@lru_cache(maxsize=16)
def _exam_features(topics: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    triples = make_triples(topics)
    return tuple(bag_of_words([t[k] for t in triples], VOCAB) for k in range(3))


def _check_model(model: BiEncoder) -> None:
    if not isinstance(model, BiEncoder):
        raise ValueError(f"model must be a BiEncoder from train_bi_encoder, got {type(model).__name__}")
    W = finite_array(model.W, "model.W")
    if W.ndim != 2 or W.shape[0] != len(model.vocab) or W.shape[1] == 0:
        raise ValueError(f"model.W must be (V, d) with one row per word of model.vocab ({len(model.vocab)}), "
                         f"got shape {W.shape}")


def _check_topics(topics: Iterable[str], name: str = "topics") -> tuple[str, ...]:
    if isinstance(topics, str):
        raise ValueError(f"{name} must be a list of topic names, not one string; wrap it: [{topics!r}]")
    if not isinstance(topics, Iterable) or isinstance(topics, Mapping):
        raise ValueError(f"{name} must be a list of topic names, got {type(topics).__name__}")
    topics = tuple(topics)
    known = TRAIN_TOPICS + UNSEEN_TOPICS
    unknown = [t for t in topics if t not in known]
    if not topics or unknown:
        raise ValueError(f"{name} must be a non-empty list drawn from TRAIN_TOPICS and UNSEEN_TOPICS, "
                         f"got unknown {unknown or 'nothing'}")
    return topics


def _accuracy(W: np.ndarray, topics: tuple[str, ...]) -> float:
    Xq, Xr, Xl = _exam_features(topics)
    Q, R, L = (normalize_rows(X @ W)[0] for X in (Xq, Xr, Xl))
    return float(np.mean(np.sum(Q * R, axis=1) > np.sum(Q * L, axis=1)))


def look_alike_accuracy(model: BiEncoder, topics: Iterable[str] = UNSEEN_TOPICS) -> float:
    """Share of the topics' questions whose right card scores above its same-topic look-alike."""
    _check_model(model)
    topics = _check_topics(topics)
    if model.vocab == VOCAB:
        return _accuracy(model.W, topics)
    questions, right, look_alike, _ = zip(*make_triples(topics))
    Q, R, L = model.encode(questions), model.encode(right), model.encode(look_alike)
    return float(np.mean(np.sum(Q * R, axis=1) > np.sum(Q * L, axis=1)))


def topic_accuracy(model: BiEncoder, topics: Iterable[str] = UNSEEN_TOPICS) -> float:
    """Share of the topics' questions whose right card beats every other topic's card of the same intent.

    The test the in-batch negatives train for: the wrong cards differ from the right one only by topic.
    """
    _check_model(model)
    topics = _check_topics(topics)
    if len(topics) < 2:
        raise ValueError("topic_accuracy needs at least two topics: the wrong cards are the other topics' cards")
    right = 0
    for intent in INTENTS:
        C = model.encode([card(t, intent) for t in topics])  # (topics, d)
        for k, t in enumerate(topics):
            Q = model.encode([q.format(t=t) for q in QUESTION_TEMPLATES[intent]])
            S = Q @ C.T
            others = np.delete(S, k, axis=1)
            right += int(np.sum(S[:, k] > others.max(axis=1)))
    return right / (len(topics) * len(INTENTS) * len(QUESTION_TEMPLATES["howto"]))


def _positive_int(value: object, name: str, low: int) -> int:
    return whole_number(value, name, low)


def _settings(hard_negatives: bool, seed: int, batch: int, dim: int) -> tuple[bool, int, int, int]:
    """The checked settings that `first_batch` and `train_bi_encoder` share."""
    hard_negatives = one_bool(hard_negatives, "hard_negatives")
    seed, dim, batch = _positive_int(seed, "seed", 0), _positive_int(dim, "dim", 1), _positive_int(batch, "batch", 2)
    if batch > len(TRAIN_TOPICS):
        raise ValueError(f"batch must be at most {len(TRAIN_TOPICS)} (one question per training topic), got {batch}")
    return hard_negatives, seed, batch, dim


def _draw_batch(rng: np.random.Generator, batch: int) -> tuple[int, np.ndarray, np.ndarray]:
    """One intent, ``batch`` different training topics, one question template per topic."""
    intent = int(rng.integers(len(INTENTS)))
    topics = rng.permutation(len(TRAIN_TOPICS))[:batch]
    return intent, topics, rng.integers(len(QUESTION_TEMPLATES["howto"]), size=batch)


def first_batch(hard_negatives: bool, *, seed: int = 0, batch: int = 8, dim: int = 16) -> tuple[list[str], list[str]]:
    """The texts of the first training batch: (questions, cards); card i answers question i."""
    hard_negatives, seed, batch, dim = _settings(hard_negatives, seed, batch, dim)
    rng = np.random.default_rng(seed)
    rng.normal(0.0, 1.0 / math.sqrt(dim), (len(VOCAB), dim))  # the same draws as train_bi_encoder's start
    intent, topics, templates = _draw_batch(rng, batch)
    names = [TRAIN_TOPICS[t] for t in topics]
    questions = [QUESTION_TEMPLATES[INTENTS[intent]][k].format(t=t) for t, k in zip(names, templates)]
    cards = [card(t, INTENTS[intent]) for t in names]
    if hard_negatives:
        cards += [card(t, INTENTS[1 - intent]) for t in names]
    return questions, cards


def train_bi_encoder(
    hard_negatives: bool, *, seed: int = 0, steps: int = 400, batch: int = 8, tau: float = 0.1,
    lr: float = 0.5, dim: int = 16, checkpoints: Iterable[int] | None = None,
    checkpoint_topics: Iterable[str] = UNSEEN_TOPICS,
) -> BiEncoder | tuple[BiEncoder, dict[int, float]]:
    """Train the bi-encoder with InfoNCE, by hand-derived gradient descent.

    Every step draws one intent and ``batch`` different training topics, one
    question each; the batch's cards are those questions' right cards, so the
    in-batch negatives differ only by topic. With ``hard_negatives=True`` each
    question's same-topic, other-intent card is appended as an extra negative
    for the whole batch. Nothing else differs: same seed, same start, same
    batches. The defaults are the settings the lesson's experiment uses (lr 0.5,
    tau 0.1, 400 steps of 8). With ``checkpoints`` (step counts between 0 and ``steps``) it also
    returns {step: look-alike accuracy on ``checkpoint_topics``}, recorded
    during this one run (step 0 is the untrained model).
    """
    hard_negatives, seed, batch, dim = _settings(hard_negatives, seed, batch, dim)
    steps = _positive_int(steps, "steps", 0)
    tau = valid_tau(tau)
    lr = _learning_rate(lr)
    wanted: set[int] = set()
    if checkpoints is not None:
        if isinstance(checkpoints, (str, bytes)) or not isinstance(checkpoints, Iterable):
            raise ValueError(f"checkpoints must be a list of step counts, got {checkpoints!r:.40}")
        wanted = {_positive_int(c, "checkpoints", 0) for c in checkpoints}
        if not wanted or max(wanted) > steps:
            raise ValueError(f"checkpoints must be step counts between 0 and steps={steps}, got {sorted(wanted)}")
        exam = _check_topics(checkpoint_topics, "checkpoint_topics")

    rng = np.random.default_rng(seed)
    W = rng.normal(0.0, 1.0 / math.sqrt(dim), (len(VOCAB), dim))
    questions, cards = _training_features()
    curve: dict[int, float] = {}
    for step in range(steps + 1):
        if step in wanted:
            curve[step] = _accuracy(W, exam)
        if step == steps:
            break
        intent, topics, templates = _draw_batch(rng, batch)
        Xq = questions[topics, intent, templates]
        Xp = cards[topics, intent]
        if hard_negatives:
            Xp = np.concatenate([Xp, cards[topics, 1 - intent]])
        W -= lr * _encoder_grad(W, Xq, Xp, tau)
    model = BiEncoder(VOCAB, W)
    return (model, dict(sorted(curve.items()))) if checkpoints is not None else model


def _learning_rate(lr: float) -> float:
    value = real_number(lr, "lr", "a finite number > 0")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    return value


_SWEEP_SETTINGS = ("steps", "batch", "tau", "lr", "dim")


def seed_sweep(seeds: Iterable[int] = range(10), **train_kwargs) -> dict[str, np.ndarray]:
    """Both models on each seed: look-alike accuracy on unseen and training topics, one array per key.

    ``train_kwargs`` are `train_bi_encoder`'s steps, batch, tau, lr and dim, checked before any training.
    """
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Iterable):
        raise ValueError(f"seeds must be a list of integers >= 0, got {seeds!r:.40}")
    seeds = [_positive_int(s, "seeds", 0) for s in seeds]
    if not seeds:
        raise ValueError("seeds must name at least one seed")
    unknown = sorted(set(train_kwargs) - set(_SWEEP_SETTINGS))
    if unknown:
        raise ValueError(f"seed_sweep passes only {', '.join(_SWEEP_SETTINGS)} to train_bi_encoder, got {unknown}")
    _settings(True, 0, train_kwargs.get("batch", 8), train_kwargs.get("dim", 16))
    _positive_int(train_kwargs.get("steps", 400), "steps", 0)
    valid_tau(train_kwargs.get("tau", 0.1))
    _learning_rate(train_kwargs.get("lr", 0.5))
    out: dict[str, list[float]] = {"in_batch": [], "hard": [], "in_batch_train": [], "hard_train": []}
    for s in seeds:
        for hard, key in ((False, "in_batch"), (True, "hard")):
            model = train_bi_encoder(hard, seed=s, **train_kwargs)
            out[key].append(_accuracy(model.W, UNSEEN_TOPICS))
            out[key + "_train"].append(_accuracy(model.W, TRAIN_TOPICS))
    return {k: np.array(v) for k, v in out.items()}


SLIDER_SEED = 10  # the lesson's steps slider trains a seed its ten-seed table (0..9) does not show
