"""What each training step sees: one epoch's batches, and the hard negative each row may bring.

In plain words: each step takes B training questions and their B answers; every question must
pick its own answer out of the batch (`labs.retrieval.training`). Two rules keep that honest:

- an answer is never twice in one batch (a copy would be punished as its own negative), so each
  epoch draws one question per distinct answer (`epoch_batches`), and a final batch of one
  pair is dropped (nothing to compare it against);
- a mined hard negative is a training document that the TF-IDF baseline ranks high for the
  question but that is not one of its answers (`mine_hard_negatives`), and never a positive of
  another row of the same batch (`batch_columns`).

`plan_batches` lays out every step of a run at once: the texts as dataset columns, each step's
row indices, and the step at which each epoch ends. It stops at ``max_steps``. `PlannedSteps`
hands those steps to the trainer in that order.

Shapes
------
=============  ================  ============================================
name           shape             meaning
=============  ================  ============================================
batch          B rows            (query, positive[, hard negative]) texts
columns        3 lists of texts  anchor, positive(, negative), row by row
steps          list of B ints    the rows of one step, in training order
=============  ================  ============================================

Arguments are trusted: `labs.retrieval.config.TrainConfig` has checked them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labs.retrieval.data import RetrievalData
from labs.retrieval.metrics import rank_documents, tfidf_scores

__all__ = ["epoch_batches", "mine_hard_negatives", "batch_columns", "BatchPlan", "plan_batches", "PlannedSteps"]


def epoch_batches(pairs: list[dict], batch_size: int, rng: np.random.Generator) -> list[list[dict]]:
    """One epoch: one random pair per distinct positive text, shuffled, cut into batches of ``batch_size``.

    No positive appears twice in a batch; a final batch of one pair is dropped.
    """
    by_positive: dict[str, list[dict]] = {}
    for pair in pairs:
        by_positive.setdefault(pair["positive"], []).append(pair)
    groups = list(by_positive.values())
    chosen = [g[rng.integers(len(g))] for g in groups]
    chosen = [chosen[i] for i in rng.permutation(len(chosen))]
    batches = [chosen[i:i + batch_size] for i in range(0, len(chosen), batch_size)]
    return [b for b in batches if len(b) > 1]


def mine_hard_negatives(data: RetrievalData, per_query: int = 5) -> dict[str, list[str]]:
    """Training query text -> up to ``per_query`` train doc ids the TF-IDF baseline ranks highest,
    verified not relevant (not a labelled positive of that query text, not the same text as one).

    Only training queries and training documents are used: no held-out label reaches training.
    """
    docs = [d for d in data.corpus if d["split"] == "train"]
    text_of = {d["doc_id"]: d["text"] for d in docs}
    relevant: dict[str, set[str]] = {}
    for pair in data.train_pairs:
        relevant.setdefault(pair["query"], set()).add(pair["doc_id"])
    for q in data.split_queries("train"):
        if q["text"] in relevant:
            relevant[q["text"]].update(q["relevant_doc_ids"])
    queries = sorted(relevant)
    ranked = rank_documents(tfidf_scores([d["text"] for d in docs], queries), list(text_of), queries)
    mined = {}
    for q in queries:
        positive_texts = {text_of[d] for d in relevant[q] if d in text_of}
        ok = [d for d in ranked[q] if d not in relevant[q] and text_of[d] not in positive_texts]
        mined[q] = ok[:per_query]
    return mined


def batch_columns(batch: list[dict], negatives: dict[str, list[str]] | None,
                  text_of: dict[str, str]) -> list[list[str]]:
    """Columns [queries, positives(, negatives)] of one batch, the queries as written in the data (the
    trainer adds the instruction); a negative never equals a batch positive.

    Without a safe negative for some row, the batch trains on its pairs only (two columns).
    """
    queries = [p["query"] for p in batch]
    positives = [p["positive"] for p in batch]
    if not negatives:
        return [queries, positives]
    taken_ids, taken_texts = {p["doc_id"] for p in batch}, set(positives)
    column = []
    for p in batch:
        pick = next((d for d in negatives.get(p["query"], [])
                     if d not in taken_ids and text_of[d] not in taken_texts), None)
        if pick is None:
            return [queries, positives]
        column.append(text_of[pick])
    return [queries, positives, column]


@dataclass
class BatchPlan:
    """Every step of a run: the texts as dataset columns, the rows of each step (one process's
    share each, in turn), the step at which each epoch ends, and the pairs per step."""

    columns: dict[str, list[str]]
    steps: list[list[int]]
    epoch_ends: list[int]
    global_batch: int


def plan_batches(data: RetrievalData, *, epochs: int, batch_size: int, seed: int, hard_negatives: bool,
                 max_steps: int | None = None, world: int = 1) -> BatchPlan:
    """Lay out a run's steps: `epoch_batches` for each epoch, with mined negatives if asked.

    One process: every batch of `epoch_batches`. W processes: only full global batches of W x B
    pairs (every process gathers the same shape), each cut into W chunks of B; chunk r goes to
    process r (how accelerate shards a batch sampler). Planning stops once ``max_steps`` steps are
    planned, so an epoch count far beyond it costs nothing, and ``max_steps`` never repeats an epoch.
    ``global_batch`` is the largest batch actually planned (at most the distinct positives).
    """
    rng = np.random.default_rng(seed)
    negatives = mine_hard_negatives(data, per_query=len(data.corpus)) if hard_negatives else None
    text_of = {d["doc_id"]: d["text"] for d in data.corpus}
    columns: dict[str, list[str]] = {"anchor": [], "positive": [], **({"negative": []} if negatives else {})}
    steps: list[list[int]] = []
    ends: list[int] = []
    largest = 0
    for _ in range(epochs):
        if max_steps is not None and len(steps) // world >= max_steps:
            break
        for batch in epoch_batches(data.train_pairs, batch_size * world, rng):
            if world > 1 and len(batch) < batch_size * world:
                continue
            if max_steps is not None and len(steps) // world >= max_steps:
                break
            cols = batch_columns(batch, negatives, text_of)
            if len(cols) != len(columns):
                raise ValueError(f"--hard-negatives: a batch of {len(batch)} holds every candidate negative of "
                                 "one of its questions; lower --batch-size")
            start = len(columns["anchor"])
            for name, col in zip(columns, cols):
                columns[name] += col
            size = batch_size if world > 1 else len(batch)
            steps += [list(range(s, s + size)) for s in range(start, start + len(batch), size)]
            largest = max(largest, len(batch))
        ends.append(len(steps) // world)
    if epochs and not steps:
        raise ValueError(f"no full global batch: {world} processes x --batch-size {batch_size} needs that "
                         "many distinct positives; lower --batch-size")
    return BatchPlan(columns, steps, ends, largest)


class PlannedSteps:
    """A batch sampler for the trainer: it yields the planned steps (lists of row indices) in order."""

    def __init__(self, steps: list[list[int]], batch_size: int) -> None:
        self.steps, self.batch_size, self.drop_last = steps, batch_size, False

    def __iter__(self):
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)


