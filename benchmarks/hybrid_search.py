"""Benchmark: lexical, dense and combined ranking, and whole against windowed documents, on the same queries.

    python benchmarks/hybrid_search.py [--out book/hybrid-search.txt [--overwrite]] [--quick]

Everything through the course's command line and its library, in a temporary folder:

1. Data: the help-desk fixture (``make-data``) and the docstrings of installed libraries
   (``make-data --from-docs``: train scipy and torch, validate numpy, test scikit-learn).
2. Runs (``train``), each of the packaged all-MiniLM-L6-v2: on the help desk untouched
   (``--epochs 0``) and fine-tuned with lesson 7's CPU settings (4 epochs, batches of 16, learning
   rate 5e-5, seed 0, checkpoint chosen on validation); on the docstrings untouched, at the default
   ``--max-length 128`` with windows of 96 tokens every 48, and at ``--max-length 64`` with windows
   of 48 every 24 (a tighter limit, standing in for longer documents).
3. Each run's test queries ranked by BM25, the model's cosine (dense) and both fused (hybrid:
   reciprocal rank fusion, k = 60, and a weighted sum of min-max normalised scores, 0.5 each),
   and for the windowed runs by the whole document's vector, its best window (max) and the mean
   of its windows; MRR@10 and Recall@1, and the paired bootstrap intervals (2,000 resamples of
   the queries, seed 0) of the MRR@10 differences.

Prints the tables (date and machine at the top) and with ``--out`` writes them, as the
practitioner's guide includes them. ``--quick`` (a smoke run) keeps 40 docstring pairs per
library and trains 2 steps; ``--reports FILE`` saves what was measured, and ``--render
--reports FILE`` prints the tables again without measuring. The committed run took 51 minutes on
a shared 2-core machine (load average 13 to 16, other jobs running).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TQDM_DISABLE", "1")

LESSON7 = ["--epochs", "4", "--batch-size", "16", "--lr", "5e-5", "--seed", "0"]  # tools/live_model.py's settings


def labs(*argv: str) -> str:
    """``python -m labs ARGV`` in this process; its printed output (it must succeed)."""
    from labs.retrieval.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([str(a) for a in argv])
    if code != 0:
        raise SystemExit(f"python -m labs {' '.join(map(str, argv))} failed with exit status {code}")
    return out.getvalue()


def score(run: Path, data: Path, fusion: str) -> dict:
    """The test split's report (systems, differences, truncation) of one run, without writing."""
    from labs.retrieval.data import load_dataset
    from labs.retrieval.index import Ranking, score_split, load_run

    report, _ = score_split(load_run(run), load_dataset(data), "test", 64, Ranking("dense", fusion=fusion))
    return report


def cell(report: dict, name: str) -> str:
    m = report["systems"][name]
    return f"{m['mrr@10']:.3f} ({m['recall@1']:.2f})"


def interval(report: dict, name: str) -> str:
    d = report["differences"][name]
    return f"{d['mrr@10']:+.3f} ({d['low']:+.3f} to {d['high']:+.3f})"


def machine() -> list[str]:
    import sentence_transformers
    import torch

    cpu = next((x.split(":", 1)[1].strip() for x in Path("/proc/cpuinfo").read_text().splitlines()
                if x.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() \
        else platform.processor()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    return [f"run {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC on {cpu}, {os.cpu_count()} logical cores, "
            f"load average {load}", f"Python {platform.python_version()}, torch {torch.__version__}, "
            f"sentence-transformers {sentence_transformers.__version__}"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="also write the tables to this file (e.g. book/hybrid-search.txt)")
    p.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    p.add_argument("--quick", action="store_true", help="a smoke run: 40 pairs per library, 2 training steps")
    p.add_argument("--reports", help="also save the measured reports as JSON here; with --render, read them from here "
                   "instead of measuring")
    p.add_argument("--render", action="store_true", help="print (and --out) the tables of saved --reports")
    p.add_argument("--only", choices=("help-desk", "docstrings"),
                   help="measure this task again and keep the other's rows from the saved --reports")
    a = p.parse_args()
    if a.only and not (a.reports and Path(a.reports).is_file()):
        p.error("--only needs --reports FILE, a saved run whose other rows it keeps")
    if a.out and Path(a.out).exists() and not a.overwrite:
        p.error(f"{a.out} exists; pass --overwrite to replace it")
    quick_docs = ["--max-per-library", "40"] if a.quick else []
    quick_train = ["--max-steps", "2"] if a.quick else []

    if a.render:
        saved = json.loads(Path(a.reports).read_text())
        render(a, {tuple(k.split("|")): v for k, v in saved["rrf"].items()},
               {tuple(k.split("|")): v for k, v in saved["weighted"].items()}, saved["machine"])
        return
    header = machine()
    with tempfile.TemporaryDirectory(prefix="hybrid-search-") as tmp:
        tmp = Path(tmp)
        help_data, docs = tmp / "help", tmp / "docs"
        if a.only != "docstrings":
            labs("make-data", "--out", help_data)
        if a.only != "help-desk":
            labs("make-data", "--from-docs", "--out", docs, *quick_docs)
        runs = {
            ("help-desk", "MiniLM untouched"): (help_data, ["--epochs", "0"]),
            ("help-desk", "MiniLM fine-tuned"): (help_data, [*LESSON7, *quick_train]),
            ("docstrings", "MiniLM untouched"): (docs, ["--epochs", "0", "--chunk", "96", "--stride", "48"]),
            ("docstrings", "same, limit 64"): (docs, ["--epochs", "0", "--max-length", "64", "--chunk", "48",
                                                      "--stride", "24"]),
        }
        reports, weighted, order = {}, {}, list(runs)
        if a.only:  # the other task's rows as the saved run measured them, with that run's header line
            saved = json.loads(Path(a.reports).read_text())
            for name, into in (("rrf", reports), ("weighted", weighted)):
                into.update({tuple(k.split("|")): v for k, v in saved[name].items() if not k.startswith(a.only + "|")})
            header = [f"{a.only} rows: {header[0]}", f"other rows: {saved['machine'][0].removeprefix('other rows: ')}",
                      *header[1:]]
            runs = {key: value for key, value in runs.items() if key[0] == a.only}
        for i, (key, (data, flags)) in enumerate(runs.items()):
            run = tmp / f"run{i}"
            print(f"training {key[0]}, {key[1]}: train {' '.join(flags)}", file=sys.stderr, flush=True)
            labs("train", "--data", data, "--out", run, *flags)
            reports[key] = score(run, data, "rrf")
            weighted[key] = score(run, data, "weighted")
        reports, weighted = ({key: rows[key] for key in order} for rows in (reports, weighted))
    if a.reports:
        Path(a.reports).write_text(json.dumps({"machine": header, "rrf": {"|".join(k): v for k, v in reports.items()},
                                               "weighted": {"|".join(k): v for k, v in weighted.items()}}))
    render(a, reports, weighted, header)


def render(a, reports: dict, weighted: dict, header: list[str]) -> None:
    """Print the three tables (and write them to ``a.out``)."""
    main_rows = list(reports)[:3]
    lines = header + [
        "",
        "1. Test queries ranked by BM25, the model's cosine (dense) and both fused:",
        "   MRR@10 (Recall@1). hybrid: reciprocal rank fusion, k = 60; weighted: 0.5 x each",
        "   score min-max normalised per query. Whole documents, one vector each.",
        "",
        f"   {'task':<11} {'model':<18} {'queries':>7}  {'bm25':<12} {'dense':<12} {'hybrid':<12} weighted",
    ]
    for key in main_rows:
        r = reports[key]
        lines.append(f"   {key[0]:<11} {key[1]:<18} {r['queries']:>7}  {cell(r, 'bm25'):<12} {cell(r, 'dense'):<12} "
                     f"{cell(r, 'hybrid'):<12} {cell(weighted[key], 'hybrid')}")
    lines += ["", "2. Paired differences in MRR@10 on the same queries, with 95% bootstrap intervals",
              "   (2,000 resamples of the queries); an interval that holds 0 is no detected difference.", ""]
    for title, name, source in (("hybrid - dense", "hybrid - dense", reports),
                                ("weighted - dense", "hybrid - dense", weighted),
                                ("hybrid - bm25", "hybrid - bm25", reports), ("dense - bm25", "dense - bm25", reports)):
        lines.append(f"   {title}")
        for key in main_rows:
            lines.append(f"     {key[0]:<11} {key[1]:<18} {interval(source[key], name)}")
    lines += ["", "3. Long documents (docstrings, MiniLM untouched): what the length limit cuts, and windows",
              "   (dense MRR@10 by the whole document's vector, its best window, the mean of its windows).", ""]
    for key, (tokens, stride) in ((("docstrings", "MiniLM untouched"), (96, 48)),
                                  (("docstrings", "same, limit 64"), (48, 24))):
        r = reports[key]
        cut = r["truncation"]["documents"]
        lines += [f"   limit {cut['max_length']} tokens: {cut['over']} of {cut['texts']} documents over it,",
                  f"     {cut['cut_share']:.1%} of their tokens cut ({cut['cut_share_all']:.1%} of all tokens)",
                  f"     windows of {tokens} tokens every {stride}: whole {r['systems']['dense']['mrr@10']:.3f}, "
                  f"max {r['systems']['dense/max']['mrr@10']:.3f}, mean {r['systems']['dense/mean']['mrr@10']:.3f}",
                  f"     max - whole  {interval(r, 'dense/max - dense')}",
                  f"     mean - whole {interval(r, 'dense/mean - dense')}",
                  f"     max - mean   {interval(r, 'dense/max - dense/mean')}"]
    lines += ["", "Runs: the packaged all-MiniLM-L6-v2; fine-tuned = `train` with lesson 7's CPU settings (4 epochs,",
              "batches of 16, learning rate 5e-5, seed 0, the checkpoint with the best validation MRR@5 kept)"
              + (" -- QUICK SMOKE RUN: 2 steps, 40 pairs per library" if a.quick else "."),
              "Data: `make-data` (the help desk) and `make-data --from-docs` with its default libraries",
              "(docstrings: test queries from scikit-learn). The test split, each run scored once."]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.out:
        Path(a.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
