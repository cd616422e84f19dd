"""`make gpu-check`: the GPU path end to end on one CUDA GPU, no network, no hub, under 5 minutes.

1. A tiny random Qwen3 twin (`labs.retrieval.qwen3.write_tiny_qwen3`) stored in bf16, as the
   published checkpoint is, and the help-desk fixture (``python -m labs make-data``).
2. The command line on CUDA: ``train`` twice with the same seed (mixed precision chosen
   by `labs.retrieval.device.training_precision`, deterministic kernels), then ``search`` and
   ``evaluate``; the two runs must agree to the last digit, the weights must have been
   trained in float32. Then ``train`` once more with ``--precision fp16
   --gradient-checkpointing`` (the T4 path: fp16 autocast with a gradient scaler).
3. The full-size benchmark (``benchmarks/qwen3_gpu.py``): 0.6B architecture, random
   weights, 64 pairs of up to 128 tokens; then with gradient checkpointing.

Writes the report to ``book/gpu-check.txt`` (included by ``book/gpu.md``) and exits 0
when every step passed, 1 when one failed (the report says which). Without CUDA it
writes nothing and exits 2.

    python benchmarks/gpu_check.py [--report book/gpu-check.txt]
    python benchmarks/gpu_check.py --rehearse-on-cpu --report /tmp/rehearsal.txt

``--rehearse-on-cpu`` runs the same steps on the CPU (float32, no fp16 run, the benchmark
at tiny size) to check the script itself where no GPU is; it proves nothing about CUDA.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TQDM_DISABLE": "1",
           "HF_HUB_DISABLE_PROGRESS_BARS": "1", "PYTHONHASHSEED": "0"}
BUDGET_S = 300  # the whole check on a GPU; each command gets what is left
QUESTION = "In Iris, I need to stop future renewals."


class Check:
    """Runs commands, keeps the report's lines, remembers failures."""

    def __init__(self, budget_s: float, tmp: Path) -> None:
        self.budget_s, self.tmp = budget_s, str(tmp)
        self.lines: list[str] = []
        self.failures: list[str] = []
        self.start = time.perf_counter()

    def say(self, text: str = "") -> None:
        text = text.replace(self.tmp, "<tmp>")  # the same report wherever the temporary folder was
        print(text, flush=True)
        self.lines.append(text)

    def expect(self, ok: bool, what: str) -> None:
        self.say(f"{'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            self.failures.append(what)

    def run(self, *args: str, tail: int = 12) -> subprocess.CompletedProcess:
        left = self.budget_s - (time.perf_counter() - self.start)
        shown = shlex.join(["python", *(str(a).replace(str(ROOT) + "/", "") for a in args)])
        self.say(f"$ {shown}")
        env = {**os.environ, **OFFLINE}
        try:
            done = subprocess.run([sys.executable, *map(str, args)], cwd=ROOT, env=env, capture_output=True,
                                  text=True, timeout=max(left, 1))
        except subprocess.TimeoutExpired:
            self.expect(False, f"finished within the {self.budget_s:.0f} s budget: {shown}")
            return subprocess.CompletedProcess(args, 124, "", "")
        for line in (done.stdout + done.stderr).rstrip().splitlines()[-tail:] if tail else []:
            self.say(f"  {line}")
        self.expect(done.returncode == 0, f"exit code 0 (got {done.returncode})")
        return done


def _stored_dtypes(path: Path) -> set[str]:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        return {str(f.get_slice(k).get_dtype()) for k in f.keys()}


def _history(metrics: dict) -> list[dict]:
    """Per-epoch losses and validation metrics, without timings (those differ between runs)."""
    return [{k: v for k, v in row.items() if "second" not in k and "time" not in k}
            for row in metrics.get("history", [])]


def train(check: Check, device: str, data: Path, twin: Path, out: Path, *extra: str) -> dict:
    check.run("-m", "labs", "train", "--data", data, "--out", out, "--model", twin, "--device", device,
              "--epochs", "2", "--batch-size", "8", "--seed", "0", *extra)
    metrics = out / "metrics.json"
    return json.loads(metrics.read_text()) if metrics.is_file() else {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", default=None, help="where the report goes (default book/gpu-check.txt)")
    parser.add_argument("--rehearse-on-cpu", action="store_true", help="check this script on the CPU (needs --report)")
    args = parser.parse_args(argv)
    if args.rehearse_on_cpu and not args.report:
        parser.error("--rehearse-on-cpu needs --report: a rehearsal never replaces the book's GPU report")
    device = "cpu" if args.rehearse_on_cpu else "cuda"

    import torch

    if device == "cuda" and not torch.cuda.is_available():
        print("gpu-check: no CUDA GPU here (torch sees none), so nothing was run and nothing written. "
              "Run it on a machine with an NVIDIA GPU; the CPU checks are in `make test`.", file=sys.stderr)
        return 2

    from labs.retrieval.device import describe_device
    from labs.retrieval.qwen3 import write_tiny_qwen3

    tmp_dir = tempfile.TemporaryDirectory(prefix="gpu-check-")
    tmp = Path(tmp_dir.name)
    check = Check(BUDGET_S if device == "cuda" else 4 * BUDGET_S, tmp)
    title = "make gpu-check" if device == "cuda" else "gpu-check REHEARSAL ON THE CPU (proves nothing about CUDA)"
    check.say(f"{title}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    check.say(f"device: {describe_device(device)}")
    import sentence_transformers
    import transformers

    check.say(f"versions: torch {torch.__version__}, transformers {transformers.__version__}, "
              f"sentence-transformers {sentence_transformers.__version__}")
    with tmp_dir:
        check.say("\n## 1. tiny Qwen3 twin stored in bf16, help-desk fixture")
        twin = write_tiny_qwen3(tmp / "twin", seed=0, dtype=torch.bfloat16)
        stored = _stored_dtypes(twin / "model.safetensors")
        check.expect(stored == {"BF16"}, f"twin weights stored as {sorted(stored)} (the published checkpoint: BF16)")
        check.run("-m", "labs", "make-data", "--out", tmp / "data")

        check.say(f"\n## 2. command line on {device}: train twice (same seed), search, evaluate")
        first = train(check, device, tmp / "data", twin, tmp / "run1")
        second = train(check, device, tmp / "data", twin, tmp / "run2")
        check.expect(first.get("weights_dtype") == "float32",
                     f"weights trained in float32 (metrics.json: {first.get('weights_dtype')!r})")
        wanted = ("bf16", "fp16") if device == "cuda" else ("fp32",)
        check.expect(first.get("precision") in wanted,
                     f"precision {' or '.join(wanted)} on {device} (metrics.json: {first.get('precision')!r})")
        check.expect(bool(first) and _history(first) == _history(second),
                     "two runs with seed 0 agree exactly (losses and validation metrics, every epoch)")
        check.run("-m", "labs", "search", tmp / "run1", QUESTION, "--k", "3", "--device", device)
        check.run("-m", "labs", "evaluate", tmp / "run1", "--data", tmp / "data", "--split", "val",
                  "--device", device)
        if device == "cuda":
            check.say("\n## 3. the T4 path on this card: fp16 autocast, gradient scaler, gradient checkpointing")
            third = train(check, device, tmp / "data", twin, tmp / "run3", "--precision", "fp16",
                          "--gradient-checkpointing")
        else:
            check.say("\n## 3. gradient checkpointing (the fp16 run needs CUDA)")
            third = train(check, device, tmp / "data", twin, tmp / "run3", "--gradient-checkpointing")
        want = "fp16" if device == "cuda" else "fp32"
        check.expect(third.get("precision") == want, f"{want} run (metrics.json: {third.get('precision')!r})")

    scale = "" if device == "cuda" else " at TINY size"
    check.say(f"\n## 4. benchmark: Qwen3-Embedding-0.6B architecture{scale}, random weights")
    size = [] if device == "cuda" else ["--size", "tiny", "--device", "cpu", "--batch-size", "4",
                                        "--max-length", "32", "--warmup", "1", "--steps", "1"]
    for extra in ([], ["--gradient-checkpointing"]):
        done = check.run(ROOT / "benchmarks" / "qwen3_gpu.py", *size, *extra, tail=0)
        lines = [x for x in done.stdout.splitlines() if x.startswith("{")]
        if lines:
            r = json.loads(lines[-1])
            check.say(f"  precision {r['precision']}, checkpointing {r['gradient_checkpointing']}, "
                      f"{r['batch_size']} pairs, padded lengths {r['padded_lengths'][0]} ...")
            check.say(f"  median step {r['median_step_s']} s, {r['tokens_per_s_real']} real tokens/s, "
                      f"MFU {r['mfu']} (peak {r['peak_tflops_assumed']} TFLOP/s)")
            check.say(f"  {r['measured_vs_estimate']}; reserved {r['cuda_peak_reserved_gib']} GiB")
            check.say(f"  checks: {json.dumps(r['checks'])}")

    check.say(f"\n{len(check.failures)} failure(s); {time.perf_counter() - check.start:.0f} s in all")
    report = Path(args.report or ROOT / "book" / "gpu-check.txt")
    report.write_text("\n".join(check.lines) + "\n", encoding="utf-8")
    print(f"report written to {report}")
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
