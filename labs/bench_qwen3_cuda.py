"""Benchmark for a CUDA machine: full-size Qwen3-Embedding-0.6B training steps, random weights.

The architecture comes from its config (`labs.qwen3.qwen3_config("0.6b")`: 28 layers,
hidden 1024, 595,776,512 parameters), with random weights: speed and memory do not depend
on the weights' values, and nothing is downloaded. It is assembled exactly as the
fine-tuning lab assembles the real model (left-padded Transformer, last-token Pooling,
Normalize) and trained with the lab's own step (`labs.finetune.train_step_features`):
MultipleNegativesRankingLoss at scale 20, fp32 weights with bf16 autocast, non-reentrant
gradient checkpointing, AdamW, clipping at 1. Each step sees --batch-size queries and as
many documents of exactly --seq-len tokens.

Reports the median step time, tokens per second, peak allocated and reserved CUDA memory,
and model FLOP utilisation: (6 x non-embedding parameters + attention) x tokens / time /
peak bf16 FLOP/s of the card (dense, from --peak-tflops or a small table of known cards).
Recomputation by checkpointing is not counted as useful work, as is usual for MFU.

    python -m labs.bench_qwen3_cuda                      # on a GPU machine: 64 x 128 tokens
    python -m labs.bench_qwen3_cuda --size tiny --device cpu --batch-size 4 --seq-len 16 --steps 2

The tiny CPU form only checks that the script runs (the tests do that).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

for _name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_name, "1")

import torch  # noqa: E402

# Dense bf16 tensor-core peaks (TFLOP/s, without sparsity) from the vendors' data sheets.
PEAK_BF16_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "L4": 121.0, "A10G": 70.0}


def peak_tflops(device: str, given: float | None) -> float | None:
    if given is not None or device != "cuda":
        return given
    name = torch.cuda.get_device_name()
    return next((v for k, v in PEAK_BF16_TFLOPS.items() if k in name), None)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="0.6b", choices=["0.6b", "tiny"], help="architecture from config")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="cpu only for the tiny check")
    parser.add_argument("--batch-size", type=int, default=64, help="query/document pairs per step")
    parser.add_argument("--seq-len", type=int, default=128, help="tokens per text (every text exactly this long)")
    parser.add_argument("--steps", type=int, default=6, help="timed steps")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--peak-tflops", type=float, default=None, help="the card's dense bf16 peak")
    parser.add_argument("--no-checkpointing", action="store_true", help="keep all activations instead")
    parser.add_argument("--json", help="also write the result to this new JSON file")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device here: use --size tiny --device cpu for a smoke check")

    from labs.finetune import _mnrl, train_step_features
    from labs.qwen3 import build_qwen3, count_parameters, flops_per_token, write_tiny_qwen3

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        folder = write_tiny_qwen3(os.path.join(tmp, "qwen3"), seed=0, size=args.size)
        model = build_qwen3(folder, device=args.device, max_length=args.seq_len)
        build_s = time.perf_counter() - t0
    cuda = args.device == "cuda"
    auto = model[0].auto_model
    if cuda and not args.no_checkpointing:
        auto.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    loss_fn = _mnrl(20.0)(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, foreach=False)
    vocab = auto.config.vocab_size - 26  # ordinary BPE tokens only
    eos = auto.config.eos_token_id

    def column() -> dict:
        ids = torch.randint(0, vocab, (args.batch_size, args.seq_len), device=args.device)
        ids[:, -1] = eos  # the tokenizer ends every text with <|endoftext|>; pooling reads that position
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}

    if cuda:
        torch.cuda.reset_peak_memory_stats()
    times, losses = [], []
    for step in range(args.warmup + args.steps):
        features = [column(), column()]
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        losses.append(train_step_features(model, loss_fn, optimizer, features, device=args.device, bf16=cuda))
        if cuda:
            torch.cuda.synchronize()
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
    step_s = statistics.median(times)
    tokens = 2 * args.batch_size * args.seq_len
    flops = flops_per_token(auto.config, args.seq_len) * tokens
    peak = peak_tflops(args.device, args.peak_tflops)
    result = {
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "date": time.strftime("%Y-%m-%d"),
        "size": args.size, "parameters": count_parameters(model),
        "batch_size": args.batch_size, "seq_len": args.seq_len, "tokens_per_step": tokens,
        "bf16_autocast": cuda, "gradient_checkpointing": cuda and not args.no_checkpointing,
        "build_s": round(build_s, 1), "median_step_s": round(step_s, 4), "tokens_per_s": round(tokens / step_s),
        "model_tflops_per_step": round(flops / 1e12, 3),
        "mfu": round(flops / step_s / (peak * 1e12), 4) if peak else None,
        "peak_tflops_assumed": peak,
        "cuda_peak_allocated_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None,
        "cuda_peak_reserved_gib": round(torch.cuda.max_memory_reserved() / 2**30, 2) if cuda else None,
        "losses": [round(x, 3) for x in losses],
        "versions": {"torch": torch.__version__},
    }
    print(json.dumps(result))
    if args.json:
        with open(args.json, "x", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    main()
