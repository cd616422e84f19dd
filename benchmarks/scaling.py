"""Benchmark: plain vs cached (GradCache) MNRL at batch 16, 64, 256 on the CPU, with the packaged MiniLM.

    python benchmarks/scaling.py [--batches 16 64 256] [--mini-batch-size 16] [--steps 2] [--threads 1]
                                 [--out book/scaling-benchmark.txt [--overwrite]]

Prints (and optionally writes) three parts, all from this run:

1. Cached vs plain loss and gradients on one batch of 64 (dropout off).
2. Gradient accumulation (4 x 16) vs a true batch of 64 on the same 64 pairs.
3. Time and peak resident memory of one training step (loss, backward, clip,
   AdamW) per loss and batch, each configuration in a fresh process
   (`labs.retrieval.scaling.measure_step`), and the ratios the book page quotes.

Timings on a shared machine vary from run to run; compare ratios within one run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
from pathlib import Path

import torch

from labs.retrieval.models import offline
from labs.lessons.accumulation import accumulation_vs_true_batch
from labs.retrieval.scaling import (
    compare_cached, measure_step_isolated, scale_pairs,
)
from labs.retrieval.config import LOSSES


def machine() -> list[str]:
    """CPU model, cores, memory, load and versions, for the file's header."""
    info = Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []
    cpu = next((x.split(":", 1)[1].strip() for x in info if x.startswith("model name")),
               platform.processor() or "unknown CPU")
    meminfo = Path("/proc/meminfo").read_text().splitlines() if Path("/proc/meminfo").exists() else []
    mem = next((f"{int(x.split()[1]) / 2**20:.0f} GiB RAM" for x in meminfo if x.startswith("MemTotal")), "RAM ?")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    import sentence_transformers
    import transformers

    return [f"machine: {cpu}, {os.cpu_count()} logical cores, {mem}, no GPU used",
            f"load average at start: {load} (a shared machine)",
            f"software: Python {platform.python_version()}, torch {torch.__version__}, "
            f"transformers {transformers.__version__},",
            f"  sentence-transformers {sentence_transformers.__version__}, {platform.system()} {platform.release()}"]


def part_equality(model, mini: int) -> list[str]:
    rows = scale_pairs(64)
    out = compare_cached(model, [[q for q, _ in rows], [d for _, d in rows]], mini_batch_size=mini)
    return [f"1. 64 pairs, dropout off: plain vs cached MNRL (chunks of {mini})",
            f"   loss: plain {out['loss_mnrl']:.6f}, cached {out['loss_cached']:.6f}, "
            f"difference {abs(out['loss_mnrl'] - out['loss_cached']):.1e}",
            f"   largest gradient gap {out['max_grad_gap']:.1e}, largest gradient {out['max_abs_grad']:.1e}",
            f"   (relative gap {out['max_grad_gap'] / out['max_abs_grad']:.1e})"]


def part_accumulation(model) -> list[str]:
    rows = scale_pairs(64)
    with torch.no_grad():
        q = model.encode([r[0] for r in rows], convert_to_tensor=True, show_progress_bar=False)
        d = model.encode([r[1] for r in rows], convert_to_tensor=True, show_progress_bar=False)
    a = accumulation_vs_true_batch(q, d, micro=16, scale=20.0)
    return ["2. 64 pairs, untouched MiniLM: accumulation 4 x 16 vs a batch of 64",
            "   accumulation: four 16-way exams, losses " + " ".join(f"{x:.3f}" for x in a["micro_losses"]),
            f"                 mean {a['accumulated_loss']:.3f} (chance level log 16 = {a['chance_micro']:.3f})",
            f"   true batch:   one 64-way exam, loss {a['true_loss']:.3f}",
            f"                 (chance level log 64 = {a['chance_true']:.3f})",
            f"   wrong documents per query: {a['candidates_micro'] - 1} (accumulation), "
            f"{a['candidates_true'] - 1} (true batch)",
            f"   rows with a higher loss in the true batch: {a['rows_higher_in_true_batch']} of {a['n']}",
            "   queries whose most similar wrong document is in another",
            f"   micro-batch (never seen under accumulation): {a['hardest_negative_elsewhere']} of {a['n']}"]


def part_table(batches: list[int], mini: int, steps: int, threads: int) -> tuple[list[str], dict]:
    results = {}
    for kind in LOSSES:
        for b in batches:
            print(f"   measuring {kind} at batch {b} ...", file=sys.stderr, flush=True)
            results[kind, b] = measure_step_isolated(kind, b, mini_batch_size=mini, steps=steps, threads=threads)
    methods = sorted({r["method"] for r in results.values()})
    lines = [f"3. One training step (loss, backward, clip, AdamW), {threads} thread(s),",
             f"   fastest of {steps} step(s), each configuration in a fresh process.",
             "   Memory: resident set in MiB; before = after loading and a",
             "   warm-up step; peak = high-water mark",
             f"   ({'; '.join(methods)}); adds = peak - before.", "",
             "   loss       batch  tokens/text  s/step  before   peak   adds",
             "   ---------  -----  -----------  ------  ------  -----  -----"]
    for (kind, b), r in results.items():
        label = kind if kind == "mnrl" else f"cached/{mini}"
        lines.append(f"   {label:<9}  {b:>5}  {r['tokens_per_text']:>11.1f}  {r['seconds']:>6.2f}  "
                     f"{r['rss_before_mib']:>6.0f}  {r['peak_mib']:>5.0f}  {r['extra_mib']:>5.0f}")
    return lines, results


def ratios(results: dict, batches: list[int], mini: int) -> list[str]:
    lo, hi = min(batches), max(batches)
    c_lo, c_hi, p_lo, p_hi = (results[k, b] for k, b in (("cached", lo), ("cached", hi), ("mnrl", lo), ("mnrl", hi)))
    extra = c_hi["extra_mib"] / c_lo["extra_mib"]
    times = ", ".join(f"x{results['cached', b]['seconds'] / results['mnrl', b]['seconds']:.2f} at {b}"
                      for b in batches)
    return ["4. Ratios (this run)",
            f"   cached, batch {hi} vs {lo}: adds x{extra:.2f}, peak x{c_hi['peak_mib'] / c_lo['peak_mib']:.2f}",
            f"     -> target 'within 1.5x': {'met' if extra <= 1.5 else 'NOT met'}",
            f"   cached batch {hi} vs plain batch {lo}: adds x{c_hi['extra_mib'] / p_lo['extra_mib']:.2f}",
            f"   plain, batch {hi} vs {lo}: adds x{p_hi['extra_mib'] / p_lo['extra_mib']:.2f}, "
            f"peak x{p_hi['peak_mib'] / p_lo['peak_mib']:.2f}",
            f"   at batch {hi}, plain adds x{p_hi['extra_mib'] / c_hi['extra_mib']:.2f} what cached adds",
            f"   time, cached / plain: {times}"]


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(prog="python benchmarks/scaling.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--batches", type=int, nargs="+", default=[16, 64, 256], help="batch sizes (pairs per step)")
    p.add_argument("--mini-batch-size", type=int, default=16, help="chunk size of the cached loss")
    p.add_argument("--steps", type=int, default=2, help="measured steps per configuration (fastest reported)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1 is steadier on a shared machine)")
    p.add_argument("--out", help="also write the report to this file")
    p.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    a = p.parse_args(argv)
    if a.out and Path(a.out).exists() and not a.overwrite:
        p.error(f"{a.out} exists; pass --overwrite to replace it")
    if any(b < 2 or b > 576 for b in a.batches) or len(a.batches) < 2 or a.steps < 1 or a.mini_batch_size < 1:
        p.error("batches must be 2..576 (at least two of them), steps and mini-batch size >= 1")
    offline()
    torch.set_num_threads(a.threads)
    from labs.retrieval.models import load_minilm

    model = load_minilm()
    model.max_seq_length = 128
    params = sum(p.numel() for p in model.parameters())
    header = ["Scaling benchmark: plain vs cached MNRL, all-MiniLM-L6-v2, CPU",
              f"date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC", *machine(),
              "data: labs.retrieval.scaling.scale_pairs (help-desk style, every document",
              "  distinct), max length 128, scale 20",
              f"model: {params / 1e6:.1f} M parameters = {params * 4 / 2**20:.0f} MiB in float32 "
              "(gradients as much",
              "  again, AdamW state twice that)",
              "command: python benchmarks/scaling.py \\",
              "  " + (" ".join(sys.argv[1:] if argv is None else argv) or "(defaults)"), ""]
    lines = header + part_equality(model, a.mini_batch_size) + [""] + part_accumulation(model) + [""]
    table, results = part_table(sorted(a.batches), a.mini_batch_size, a.steps, a.threads)
    lines += table + [""] + ratios(results, sorted(a.batches), a.mini_batch_size)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.out:
        Path(a.out).write_text(text, encoding="utf-8")
    return text


if __name__ == "__main__":
    main()
