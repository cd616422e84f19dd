"""Benchmark: peak CPU memory of one training step at several batch sizes (default 16 and 64).

Each batch size runs in its own fresh process. The child loads the model, runs one warm-up
encode, resets its resident high-water mark and records its resident memory, then runs ONE
training step (MultipleNegativesRankingLoss, AdamW, clipping) and reads the peak since the
reset (`labs.retrieval.device.peak_rss_mib`: Linux ``VmHWM``; elsewhere the lifetime peak, said in
``method``). ``step_extra_mib`` = peak - memory before the step: activations, gradients and
the two AdamW moments, which appear on the first step.

    python benchmarks/cpu_memory.py [--model minilm] [--batch-sizes 16 64]

The help-desk questions and articles are short (about 10 to 25 tokens); rows repeat when the
batch is larger than the distinct pairs, which costs the same memory.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from labs.retrieval.device import peak_rss_mib, reset_peak
from labs.retrieval.models import offline


def child(model_name: str, batch_size: int) -> dict:
    import torch

    from labs.retrieval.instruction import instruction_of
    from labs.retrieval.models import load_encoder
    from labs.retrieval.loss import adamw, make_loss, train_step
    from labs.retrieval.helpdesk import make_helpdesk
    from labs.retrieval.instruction import format_query

    torch.manual_seed(0)
    torch.set_num_threads(2)
    model, _, _ = load_encoder(model_name)
    instruction = instruction_of(model)
    data = make_helpdesk()
    text_of = {d["doc_id"]: d["text"] for d in data.corpus}
    rows = [(format_query(q["text"], instruction), text_of[q["relevant_doc_ids"][0]]) for q in data.queries]
    rows = (rows * (batch_size // len(rows) + 1))[:batch_size]
    model.encode([d for _, d in rows[:4]], show_progress_bar=False)
    model.train()
    loss_fn = make_loss(model, "mnrl", scale=20.0)
    optimizer = adamw(model, lr=2e-5)
    reset_peak()
    before, _ = peak_rss_mib()
    train_step(model, loss_fn, optimizer, [[q for q, _ in rows], [d for _, d in rows]], device="cpu")
    peak, method = peak_rss_mib()
    tokens = int(model.preprocess([d for _, d in rows])["attention_mask"].shape[1])
    return {"batch_size": batch_size, "padded_doc_tokens": tokens, "rss_before_step_mib": round(before, 1),
            "peak_rss_mib": round(peak, 1), "step_extra_mib": round(peak - before, 1), "method": method}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(prog="python benchmarks/cpu_memory.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm", help="'minilm' or a local model folder")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 64], help="one fresh process each")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if any(b < 2 for b in args.batch_sizes):
        parser.error("--batch-sizes must be >= 2 (a batch of one has no negatives)")
    offline()
    if args.child:
        print(json.dumps(child(args.model, args.child)))
        return []
    results = []
    for size in args.batch_sizes:
        out = subprocess.run([sys.executable, __file__, "--model", args.model, "--child", str(size)],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"batch {size} failed: {out.stderr.strip().splitlines()[-1:]}")
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(json.dumps(results[-1]))
    return results


if __name__ == "__main__":
    main()
