"""Benchmark: many queries at once, batched against one at a time, in the same run (a ratio).

    python benchmarks/search_queries.py [--queries 1000] [--single 200] [--batch-size 64] [--threads 1]

Builds the help-desk fixture and an index of the packaged all-MiniLM-L6-v2 (``train --epochs 0``)
in a temporary folder, then ranks the same queries against it two ways with the model loaded
once: encoded in batches (what ``search --queries FILE`` does), and one query per model call (what
a loop calling ``search`` once per query would do, without its start-up). Prints queries per
second of each and their ratio, then the whole ``search --queries FILE --out FILE`` command on the
full file (model loading and the whole-file write included). Timings on a shared machine vary from
run to run; compare the ratio within one run.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

os.environ.setdefault("TQDM_DISABLE", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=1000, help="queries in the file")
    parser.add_argument("--single", type=int, default=200, help="how many of them to time one at a time")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: the profile of a busy 2-core CI box)")
    args = parser.parse_args()

    import json

    import torch

    from labs.retrieval.cli import main as labs
    from labs.retrieval.data import load_dataset
    from labs.retrieval.index import Ranking, encode_queries, load_run, score_queries
    from labs.retrieval.models import offline

    offline()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="search-queries-") as tmp:
        tmp = Path(tmp)
        assert labs(["make-data", "--out", str(tmp / "data")]) == 0
        assert labs(["train", "--data", str(tmp / "data"), "--out", str(tmp / "run"), "--epochs", "0"]) == 0
        base = [q["text"] for q in load_dataset(tmp / "data").queries]
        texts = [f"{base[i % len(base)]} (case {i})" for i in range(args.queries)]
        (tmp / "q.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "text": t}) + "\n"
                                             for i, t in enumerate(texts)))
        loaded = load_run(tmp / "run")
        instruction, ranking = loaded.contract["instruction"], Ranking()

        start = time.perf_counter()
        q = encode_queries(loaded.model, texts, instruction, args.batch_size)
        batched = score_queries(loaded, q, texts, ranking, k=5)
        t_batched = time.perf_counter() - start

        start = time.perf_counter()
        single = [score_queries(loaded, encode_queries(loaded.model, [t], instruction, 1), [t], ranking, k=5)[0]
                  for t in texts[:args.single]]
        t_single = time.perf_counter() - start
        same = all([d for d, _ in a] == [d for d, _ in b] for a, b in zip(single, batched))

        start = time.perf_counter()
        assert labs(["search", str(tmp / "run"), "--queries", str(tmp / "q.jsonl"), "--out", str(tmp / "out.jsonl"),
                     "--batch-size", str(args.batch_size)]) == 0
        t_cli = time.perf_counter() - start

    qps_batched, qps_single = args.queries / t_batched, args.single / t_single
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical cores, "
          f"torch {torch.__version__}, {args.threads} thread(s), load average {os.getloadavg()[0]:.1f}")
    print(f"batched (batches of {args.batch_size}): {args.queries} queries in {t_batched:.2f} s = "
          f"{qps_batched:.0f} queries/s")
    print(f"one at a time:         {args.single} queries in {t_single:.2f} s = {qps_single:.0f} queries/s")
    print(f"ratio batched / one at a time: {qps_batched / qps_single:.1f}x (same top 5 for the {args.single} "
          f"queries timed both ways: {same})")
    print(f"search --queries --out, the whole command on {args.queries} queries (model load and write included): "
          f"{t_cli:.2f} s")


if __name__ == "__main__":
    main()
