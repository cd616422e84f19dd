"""Per test query, where the untouched systems of the real-data experiment rank its answer.

``benchmarks/docs_experiment.py`` stores, for every system, its test scores averaged over the
queries (and the bootstrap intervals of those averages), not each query's own result. A paired
comparison done by hand needs the per-query numbers. This script rebuilds the experiment's test
split with the experiment's own code (its `SPLITS`, `view_of`, the packaged MiniLM run through
its `MiniLMStart` over the same texts in the same order, its `StaticStart`, and the course's
TF-IDF and BM25 rankers) and writes, for each of the 636 test queries, the rank of its one
answer among the split's documents (1 = first) under:

==========  ==================================================================
minilm      all-MiniLM-L6-v2 as packaged (the untouched MiniLM start)
static      the untouched static start (mean of MiniLM's input token vectors)
bm25        BM25 (``labs.retrieval.metrics``)
tfidf       TF-IDF (``labs.retrieval.metrics``)
==========  ==================================================================

Nothing here trains and nothing is random. The file also records each system's MRR@10 and
Recall@1 computed from the ranks, and the experiment's stored values beside them: the two agree
(a test holds them together), so these ranks are the ones behind the experiment's numbers.

    nice -n 5 python benchmarks/docs_ranks.py --data /path/to/docs    # reuse a built data folder
    nice -n 5 python benchmarks/docs_ranks.py                         # build the data (minutes)
    python benchmarks/docs_ranks.py --quick --out /tmp/ranks.json     # a small slice, seconds

``--data`` must hold the files the experiment used: their SHA-256 are checked against the
committed results file (not in ``--quick``). The file records the versions, the git commit, the
SHA-256 of the code files and the command, as the experiment's does.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

for _name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_name, "1")
os.environ.setdefault("TQDM_DISABLE", "1")

import numpy as np
import torch

from labs.retrieval.data import load_dataset
from labs.retrieval.docs_corpus import build_docs_dataset
from labs.retrieval.metrics import baseline_rankings
from labs.retrieval.models import load_minilm

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "docs_ranks.json"
EXPERIMENT = ROOT / "benchmarks" / "results" / "docs_experiment.json"
CODE_FILES = ("benchmarks/docs_ranks.py", "benchmarks/docs_experiment.py", "labs/retrieval/docs_corpus.py",
              "labs/retrieval/metrics.py")
COMMAND = "nice -n 5 python benchmarks/docs_ranks.py"
SYSTEMS = ("minilm", "static", "bm25", "tfidf")
SCHEMA = 1


def experiment_module():
    """benchmarks/docs_experiment.py as a module (its data build, views and starts)."""
    spec = importlib.util.spec_from_file_location("docs_experiment", ROOT / "benchmarks" / "docs_experiment.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def run(args) -> dict:
    wall0, load0 = time.perf_counter(), os.getloadavg()
    exp = experiment_module()
    cpu0 = exp.cpu_seconds()
    torch.set_num_threads(args.threads)
    stored = json.loads(EXPERIMENT.read_text(encoding="utf-8")) if not args.quick else None
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.data) if args.data else Path(tmp) / "docs"
        if not args.data:
            build_docs_dataset(folder, exp.SPLITS, max_per_library=12 if args.quick else None)
        elif not (folder / "metadata.json").is_file():
            raise SystemExit(f"--data {args.data}: no metadata.json there (not a docs data folder)")
        data = load_dataset(folder)
        hashes = dict(data.sha256)
    if stored is not None and hashes != stored["data"]["sha256"]:
        raise SystemExit(f"--data {args.data or '(built)'}: its files' SHA-256 differ from the experiment's "
                         f"(benchmarks/results/docs_experiment.json data.sha256); these ranks would not be its")
    test, val = exp.view_of(data, "test", None), exp.view_of(data, "val", None)
    train_docs = [d for d in data.corpus if d["split"] == "train"]
    base = load_minilm()
    minilm = exp.MiniLMStart(base, exp.FROZEN_LAYERS, "cpu", exp.MAX_SEQ_LENGTH)
    # The texts go through the frozen model in the experiment's order (training texts first, then
    # validation and test together), so each text is embedded in the same padded batch as there.
    minilm.prepare([p["query"] for p in data.train_pairs] + [d["text"] for d in train_docs])
    minilm.prepare(val["query_texts"] + val["doc_texts"] + test["query_texts"] + test["doc_texts"])
    static = exp.StaticStart(base, "cpu")
    scored = {"minilm": (minilm.untouched(test["query_texts"]), minilm.untouched(test["doc_texts"])),
              "static": (exp.embed(static, test["query_texts"]), exp.embed(static, test["doc_texts"]))}
    ranks = {}
    for name, (q, d) in scored.items():
        ranks[name] = answer_ranks(exp.rankings_of(q, d, test, k=None), test["qrels"], test["query_ids"])
    queries = [{"query_id": q, "text": t} for q, t in zip(test["query_ids"], test["query_texts"])]
    for method in ("bm25", "tfidf"):
        ranks[method] = answer_ranks(baseline_rankings(method, test["docs"], queries), test["qrels"],
                                     test["query_ids"])
    check = {name: from_ranks(r) for name, r in ranks.items()}
    if stored is not None:
        for name in SYSTEMS:
            block = (stored["baselines"][name] if name in stored["baselines"]
                     else stored["starts"][name]["untouched"]["test"])["overall"]
            check[name]["stored"] = {m: block[m]["mean"] for m in ("mrr@10", "recall@1")}
    wall, cpu = time.perf_counter() - wall0, exp.cpu_seconds() - cpu0
    results = {
        "schema": SCHEMA,
        "command": COMMAND + (" --quick" if args.quick else "") + (" --data DIR" if args.data else ""),
        "quick": bool(args.quick),
        "what": "per test query, the 1-based rank of its one answer among the test split's documents, under "
                "the untouched systems of benchmarks/docs_experiment.py",
        "systems": {"minilm": "all-MiniLM-L6-v2 as packaged (the untouched MiniLM start)",
                    "static": "the untouched static start (mean of MiniLM's input token vectors)",
                    "bm25": "BM25 (labs.retrieval.metrics)", "tfidf": "TF-IDF (labs.retrieval.metrics)"},
        "test_query_ids": test["query_ids"],
        "test_documents": len(test["doc_ids"]),
        "ranks": ranks,
        "check": check,
        "data_sha256": hashes,
        "versions": exp.versions(),
        "code": {"git_commit": exp.git_commit(),
                 "sha256": {name: exp.sha256_file(ROOT / name) for name in CODE_FILES}},
        "machine": {"cpus": os.cpu_count(), "load_average_start": [round(x, 2) for x in load0],
                    "load_average_end": [round(x, 2) for x in os.getloadavg()]},
        "run_time_s": round(wall), "cpu_time_s": round(cpu),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return results


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(OUT), help="ranks JSON file (overwritten)")
    p.add_argument("--data", help="an existing docs data folder (default: build one in a temporary folder)")
    p.add_argument("--quick", action="store_true", help="a small slice (12 pairs per library), no check")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    args = p.parse_args(argv)
    if args.threads < 1:
        p.error("--threads must be >= 1")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    results = run(args)
    for name, row in results["check"].items():
        was = row.get("stored")
        print(f"{name:<7} MRR@10 {row['mrr@10']:.4f}  Recall@1 {row['recall@1']:.4f}"
              + (f"   (experiment: {was['mrr@10']:.4f}, {was['recall@1']:.4f})" if was else ""))
    print(f"run time {results['run_time_s']} s wall, {results['cpu_time_s']} s CPU; wrote {args.out}")
    return results


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
