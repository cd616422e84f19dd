"""Benchmark: training steps of the full-size Qwen3-Embedding-0.6B architecture, random weights, on the lesson's path.

What runs is what ``python -m labs train`` runs for Qwen3, at full size: the architecture
from its config (`labs.retrieval.qwen3.qwen3_config("0.6b")`: 28 layers, hidden 1024, 595,776,512
parameters) with random float32 weights built directly on the device
(`labs.retrieval.qwen3.build_random_qwen3`; speed and memory do not depend on the weights' values,
nothing is downloaded or written), assembled like the real model (left-padded Transformer,
last-token Pooling, Normalize; the pooling contract checked). Seeds and deterministic
kernels from `labs.retrieval.device.set_determinism`, as in training. Each step tokenises a fresh batch
through the model's own tokenizer: --batch-size questions with the Qwen3 instruction
and as many articles of varied length (about half truncated at --max-length), so rows
are left-padded to the longest and masks are not all ones.
sentence-transformers' MultipleNegativesRankingLoss at scale 20, float32 master weights
with autocast at `labs.retrieval.device.training_precision` (bf16 on cards with native bf16, fp16 and a
gradient scaler on older ones, none on the CPU), gradient norm clipped at 1, AdamW (fused
kernels on CUDA).

Prints one JSON line: median step time, tokens per second (real and padded), peak memory
(CUDA: peak allocated and reserved; CPU: the resident high-water mark during the steps,
reported as the float32 weights plus the growth over the resident size before them) beside the
estimate of `labs.retrieval.qwen3.training_memory` (16 bytes per parameter + activations), model FLOP
utilisation on CUDA ((6 x non-embedding parameters + attention) x real tokens / time / the
card's dense peak), and checks verified at real size (shapes, pooling, dtypes, the update).

    python benchmarks/qwen3_gpu.py                                 # CUDA: 64 pairs, up to 128 tokens
    nice -n 10 python benchmarks/qwen3_gpu.py --device cpu --batch-size 2 --max-length 32 --warmup 1 --steps 1

The CPU form runs two real steps of the full-size model (minutes, about 11 GB of memory):
the second one measures memory with the AdamW moments already allocated.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import torch

from labs.retrieval.device import reset_peak, status_kib
from labs.retrieval.models import offline

# Dense tensor-core peaks without sparsity (TFLOP/s) from the vendors' data sheets; first match wins.
PEAK_TFLOPS = {
    "bf16": [("H100 PCIe", 756.0), ("H200 NVL", 835.0), ("H200", 989.0), ("H100", 989.0), ("A100", 312.0),
             ("L40S", 362.0), ("L4", 121.0), ("A10G", 70.0)],
    "fp16": [("T4", 65.0), ("V100", 125.0)],
}
WORDS = ("account password login reset invoice renewal plan storage sync device error update screen "
         "settings export import backup restore email notification billing refund user team admin "
         "permission folder share link download upload install license trial cancel subscription").split()


def peak_tflops(device: str, precision: str, given: float | None) -> float | None:
    """The card's dense peak for ``precision``: ``given``, else from PEAK_TFLOPS by name; None on the CPU."""
    if given is not None or not device.startswith("cuda"):
        return given
    name = torch.cuda.get_device_name()
    return next((v for k, v in PEAK_TFLOPS.get(precision, []) if k in name), None)


def make_batch(rng: np.random.Generator, batch_size: int, instruction: str, max_length: int) -> list[list[str]]:
    """[questions with the instruction, articles]: word counts drawn so lengths vary within a batch.

    Questions: 3 to max_length/3 words after the instruction (about 20 tokens); articles:
    max_length/4 to 2 x max_length words, so about half are truncated and the rest padded.
    """
    from labs.retrieval.instruction import format_query

    def text(low: int, high: int) -> str:
        return " ".join(rng.choice(WORDS, size=int(rng.integers(low, high + 1))))

    return [[format_query(text(3, max(3, max_length // 3)), instruction) for _ in range(batch_size)],
            [text(max(1, max_length // 4), 2 * max_length) for _ in range(batch_size)]]


def main(argv: list[str] | None = None) -> dict:
    offline()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="0.6b", choices=["0.6b", "tiny"], help="architecture from config")
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu")
    parser.add_argument("--batch-size", type=int, default=64, help="question/article pairs per step")
    parser.add_argument("--max-length", type=int, default=128, help="tokens per text at most (truncation)")
    parser.add_argument("--steps", type=int, default=6, help="timed steps")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--attn", default="sdpa", help="sdpa, flash_attention_2 (if installed) or eager")
    parser.add_argument("--gradient-checkpointing", action="store_true", help="recompute activations in backward")
    parser.add_argument("--no-deterministic", action="store_true", help="allow nondeterministic kernels")
    parser.add_argument("--peak-tflops", type=float, default=None, help="the card's dense peak at this precision")
    parser.add_argument("--json", help="also write the result to this new JSON file")
    args = parser.parse_args(argv)
    for name in ("batch_size", "max_length", "steps"):
        if getattr(args, name) < (2 if name == "batch_size" else 1):
            raise SystemExit(f"--{name.replace('_', '-')} is too small: {getattr(args, name)}")
    if args.warmup < 0:
        raise SystemExit(f"--warmup must be >= 0, got {args.warmup}")

    from labs.retrieval.device import (
        assert_float32_master, autocast_dtype, describe_device,
        set_determinism, training_precision,
    )

    from labs.retrieval import machine

    device = args.device
    try:
        machine.device(device, "--device")
    except ValueError as err:
        raise SystemExit(f"{err}; for the CPU form use --device cpu") from None
    rss_start = status_kib("VmRSS")
    set_determinism(0, deterministic=not args.no_deterministic)  # before CUDA starts
    precision = training_precision(device)
    cuda = device.startswith("cuda")

    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from labs.retrieval.loss import train_step_features
    from labs.retrieval.instruction import DEFAULT_TASK
    from labs.retrieval.qwen3 import (
        build_random_qwen3, count_parameters, flops_per_token,
        training_memory,
    )

    t0 = time.perf_counter()
    model = build_random_qwen3(args.size, device=device, max_length=args.max_length, attn=args.attn)
    build_s = time.perf_counter() - t0
    auto = model[0].auto_model
    if args.gradient_checkpointing:
        auto.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    assert_float32_master(model)
    n_params = count_parameters(model)
    loss_fn = MultipleNegativesRankingLoss(model, scale=20.0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01, fused=cuda,
                                  foreach=None if cuda else False)
    dtype = autocast_dtype(precision)
    scaler = torch.amp.GradScaler("cuda") if precision == "fp16" else None
    rng = np.random.default_rng(0)
    batches = [make_batch(rng, args.batch_size, DEFAULT_TASK, args.max_length) for _ in range(args.warmup + args.steps)]

    def features_of(columns):
        out = []
        for texts in columns:
            f = model.preprocess(texts)
            out.append({k: v.to(device) if torch.is_tensor(v) else v for k, v in f.items()})
        return out

    def step(features) -> float:  # the lesson's own step: autocast, scaler, clipping, AdamW
        return train_step_features(model, loss_fn, optimizer, features, device=device, precision=precision,
                                   scaler=scaler)

    norm_before = auto.norm.weight.detach().clone()  # 1.0 each: a 2e-5 step survives in float32, not in bf16
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    rss_before_steps = status_kib("VmRSS")
    exact = reset_peak()
    times, losses, real, padded, seq_lens = [], [], [], [], []
    for i, columns in enumerate(batches):
        features = features_of(columns)
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        losses.append(step(features))
        if cuda:
            torch.cuda.synchronize()
        if i >= args.warmup:
            times.append(time.perf_counter() - start)
            real.append(sum(int(f["attention_mask"].sum()) for f in features))
            padded.append(sum(f["attention_mask"].numel() for f in features))
            seq_lens.append([int(f["attention_mask"].shape[1]) for f in features])
    peak_rss_kib = status_kib("VmHWM")
    cuda_alloc = torch.cuda.max_memory_allocated() if cuda else None
    cuda_reserved = torch.cuda.max_memory_reserved() if cuda else None

    # checks at real size: dtypes and optimizer state after the update, the update itself, pooling
    model.eval()
    eos = model.tokenizer.convert_tokens_to_ids("<|endoftext|>")
    probe = features_of([["a short question", "a longer question about a password reset"]])[0]
    with torch.no_grad(), torch.autocast(device_type="cuda", dtype=dtype or torch.bfloat16,
                                         enabled=cuda and dtype is not None):
        emb = model(dict(probe))["sentence_embedding"].float()
        hidden = auto(input_ids=probe["input_ids"], attention_mask=probe["attention_mask"]).last_hidden_state
    by_hand = torch.nn.functional.normalize(hidden[:, -1].float(), dim=-1)
    states = [s for group in optimizer.state.values() for s in group.values() if torch.is_tensor(s) and s.ndim > 0]
    checks = {
        "embedding_shape": list(emb.shape),
        "last_token_is_end_token": bool((probe["input_ids"][:, -1] == eos).all()),
        "left_padded": bool(probe["attention_mask"][0, 0] == 0),
        "pooling_matches_last_hidden_state": bool(torch.allclose(emb, by_hand, atol=1e-3 if dtype else 1e-5)),
        "weights_float32": {str(p.dtype) for p in model.parameters()} == {"torch.float32"},
        "adam_moments_float32": bool(states) and {str(s.dtype) for s in states} == {"torch.float32"},
        "small_update_kept": bool((auto.norm.weight.detach() - norm_before).abs().max() > 1e-5),
        "losses_finite": bool(np.isfinite(losses).all()),
    }

    step_s = statistics.median(times)
    tokens_real, tokens_padded = statistics.median(real), statistics.median(padded)
    flops = statistics.median([flops_per_token(auto.config, max(lens)) * r for lens, r in zip(seq_lens, real)])
    peak = peak_tflops(device, precision, args.peak_tflops)
    estimate = training_memory(auto.config, n_params, int(max(padded)), precision=precision,
                               checkpointing=args.gradient_checkpointing)
    gib = 2**30
    result = {
        "device": describe_device(device), "date": time.strftime("%Y-%m-%d"), "size": args.size,
        "parameters": n_params, "precision": precision, "attn": args.attn,
        "deterministic": not args.no_deterministic, "gradient_checkpointing": args.gradient_checkpointing,
        "batch_size": args.batch_size, "max_length": args.max_length, "padded_lengths": seq_lens,
        "tokens_per_step_real": tokens_real, "tokens_per_step_padded": tokens_padded,
        "build_s": round(build_s, 1), "median_step_s": round(step_s, 3), "timed_steps": len(times),
        "tokens_per_s_real": round(tokens_real / step_s), "tokens_per_s_padded": round(tokens_padded / step_s),
        "model_tflops_per_step": round(flops / 1e12, 3),
        "mfu": round(flops / step_s / (peak * 1e12), 3) if peak else None, "peak_tflops_assumed": peak,
        "cuda_peak_allocated_gib": round(cuda_alloc / gib, 2) if cuda else None,
        "cuda_peak_reserved_gib": round(cuda_reserved / gib, 2) if cuda else None,
        "cpu_rss_start_gib": round(rss_start / 2**20, 2),
        "cpu_rss_before_steps_gib": round(rss_before_steps / 2**20, 2),
        "cpu_peak_rss_gib": round(peak_rss_kib / 2**20, 2),
        "cpu_peak_method": "VmHWM reset after the build" if exact else "lifetime VmHWM (clear_refs refused)",
        "estimate_gib": {k: round(v / gib, 2) for k, v in estimate.items()},
        "losses": [round(x, 3) for x in losses], "checks": checks,
        "versions": {"torch": torch.__version__, "cuda": torch.version.cuda},
    }
    # CPU: the weights (4 bytes each, all touched by the random init) plus what the steps added on top
    measured = cuda_alloc / gib if cuda else (peak_rss_kib - rss_before_steps) / 2**20 + 4 * n_params / gib
    result["measured_vs_estimate"] = (
        f"{'CUDA peak allocated' if cuda else 'CPU weights + peak RSS growth in the steps'} {measured:.2f} GiB; "
        f"estimate {estimate['total'] / gib:.2f} GiB = weights+gradients+AdamW {16 * n_params / gib:.2f} "
        f"+ activations {estimate['activations'] / gib:.2f} + autocast copies {estimate['autocast_copies'] / gib:.2f}")
    print(json.dumps(result))
    if args.json:
        with open(args.json, "x", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    failed = [k for k, v in checks.items() if v is False]
    if failed:
        raise SystemExit(f"checks failed at real size: {failed}")
    return result


if __name__ == "__main__":
    main()
