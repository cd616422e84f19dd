"""Benchmark: peak CPU memory of one training step at several batch sizes (default 16 and 64).

Each batch size runs in its own fresh process, because the peak resident set size
(``ru_maxrss``) only ever grows. The child loads the model, runs one warm-up encode,
records its resident memory, then runs ONE training step (MultipleNegativesRankingLoss,
AdamW, clipping) and reports the peak. ``step_extra_mib`` = peak - memory before the step:
activations, gradients and the two AdamW moments, which appear on the first step.

    python -m labs.bench_cpu_memory [--model minilm] [--batch-sizes 16 64]

The help-desk questions and articles are short (about 10 to 25 tokens); rows repeat when the
batch is larger than the distinct pairs, which costs the same memory.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys

for _name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_name, "1")

def _rss_mib() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def child(model_name: str, batch_size: int) -> dict:
    import torch

    from labs.finetune import _mnrl, default_instruction, load_encoder, train_step
    from labs.helpdesk import make_helpdesk
    from labs.index import format_query

    torch.manual_seed(0)
    torch.set_num_threads(2)
    model, _, _ = load_encoder(model_name)
    instruction = default_instruction(model)
    data = make_helpdesk()
    text_of = {d["doc_id"]: d["text"] for d in data.corpus}
    rows = [(format_query(q["text"], instruction), text_of[q["relevant_doc_ids"][0]]) for q in data.queries]
    rows = (rows * (batch_size // len(rows) + 1))[:batch_size]
    model.encode([d for _, d in rows[:4]], show_progress_bar=False)
    model.train()
    before = _rss_mib()
    loss_fn = _mnrl(20.0)(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, foreach=False)
    train_step(model, loss_fn, optimizer, [[q for q, _ in rows], [d for _, d in rows]], device="cpu")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    tokens = int(model.preprocess([d for _, d in rows])["attention_mask"].shape[1])
    return {"batch_size": batch_size, "padded_doc_tokens": tokens, "rss_before_step_mib": round(before, 1),
            "peak_rss_mib": round(peak, 1), "step_extra_mib": round(peak - before, 1)}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm", help="'minilm' or a local model folder")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 64], help="one fresh process each")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.model, args.child)))
        return []
    results = []
    for size in args.batch_sizes:
        out = subprocess.run([sys.executable, "-m", "labs.bench_cpu_memory", "--model", args.model, "--child", str(size)],
                             capture_output=True, text=True, check=True)
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(json.dumps(results[-1]))
    return results


if __name__ == "__main__":
    main()
