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
lesson starts from lives in `labs.lessons.margin_toy` (`pull` and `push`);
mining hard negatives from a real corpus lives in `labs.lessons.mining`.

Lesson: ``notebooks/05_hard_negatives.ipynb``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial

import numpy as np
import torch

from labs import checks
from labs.checks import (
    MOST, arguments, choice, finite_table, flag, instance, integer, items, optional, positive, require, scaled_scores,
    table,
    temperature, texts, unit_rows,
)
from labs.lessons.infonce import info_nce, info_nce_torch, log_softmax_rows

__all__ = [
    "TRAIN_TOPICS", "UNSEEN_TOPICS", "INTENTS", "QUESTION_TEMPLATES", "CARD_TEMPLATES", "PROBE_QUERY",
    "tokenize", "build_vocab", "bag_of_words", "card", "make_triples",
    "normalize_rows", "normalize_backward", "info_nce_grads", "encoder_loss_and_grad",
    "encoder_finite_difference_check", "autograd_check",
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


def _topic(topic, name: str = "topic") -> str:
    require(isinstance(topic, str) and topic, f"{name} must be a topic name (a non-empty string), got {topic!r:.40}")
    return topic


def card(topic: str, intent: str) -> str:
    """The answer card of one topic and intent, e.g. ``card("password", "howto")``."""
    topic, intent = _topic(topic), choice(intent, "intent", INTENTS)
    return CARD_TEMPLATES[intent].format(T=topic.capitalize())


def make_triples(topics: Iterable[str]) -> list[tuple[str, str, str, str]]:
    """(question, right card, look-alike card, intent) for 10 questions per topic.

    The look-alike has the same topic and the other intent: the classic hard
    negative ("my password is broken" against the password policy card).
    """
    topics = [_topic(t, "topics entry") for t in texts(topics, "topics")]
    return [(q.format(t=t), card(t, intent), card(t, _other(intent)), intent)
            for t in topics for intent in INTENTS for q in QUESTION_TEMPLATES[intent]]


def tokenize(text: str) -> list[str]:
    """Lower-case words of letters and digits: ``"Password: restart"`` -> ``["password", "restart"]``."""
    return re.findall(r"[a-z0-9]+", instance(text, "text", str, "a string").lower())


def build_vocab(texts: Iterable[str]) -> tuple[str, ...]:
    """The sorted set of words in ``texts``: one slot of the bag of words per word."""
    return tuple(sorted({w for text in checks.texts(texts, "texts") for w in tokenize(text)}))


@lru_cache(maxsize=8)
def _word_index(vocab: tuple[str, ...]) -> dict[str, int]:
    return {w: i for i, w in enumerate(vocab)}


def bag_of_words(texts: Sequence[str], vocab: tuple[str, ...]) -> np.ndarray:
    """Word counts (n, V) of n texts. Words outside the vocabulary are dropped."""
    texts, index = checks.texts(texts, "texts"), _word_index(tuple(checks.texts(vocab, "vocab")))
    require(len(index) == len(vocab), "vocab has a word twice: each word needs one slot (build it with build_vocab)")
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


_NO_WORDS = "has length 0: it has no direction to keep (a text with no known words?)"


@arguments(A=partial(table, train_with="torch.nn.functional.normalize", ndim=2, what="2-D (rows x dim)"))
def normalize_rows(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scale each row of A (n, d) to length 1: returns U (n, d) and the lengths (n, 1).

    ``A`` must hold real, finite numbers (not booleans, text, complex numbers, nor a tensor that
    requires grad: detach it, or use ``torch.nn.functional.normalize`` to train through it). A row
    of any size keeps its direction: a tiny row (1e-200) or a huge one (1e200), whose squared
    length would underflow or overflow float64, is scaled by its largest entry first
    (`labs.checks.unit_rows`).
    """
    return unit_rows(A, "A row", return_lengths=True, why_zero=_NO_WORDS)


def _unit(A: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Unit rows of a checked (n, d) float64 table and their lengths (training calls this every step)."""
    return unit_rows(A, f"{name} row", return_lengths=True, why_zero=_NO_WORDS)


@arguments(dU=finite_table, U=finite_table, norms=finite_table)
def normalize_backward(dU: np.ndarray, U: np.ndarray, norms: np.ndarray) -> np.ndarray:
    """Gradient through U = A / |A|: dA = (dU - U (U . dU)) / |A|, row by row; shape (n, d).

    Moving a along its own direction does not change u (the scaling takes it
    back out), so only the sideways part of dU survives, shrunk by the length.
    """
    require(dU.shape == U.shape and U.ndim == 2 and norms.size == U.shape[0] and norms.ndim in (1, 2),
            f"dU and U must share one (n, d) shape and norms have n rows, got dU {dU.shape}, U {U.shape}, norms "
            f"{norms.shape}")
    require(np.all(norms > 0), "norms must be the rows' lengths (> 0), as normalize_rows returns them")
    return _backward(dU, U, norms.reshape(-1, 1))


def _backward(dU: np.ndarray, U: np.ndarray, norms: np.ndarray) -> np.ndarray:
    """`normalize_backward` of checked arrays, norms (n, 1)."""
    return (dU - U * np.einsum("ij,ij->i", U, dU)[:, None]) / norms


def _table_grad(S: np.ndarray, tau: float) -> np.ndarray:
    """dL/dS of the mean InfoNCE loss on a (B, M) table: (softmax(S / tau) - one-hot) / (B tau)."""
    B = S.shape[0]
    G = np.exp(log_softmax_rows(S / tau))  # the loss module's stable softmax, one version of it
    G[np.arange(B), np.arange(B)] -= 1.0
    return G / (B * tau)


_TRAIN_WITH = partial(finite_table, train_with="info_nce_torch")


@arguments(tau=temperature, symmetric=flag, Q=_TRAIN_WITH, P=_TRAIN_WITH)
def info_nce_grads(Q: np.ndarray, P: np.ndarray, tau: float, symmetric: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Gradients (dQ (B, d), dP (M, d)) of InfoNCE on S = Q P^T with respect to Q and P.

    The loss is ``info_nce(Q @ P.T, tau)``; with ``symmetric=True`` it is
    ``clip_loss(Q @ P.T, tau)`` (rows pick columns and columns pick rows), which
    needs M == B. Softmax cross-entropy gives dS = (softmax - one-hot) / B per
    row; the rest is the chain rule through S = Q P^T / tau.
    """
    S = _scores(Q, P, tau, symmetric)
    dS = _table_grad(S, tau) if not symmetric else 0.5 * _table_grad(S, tau) + 0.5 * _table_grad(S.T, tau).T
    return dS @ P, dS.T @ Q


def _scores(Q: np.ndarray, P: np.ndarray, tau: float, symmetric: bool) -> np.ndarray:
    """Q @ P.T, and the rules between `info_nce_grads`' arguments: B >= 1 questions, M >= B cards of
    one dimension d >= 1 (M == B when symmetric), a table that does not overflow once divided by tau."""
    require(Q.ndim == 2 and P.ndim == 2 and Q.shape[1] == P.shape[1],
            f"Q (B, d) and P (M, d) must be 2-D with the same d, got {Q.shape} and {P.shape}")
    require(Q.shape[0] > 0 and Q.shape[1] > 0, f"Q needs at least one row and one column, got shape {Q.shape}")
    require(P.shape[0] >= Q.shape[0], "P needs at least as many rows as Q (card i answers question i), got "
            f"{P.shape[0]} < {Q.shape[0]}")
    require(not symmetric or P.shape[0] == Q.shape[0],
            f"symmetric=True needs a square table (M == B), got B={Q.shape[0]}, M={P.shape[0]}")
    with np.errstate(over="ignore"):
        S = Q @ P.T
    scaled_scores(S, tau, name="Q @ P.T")  # refuses a table that overflows, or overflows once divided by tau
    return S


@arguments(tau=temperature, W=finite_table, Xq=finite_table, Xp=finite_table)
def encoder_loss_and_grad(W: np.ndarray, Xq: np.ndarray, Xp: np.ndarray, tau: float) -> tuple[float, np.ndarray]:
    """Loss of the bi-encoder on one batch and its gradient dW (V, d), by hand.

    Forward: Q = unit(Xq W), P = unit(Xp W), loss = info_nce(Q P^T, tau).
    Backward: `info_nce_grads`, then `normalize_backward`, then dW = X^T dA
    for both sides (W is shared, so the two contributions add).
    """
    require(W.ndim == 2 and Xq.ndim == 2 and Xp.ndim == 2 and Xq.shape[1] == W.shape[0] and Xp.shape[1] == W.shape[0],
            f"Xq (B, V), Xp (M, V) and W (V, d) must fit, got {Xq.shape}, {Xp.shape}, {W.shape}")
    require(Xq.shape[0] > 0 and Xp.shape[0] >= Xq.shape[0], "Xp needs at least as many rows as Xq >= 1 (card i "
            f"answers question i), got {Xp.shape[0]} and {Xq.shape[0]}")
    with np.errstate(over="ignore"):
        Q, P = _unit(Xq @ W, "Xq @ W")[0], _unit(Xp @ W, "Xp @ W")[0]
    return info_nce(Q @ P.T, tau), _encoder_grad(W, Xq, Xp, tau)


def _encoder_grad(W: np.ndarray, Xq: np.ndarray, Xp: np.ndarray, tau: float) -> np.ndarray:
    """dW (V, d) of the batch loss: the backward pass that training runs every step, on checked arrays."""
    Q, q_norms = _unit(Xq @ W, "Xq @ W")
    P, p_norms = _unit(Xp @ W, "Xp @ W")
    dS = _table_grad(Q @ P.T, tau)  # = what info_nce_grads starts from
    dQ, dP = dS @ P, dS.T @ Q
    return Xq.T @ _backward(dQ, Q, q_norms) + Xp.T @ _backward(dP, P, p_norms)


def _gradient_problem(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.random((3, 6)), rng.random((5, 6)), rng.standard_normal((6, 4))


_SEED = partial(integer, minimum=0)


@arguments(seed=_SEED, tau=temperature, eps=positive)
def encoder_finite_difference_check(seed: int = 0, eps: float = 1e-6, tau: float = 0.5) -> float:
    """Largest |hand gradient - central finite difference| over every entry of W (6, 4)."""
    Xq, Xp, W = _gradient_problem(seed)
    _, dW = encoder_loss_and_grad(W, Xq, Xp, tau)
    worst = 0.0
    for idx in np.ndindex(W.shape):
        E = np.zeros_like(W)
        E[idx] = eps
        up, down = encoder_loss_and_grad(W + E, Xq, Xp, tau)[0], encoder_loss_and_grad(W - E, Xq, Xp, tau)[0]
        worst = max(worst, abs((up - down) / (2 * eps) - dW[idx]))
    return worst


@arguments(seed=_SEED, tau=temperature)
def autograd_check(seed: int = 0, tau: float = 0.5) -> float:
    """Largest |hand gradient - torch autograd gradient| of the same loss, float64."""
    Xq, Xp, W = _gradient_problem(seed)
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


def _model(model, name: str) -> BiEncoder:
    """A BiEncoder whose W has one finite row per word of its vocabulary."""
    W = finite_table(instance(model, name, BiEncoder, "a BiEncoder from train_bi_encoder").W, f"{name}.W")
    require(W.ndim == 2 and W.shape[0] == len(model.vocab) and W.shape[1] > 0, f"{name}.W must be (V, d) with one row "
            f"per word of {name}.vocab ({len(model.vocab)}), got shape {W.shape}")
    return model


def _topics(topics, name: str) -> tuple[str, ...]:
    """A non-empty list of topic names drawn from `TRAIN_TOPICS` and `UNSEEN_TOPICS`."""
    topics = tuple(checks.texts(topics, name, "a list of topic names"))
    unknown = [t for t in topics if t not in TRAIN_TOPICS + UNSEEN_TOPICS]
    require(topics and not unknown, f"{name} must be a non-empty list drawn from TRAIN_TOPICS and UNSEEN_TOPICS, "
            f"got unknown {unknown or 'nothing'}")
    return topics


def _accuracy(W: np.ndarray, topics: tuple[str, ...]) -> float:
    Q, R, L = (_unit(X @ W, "A")[0] for X in _exam_features(topics))
    return float(np.mean(np.sum(Q * R, axis=1) > np.sum(Q * L, axis=1)))


@arguments(model=_model, topics=_topics)
def look_alike_accuracy(model: BiEncoder, topics: Iterable[str] = UNSEEN_TOPICS) -> float:
    """Share of the topics' questions whose right card scores above its same-topic look-alike."""
    if model.vocab == VOCAB:
        return _accuracy(model.W, topics)
    questions, right, look_alike, _ = zip(*make_triples(topics))
    Q, R, L = model.encode(questions), model.encode(right), model.encode(look_alike)
    return float(np.mean(np.sum(Q * R, axis=1) > np.sum(Q * L, axis=1)))


@arguments(model=_model, topics=_topics)
def topic_accuracy(model: BiEncoder, topics: Iterable[str] = UNSEEN_TOPICS) -> float:
    """Share of the topics' questions whose right card beats every other topic's card of the same intent.

    The test the in-batch negatives train for: the wrong cards differ from the right one only by topic.
    """
    require(len(topics) >= 2, "topic_accuracy needs at least two topics: the wrong cards are the other topics' cards")
    right = 0
    for intent in INTENTS:
        C = model.encode([card(t, intent) for t in topics])  # (topics, d)
        for k, t in enumerate(topics):
            Q = model.encode([q.format(t=t) for q in QUESTION_TEMPLATES[intent]])
            S = Q @ C.T
            others = np.delete(S, k, axis=1)
            right += int(np.sum(S[:, k] > others.max(axis=1)))
    return right / (len(topics) * len(INTENTS) * len(QUESTION_TEMPLATES["howto"]))


def _batch(batch, name: str) -> int:
    """A batch of 2 to 12 questions: one per training topic at most."""
    batch = integer(batch, name, 2, MOST)
    require(batch <= len(TRAIN_TOPICS), f"{name} must be at most {len(TRAIN_TOPICS)} (one question per training topic), "
            f"got {batch}")
    return batch


def _draw_batch(rng: np.random.Generator, batch: int) -> tuple[int, np.ndarray, np.ndarray]:
    """One intent, ``batch`` different training topics, one question template per topic."""
    intent = int(rng.integers(len(INTENTS)))
    topics = rng.permutation(len(TRAIN_TOPICS))[:batch]
    return intent, topics, rng.integers(len(QUESTION_TEMPLATES["howto"]), size=batch)


@lru_cache(maxsize=64)
def _plan(seed: int, dim: int, batch: int, steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What ``seed`` draws for a run, in the order training draws it: the start W (V, d), then each
    step's intent (steps,), topics and question templates (steps, batch). Both models of a pair
    draw the same, so a pair draws once; the arrays are read-only."""
    rng = np.random.default_rng(seed)
    W = rng.normal(0.0, 1.0 / math.sqrt(dim), (len(VOCAB), dim))
    draws = [_draw_batch(rng, batch) for _ in range(steps)]
    plan = (W, np.array([d[0] for d in draws], dtype=np.int64).reshape(steps),
            np.array([d[1] for d in draws], dtype=np.int64).reshape(steps, batch),
            np.array([d[2] for d in draws], dtype=np.int64).reshape(steps, batch))
    for array in plan:
        array.setflags(write=False)
    return plan


@lru_cache(maxsize=1)
def _feature_rows() -> np.ndarray:
    """Every training question, then every card, as rows of one table (n, V): the rows a batch gathers."""
    questions, cards = _training_features()
    return np.concatenate([questions.reshape(-1, len(VOCAB)), cards.reshape(-1, len(VOCAB))])


def _batches(intents: np.ndarray, topics: np.ndarray, templates: np.ndarray, hard_negatives: bool) -> np.ndarray:
    """The word counts of every step's batch, (steps, B + M, V): B questions, then their B right cards
    (and, with hard negatives, their B look-alikes), gathered in one go."""
    n_intents, n_templates = len(INTENTS), len(QUESTION_TEMPLATES["howto"])
    intent = intents[:, None]
    questions = (topics * n_intents + intent) * n_templates + templates
    first_card = len(TRAIN_TOPICS) * n_intents * n_templates
    rows = [questions, first_card + topics * n_intents + intent]
    if hard_negatives:
        rows.append(first_card + topics * n_intents + (1 - intent))
    return _feature_rows()[np.concatenate(rows, axis=1)]


@arguments(hard_negatives=flag, seed=_SEED, dim=partial(integer, minimum=1, maximum=MOST), batch=_batch)
def first_batch(hard_negatives: bool, *, seed: int = 0, batch: int = 8, dim: int = 16) -> tuple[list[str], list[str]]:
    """The texts of the first training batch: (questions, cards); card i answers question i."""
    rng = np.random.default_rng(seed)
    rng.normal(0.0, 1.0 / math.sqrt(dim), (len(VOCAB), dim))  # the same draws as train_bi_encoder's start
    intent, topics, templates = _draw_batch(rng, batch)
    names = [TRAIN_TOPICS[t] for t in topics]
    questions = [QUESTION_TEMPLATES[INTENTS[intent]][k].format(t=t) for t, k in zip(names, templates)]
    cards = [card(t, INTENTS[intent]) for t in names]
    if hard_negatives:
        cards += [card(t, INTENTS[1 - intent]) for t in names]
    return questions, cards


@arguments(hard_negatives=flag, seed=_SEED, dim=partial(integer, minimum=1, maximum=MOST), batch=_batch,
           steps=partial(integer, minimum=0, maximum=MOST), tau=temperature, lr=positive,
           checkpoints=optional(partial(items, what="a list of step counts")), checkpoint_topics=_topics)
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
    wanted = set() if checkpoints is None else {integer(c, "checkpoints", 0) for c in checkpoints}
    require(checkpoints is None or (wanted and max(wanted) <= steps),
            lambda: f"checkpoints must be step counts between 0 and steps={steps}, got {sorted(wanted)}")
    W, curve = _train(hard_negatives, seed, steps, batch, tau, lr, dim, wanted, checkpoint_topics)
    return (BiEncoder(VOCAB, W), curve) if checkpoints is not None else BiEncoder(VOCAB, W)


def _train_step_by_step(hard_negatives: bool, seed: int, steps: int, batch: int, tau: float, lr: float, dim: int,
                        wanted: set[int], exam: tuple[str, ...]) -> tuple[np.ndarray, dict[int, float]]:
    """The loop of `train_bi_encoder` as a reader follows it: W after ``steps`` steps, and the curve.

    Each step takes its batch's questions and their right cards (and, with hard negatives, each
    question's look-alike card too), then one hand-derived gradient step (`_encoder_grad`, the
    backward pass of `encoder_loss_and_grad`). `_train`, which training runs, is this loop on
    buffers made once, with the same bits (tests/lessons/test_hard_negatives.py)."""
    W, intents, topics, templates = _plan(seed, dim, batch, steps)
    questions, cards = _training_features()  # (topics, 2, 5, V) and (topics, 2, V)
    curve = {0: _accuracy(W, exam)} if 0 in wanted else {}
    for step in range(steps):
        t, i = topics[step], intents[step]  # (batch,) topics, one intent
        Xq, Xp = questions[t, i, templates[step]], cards[t, i]  # (batch, V) each
        if hard_negatives:
            Xp = np.concatenate([Xp, cards[t, 1 - i]])  # (2 batch, V): the look-alikes join as negatives
        W = W - lr * _encoder_grad(W, Xq, Xp, tau)
        if step + 1 in wanted:
            curve[step + 1] = _accuracy(W, exam)
    return W, dict(sorted(curve.items()))


def _train(hard_negatives: bool, seed: int, steps: int, batch: int, tau: float, lr: float, dim: int,
           wanted: set[int], exam: tuple[str, ...]) -> tuple[np.ndarray, dict[int, float]]:
    """The hot loop of `train_bi_encoder`, on checked settings: W after ``steps`` steps and the curve.

    `_train_step_by_step` written out on buffers made once, with the same operations in the same
    order (so the same bits): the batch's rows are gathered before the loop, and the question and
    card rows are scaled to length 1 in one table."""
    require(1.0 / tau < 1e300, f"tau={tau!r} is too small: the scores / tau overflow float64")
    W0, intents, topics, templates = _plan(seed, dim, batch, steps)
    W, X = W0.copy(), _batches(intents, topics, templates, hard_negatives)
    B, M = batch, X.shape[1] - batch
    A, dU, back = np.empty((B + M, dim)), np.empty((B + M, dim)), np.empty((B + M, dim))
    dQ, dP, diagonal = dU[:B], dU[B:], slice(0, B * (M + 1), M + 1)
    curve = {step: _accuracy(W, exam) for step in wanted if step == 0}
    for step in range(steps):
        Xq, Xp = X[step, :B], X[step, B:]
        np.matmul(X[step], W, out=A)  # = Xq @ W over Xp @ W, row for row (a test holds the bits)
        U, norms = unit_rows(A, "X @ W row", return_lengths=True, why_zero=_NO_WORDS)  # each row on its own
        Q, P = U[:B], U[B:]
        G = Q @ P.T  # _table_grad(Q @ P.T, tau), inline and in place:
        G /= tau
        G -= np.maximum.reduce(G, axis=1, keepdims=True)
        G -= np.log(np.add.reduce(np.exp(G), axis=1, keepdims=True))
        np.exp(G, out=G)
        G.reshape(-1)[diagonal] -= 1.0
        G /= B * tau
        np.matmul(G, P, out=dQ)
        np.matmul(G.T, Q, out=dP)
        np.multiply(U, np.einsum("ij,ij->i", U, dU)[:, None], out=back)  # _backward, both sides at once
        np.subtract(dU, back, out=back)
        back /= norms
        grad = Xq.T @ back[:B]
        grad += Xp.T @ back[B:]
        grad *= lr
        W -= grad
        if step + 1 in wanted:
            curve[step + 1] = _accuracy(W, exam)
    return W, dict(sorted(curve.items()))


_SWEEP_SETTINGS = ("steps", "batch", "tau", "lr", "dim")


@arguments(seeds=partial(items, what="a list of integers >= 0",
                         each=partial(integer, name="seeds", minimum=0)))
def seed_sweep(seeds: Iterable[int] = range(10), **train_kwargs) -> dict[str, np.ndarray]:
    """Both models on each seed: look-alike accuracy on unseen and training topics, one array per key.

    ``train_kwargs`` are `train_bi_encoder`'s steps, batch, tau, lr and dim, checked before any training.
    """
    require(seeds, "seeds must name at least one seed")
    require(set(train_kwargs) <= set(_SWEEP_SETTINGS), f"seed_sweep passes only {', '.join(_SWEEP_SETTINGS)} to "
            f"train_bi_encoder, got {sorted(set(train_kwargs) - set(_SWEEP_SETTINGS))}")
    train_bi_encoder.check(True, **train_kwargs)  # every setting, before any training
    out: dict[str, list[float]] = {"in_batch": [], "hard": [], "in_batch_train": [], "hard_train": []}
    for s in seeds:
        for hard, key in ((False, "in_batch"), (True, "hard")):
            model = train_bi_encoder(hard, seed=s, **train_kwargs)
            out[key].append(_accuracy(model.W, UNSEEN_TOPICS))
            out[key + "_train"].append(_accuracy(model.W, TRAIN_TOPICS))
    return {k: np.array(v) for k, v in out.items()}


SLIDER_SEED = 10  # the lesson's steps slider trains a seed its ten-seed table (0..9) does not show
