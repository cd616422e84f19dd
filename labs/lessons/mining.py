"""Mining hard negatives for real: BM25 and an embedding model over a small support corpus.

In plain words: for every training question, search the corpus and keep
high-ranked cards that are not its answer; those are its hard negatives. The
corpus has three products with the same kinds of card (reset, warranty,
returns, login), so look-alikes exist: the same product with the wrong
intent. Two traps come with mining. A false negative: a second card that
truly answers a question (here a power-cycle card for the router question)
is mined as a "negative", and training then pushes a right answer away; it
is filtered by listing known positives or by a relative margin. A repeated
answer: two questions with the same card in one batch make that card a
negative of the other question; the no-duplicates batch sampler keeps them
apart.

Shapes
------
==============  ========================  ========================================
name            type                      meaning
==============  ========================  ========================================
CARDS           dict[str, str]            card id -> text (13 cards)
PAIRS           tuple[(str, str)]         (question, card id of its answer)
scores          (Q, N) array              question x card similarity, N = len(cards)
mined           dict[str, list[str]]      question -> hard-negative card ids, best first
batches         list[list[int]]           rows of PAIRS in each training batch
==============  ========================  ========================================

Relations: `mine_by_scores` is the rule `sentence_transformers.util.mine_hard_negatives`
applies by default (rank, drop the question's positives, keep the top n);
`mine_with_model` calls that function itself. Keyword (BM25) scores come
from the retrieval tool's `labs.retrieval.metrics.bm25_scores`, passed to `mine_by_scores`. `no_duplicate_batches` is
sentence-transformers' ``NoDuplicatesBatchSampler`` (``BatchSamplers.NO_DUPLICATES``
in the trainer). The loss is `labs.lessons.infonce.info_nce`.

`same_batch_chance` is the exact chance that plain shuffling puts two given pairs in one batch.
The real-data experiment's results are read by ``labs.classroom.results``, not here.

Lesson: ``notebooks/06_mining.ipynb``.
"""

from __future__ import annotations

import contextlib
import io
import math
import random
from functools import partial
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from labs.lessons.infonce import info_nce
from labs.checks import (MOST, arguments, finite_table, integer, items, random_seed, require, scaled_scores,
                         temperature, texts)

if TYPE_CHECKING:  # sentence-transformers is slow to import; loaded when needed
    from sentence_transformers import SentenceTransformer

__all__ = ["CARDS", "PAIRS", "ALSO_ANSWERS", "ROUTER_QUESTION", "product_of", "mine_by_scores",
           "embedding_scores", "mine_with_model", "row_loss", "dedupe_pairs", "shuffled_batches",
           "no_duplicate_batches", "repeated_answer_batches", "same_batch_chance"]

CARDS = {
    "aurora-reset": "Aurora router keeps dropping the connection: hold the reset button for ten seconds, "
                    "wait for the light to turn blue, then reconnect.",
    "aurora-powercycle": "Aurora router disconnects often: power it off at the wall for ten seconds and turn it back on.",
    "aurora-warranty": "Aurora router warranty: two years of cover for hardware faults; water damage and drops are not covered.",
    "aurora-return": "Returning an Aurora router: unopened boxes can be sent back within 30 days for a full refund.",
    "aurora-firmware": "Updating Aurora router firmware: open the app, choose Settings, then Install update.",
    "beacon-reset": "Beacon phone frozen or not charging: hold the power and volume buttons together for "
                    "fifteen seconds to restart it.",
    "beacon-warranty": "Beacon phone warranty: one year of cover for manufacturing faults; cracked screens are "
                       "repaired for a fee.",
    "beacon-return": "Returning a Beacon phone: you can send it back within 14 days if it is undamaged.",
    "beacon-passcode": "Forgot your Beacon phone passcode: use account recovery on the web to erase the phone "
                       "and set it up again.",
    "cirrus-reset": "Cirrus laptop will not start: unplug the charger, hold the power button for thirty seconds, "
                    "then plug it in and start it.",
    "cirrus-warranty": "Cirrus laptop warranty: three years of cover, including the battery for the first year.",
    "cirrus-return": "Returning a Cirrus laptop: business customers can return it within 30 days; opened "
                     "software is not refunded.",
    "cirrus-password": "Forgot the Cirrus laptop login password: restart, press F8 and choose Reset password "
                       "with your recovery key.",
}
ROUTER_QUESTION = "my aurora router keeps disconnecting, how do i fix it"
PAIRS = (
    (ROUTER_QUESTION, "aurora-reset"),
    ("is water damage on my aurora router covered", "aurora-warranty"),
    ("can i get my money back for an aurora router", "aurora-return"),
    ("how do i update the aurora router software", "aurora-firmware"),
    ("my beacon phone is frozen", "beacon-reset"),
    ("does the beacon warranty cover a cracked screen", "beacon-warranty"),
    ("how long do i have to return a beacon phone", "beacon-return"),
    ("i forgot my beacon phone passcode", "beacon-passcode"),
    ("my cirrus laptop won't turn on", "cirrus-reset"),
    ("is the cirrus laptop battery under warranty", "cirrus-warranty"),
    ("can i return a cirrus laptop i opened", "cirrus-return"),
    ("i forgot my cirrus laptop password", "cirrus-password"),
    ("beacon phone stuck on the logo and will not respond", "beacon-reset"),  # a second question, same answer
)
# Cards that also answer a question, although the pairs name only one: the false-negative trap.
ALSO_ANSWERS = {ROUTER_QUESTION: ("aurora-powercycle",)}


def product_of(card_id: str) -> str:
    """The product a card is about: ``"aurora-reset"`` -> ``"aurora"``."""
    if not isinstance(card_id, str):
        raise ValueError(f"card_id must be a card id such as 'aurora-reset', got {card_id!r:.40}")
    return card_id.split("-", 1)[0]


def _pair_list(pairs: Iterable[tuple[str, str]], name: str = "pairs") -> list[tuple[str, str]]:
    """A list of (question, card id) pairs of strings, or ValueError naming ``name``."""
    out = items(pairs, name, "a list of (question, card id) pairs")
    bad = next((i for i, p in enumerate(out) if isinstance(p, (str, bytes)) or not isinstance(p, Sequence)
                or len(p) != 2 or not isinstance(p[0], str) or not isinstance(p[1], str)), None)
    require(bad is None, lambda: f"{name}[{bad}] must be a (question text, card id) pair, got {out[bad]!r:.60}")
    return [tuple(p) for p in out]


def _card_pairs(pairs: Sequence[tuple[str, str]], cards: Mapping[str, str]) -> list[tuple[str, str]]:
    """``pairs`` as a non-empty list of (question, card id) tuples whose ids are keys of ``cards``."""
    out = items(pairs, "pairs", "a list of (question, card id) pairs")
    out = [tuple(p) if isinstance(p, Sequence) and not isinstance(p, (str, bytes)) else p for p in out]
    require(out, "pairs must hold at least one (question, card id) pair")
    bad = next((i for i, p in enumerate(out) if not isinstance(p, tuple) or len(p) != 2
                or not isinstance(p[0], str) or not isinstance(p[1], str) or p[1] not in cards), None)
    require(bad is None, lambda: f"pairs[{bad}] must be (question text, a card id of cards), got {out[bad]!r:.80}")
    return out


def _known(known: Mapping[str, Sequence[str]] | None) -> dict[str, list[str]]:
    """known_positives as {question: [card id, ...]}, or ValueError naming it."""
    if known is None:
        return {}
    if not isinstance(known, Mapping):
        raise ValueError(f"known_positives must map a question to a list of card ids, got {type(known).__name__}")
    out = {}
    for q, extra in known.items():
        if not isinstance(q, str):
            raise ValueError(f"known_positives must map question texts to card ids, got the key {q!r:.40}")
        if isinstance(extra, (str, bytes)):
            raise ValueError(f"known_positives[{q!r}] must be a list of card ids, not one string")
        out[q] = texts(extra, f"known_positives[{q!r}]")
    return out


def _positives(pairs: list[tuple[str, str]], known: dict[str, list[str]]) -> dict[str, set[str]]:
    positives: dict[str, set[str]] = {}
    for q, c in pairs:
        positives.setdefault(q, set()).add(c)
    for q, extra in known.items():
        positives.setdefault(q, set()).update(extra)
    return positives


def mine_by_scores(scores: np.ndarray, pairs: Sequence[tuple[str, str]], card_ids: Sequence[str],
                   num_negatives: int = 2, known_positives: Mapping[str, Sequence[str]] | None = None) -> dict[str, list[str]]:
    """The mining rule by hand: per question, rank the cards, drop its positives, keep the first ``num_negatives``.

    ``scores`` (Q, N) has one row per distinct question of ``pairs`` in order of
    first appearance. Equal scores keep the order of ``card_ids``. ``scores`` must be real, finite
    numbers; ``card_ids`` distinct strings.
    """
    card_ids = texts(card_ids, "card_ids")
    if len(set(card_ids)) != len(card_ids):
        repeated = sorted({c for c in card_ids if card_ids.count(c) > 1})
        raise ValueError(f"card_ids must be distinct (one per column of scores), got {repeated} more than once")
    pairs = _card_pairs(pairs, dict.fromkeys(card_ids, ""))
    positives = _positives(pairs, _known(known_positives))
    questions = list(dict.fromkeys(q for q, _ in pairs))
    scores = finite_table(scores, "scores")
    if scores.shape != (len(questions), len(card_ids)):
        raise ValueError(f"scores must be (questions, cards) = ({len(questions)}, {len(card_ids)}), got {scores.shape}")
    num_negatives = integer(num_negatives, "num_negatives", 1, MOST)
    mined = {}
    for q, row in zip(questions, scores):
        order = np.argsort(-row, kind="stable")
        mined[q] = [card_ids[j] for j in order if card_ids[j] not in positives[q]][:num_negatives]
    return mined


def embedding_scores(model: SentenceTransformer, questions: Sequence[str], cards: Mapping[str, str] = CARDS) -> np.ndarray:
    """Cosines (Q, N) between the questions and the cards under an embedding model."""
    if isinstance(questions, str):
        raise ValueError("questions must be a non-empty list of strings, not one string")
    questions = texts(questions, "questions")
    if not questions:
        raise ValueError("questions must be a non-empty list of strings")
    cards = _cards(cards)
    require(callable(getattr(model, "encode", None)),
            lambda: f"model must be a SentenceTransformer (something with .encode), got {type(model).__name__}")
    Q = model.encode(list(questions), normalize_embeddings=True, show_progress_bar=False, convert_to_numpy=True)
    C = model.encode(list(cards.values()), normalize_embeddings=True, show_progress_bar=False, convert_to_numpy=True)
    return (Q @ C.T).astype(np.float64)


def _cards(cards: Mapping[str, str]) -> Mapping[str, str]:
    if not isinstance(cards, Mapping) or not cards:
        raise ValueError(f"cards must be a non-empty dict of card id -> text, got {cards!r:.40}")
    for cid, text in cards.items():
        if not isinstance(cid, str) or not isinstance(text, str):
            raise ValueError(f"cards must map card ids (strings) to texts (strings), got {cid!r:.30}: {text!r:.30}")
    return cards


@contextlib.contextmanager
def _no_progress_bars(model: SentenceTransformer):
    """The library asks for progress bars while it encodes; this turns them off on the model for a while."""
    names = ("encode_query", "encode_document")
    own = {name: vars(model)[name] for name in names if name in vars(model)}
    originals = {name: getattr(model, name) for name in names}

    def quiet(encode):
        return lambda *args, **kwargs: encode(*args, **{**kwargs, "show_progress_bar": False})

    for name, encode in originals.items():
        setattr(model, name, quiet(encode))
    try:
        yield
    finally:
        for name in names:
            if name in own:
                setattr(model, name, own[name])
            else:
                delattr(model, name)  # back to the class's own method


def mine_with_model(model: SentenceTransformer, pairs: Sequence[tuple[str, str]] = PAIRS,
                    cards: Mapping[str, str] = CARDS, *, num_negatives: int = 2,
                    known_positives: Mapping[str, Sequence[str]] | None = None, seed: int | None = 0,
                    **options) -> dict[str, dict]:
    """Hard negatives from an embedding model with sentence-transformers' ``mine_hard_negatives``.

    Known positives become extra (question, card) rows: the library treats
    every card paired with a question as one of its positives and never mines
    it. ``options`` pass through (``relative_margin``, ``range_min``,
    ``range_max``, ``sampling_strategy``, ``cache_folder``...). The library's
    ``sampling_strategy="random"`` draws from Python's ``random``, which
    ``seed`` (unless None) seeds first so the draw repeats. Returns
    question -> {"negatives": card ids, "scores": [positive, negatives...]}
    for each question that got ``num_negatives`` negatives.
    """
    from datasets import Dataset
    from sentence_transformers.util import mine_hard_negatives

    cards = _cards(cards)
    require(callable(getattr(model, "encode", None)),
            lambda: f"model must be a SentenceTransformer (something with .encode), got {type(model).__name__}")
    pairs = _card_pairs(pairs, cards)
    num_negatives = integer(num_negatives, "num_negatives", 1, MOST)
    if seed is not None:
        seed = random_seed(seed, "seed")
    rows = pairs + [(q, c) for q, extra in _known(known_positives).items() for c in extra if (q, c) not in pairs]
    for q, c in rows:
        if c not in cards:
            raise ValueError(f"known_positives names {c!r} for {q!r}, which is not a card id")
    data = Dataset.from_dict({"anchor": [q for q, _ in rows], "positive": [cards[c] for _, c in rows]})
    id_of = {text: cid for cid, text in cards.items()}
    if seed is not None:
        random.seed(seed)
    # verbose=False, and its print-outs go too: sentence-transformers 5.x prints the average number of
    # positives per query whatever `verbose` says (6.x asks for verbose), so the two would print apart.
    with _no_progress_bars(model), contextlib.redirect_stdout(io.StringIO()):
        out = mine_hard_negatives(data, model, corpus=list(cards.values()), num_negatives=num_negatives,
                                  output_format="n-tuple", output_scores=True, verbose=False, **options)
    mined: dict[str, dict] = {}
    for row in out:
        if row["anchor"] not in mined:  # one entry per question: the first pair's row
            negatives = [id_of[row[f"negative_{k + 1}"]] for k in range(num_negatives)]
            mined[row["anchor"]] = {"negatives": negatives, "scores": [float(s) for s in row["scores"]]}
    return mined


def row_loss(scores: Sequence[float], tau: float = 0.05) -> tuple[float, float]:
    """InfoNCE loss of one question whose scores list its positive first, and the positive's softmax share.

    ``scores`` is one row (1-D) of real, finite numbers: the positive, then at least one negative.
    """
    tau = temperature(tau)
    s = finite_table(scores, "scores")
    if s.ndim != 1 or s.size < 2:
        raise ValueError(f"scores needs the positive and at least one negative, as one row (1-D); got shape {s.shape}")
    row = s.reshape(1, -1)
    scaled_scores(row, tau, name="scores")  # refuses a tau so small that scores / tau overflows, naming scores
    loss = info_nce(row, tau)
    return loss, math.exp(-loss)


def dedupe_pairs(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop exact repeats of a (question, card) pair, keeping the first; order is kept."""
    return list(dict.fromkeys(_pair_list(pairs)))


@arguments(n=partial(integer, minimum=0, maximum=MOST), batch_size=partial(integer, minimum=2, maximum=MOST),
           seed=partial(integer, minimum=0))
def shuffled_batches(n: int, batch_size: int, seed: int = 0) -> list[list[int]]:
    """Plain shuffled batches of rows 0..n-1 (what a default sampler does): nothing keeps answers apart."""
    order = np.random.default_rng(seed).permutation(n).tolist()
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]


def no_duplicate_batches(pairs: Sequence[tuple[str, str]] = PAIRS, cards: Mapping[str, str] = CARDS,
                         batch_size: int = 4, seed: int = 0) -> list[list[int]]:
    """Batches from sentence-transformers' ``NoDuplicatesBatchSampler``: no text twice in one batch."""
    import torch
    from datasets import Dataset
    from sentence_transformers.base.sampler import NoDuplicatesBatchSampler

    cards = _cards(cards)
    pairs = _card_pairs(pairs, cards)
    batch_size = integer(batch_size, "batch_size", 2, MOST)
    seed = random_seed(seed, "seed")
    data = Dataset.from_dict({"anchor": [q for q, _ in pairs], "positive": [cards[c] for _, c in pairs]})
    sampler = NoDuplicatesBatchSampler(data, batch_size=batch_size, drop_last=False,
                                       generator=torch.Generator(), seed=seed)
    return [list(b) for b in sampler]


def repeated_answer_batches(batches: Sequence[Sequence[int]], pairs: Sequence[tuple[str, str]] = PAIRS) -> list[int]:
    """Indices of the batches in which one card answers two of the batch's questions."""
    pairs = _pair_list(pairs)
    if isinstance(batches, (str, bytes, Mapping)) or not isinstance(batches, Iterable):
        raise ValueError(f"batches must be a list of batches of row indices, got {batches!r:.40}")
    batches = list(batches)
    for k, batch in enumerate(batches):
        if isinstance(batch, (str, bytes, Mapping)) or not isinstance(batch, Iterable):
            raise ValueError(f"batches[{k}] must be a list of row indices, got {batch!r:.40}")
        for i in batch:
            if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) or not 0 <= i < len(pairs):
                raise ValueError(f"batches[{k}] holds {i!r:.20}, which is not a row of pairs (0..{len(pairs) - 1})")
    out = []
    for k, batch in enumerate(batches):
        answers = [pairs[i][1] for i in batch]
        if len(set(answers)) < len(answers):
            out.append(k)
    return out


def same_batch_chance(n: int, batch_size: int) -> float:
    """Exact chance that plain shuffling of ``n`` rows into batches of ``batch_size`` (the last one
    shorter) puts two given rows in the same batch: the same-batch pairs over all pairs of rows."""
    n, batch_size = integer(n, "n", 2, MOST), integer(batch_size, "batch_size", 2, MOST)
    sizes = [batch_size] * (n // batch_size) + ([n % batch_size] if n % batch_size else [])
    return sum(s * (s - 1) / 2 for s in sizes) / (n * (n - 1) / 2)

