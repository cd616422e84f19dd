"""Where a run computes and what it costs: determinism, precision by capability, float32 master
weights, memory probes and the library versions a run records.

In plain words: three rules every training path of the course follows.

1. **Determinism that works on CUDA.** `set_determinism` seeds Python, NumPy and
   torch, and asks torch for deterministic kernels. On CUDA, cuBLAS is only
   deterministic with a fixed workspace, ``CUBLAS_WORKSPACE_CONFIG=:4096:8``,
   which must be in the environment before the first cuBLAS call; without it
   the first matmul under ``torch.use_deterministic_algorithms(True)`` raises.
   The function sets it (if unset) and refuses when CUDA already started
   without it, instead of failing later inside a matmul.
2. **Mixed precision by capability.** `training_precision` says which autocast
   the card runs natively: ``"bf16"`` on Ampere and newer (A100, L4, H100),
   ``"fp16"`` (with a gradient scaler) on older cards such as the T4, whose
   bf16 is emulated (``torch.cuda.is_bf16_supported()`` says True there;
   ``including_emulation=False`` says the truth), ``"fp32"`` on the CPU.
3. **Float32 master weights.** Whatever dtype a checkpoint stores (the published
   Qwen3-Embedding-0.6B stores bf16), the weights the optimizer updates are
   float32: a step of 2e-5 on a weight of 0.02 is below half of bf16's spacing
   there (2**-13 ~ 1.2e-4 for weights in [2**-6, 2**-5)) and rounds away.
   Autocast computes in bf16/fp16; the weights stay float32.
   `assert_float32_master` checks it before the optimizer is built.

Memory: `status_kib`, `reset_peak`, `peak_rss_mib`, `memory_report` measure the per-process
resident peak (Linux ``VmHWM``, resettable), never the lifetime ``ru_maxrss`` unless nothing
better exists. `versions` names the libraries a run used.

Device names are checked once, at the edge, by `labs.retrieval.machine.device`; the functions
here trust the name they are given. Relations: `labs.retrieval.training` (the CLI's ``train``),
`labs.retrieval.distributed` and ``benchmarks/qwen3_gpu.py`` use these. Page: ``book/gpu.md``.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import numpy as np
import torch

from labs.retrieval.config import PRECISIONS

__all__ = [
    "CUBLAS_WORKSPACE",
    "set_determinism",
    "training_precision",
    "autocast_dtype",
    "assert_float32_master",
    "fits_in_memory",
    "describe_device",
    "status_kib",
    "reset_peak",
    "peak_rss_mib",
    "memory_report",
    "versions",
]

CUBLAS_WORKSPACE = ":4096:8"          # one of the two values cuBLAS documents as deterministic
_DETERMINISTIC_WORKSPACES = (":4096:8", ":16:8")


def set_determinism(seed: int, *, deterministic: bool = True) -> None:
    """Seed ``random``, NumPy and torch (CPU and every GPU) with ``seed``; with ``deterministic``,
    make torch use deterministic kernels only (an op without one raises instead of varying).

    Sets ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` when it is unset. Raises RuntimeError if
    ``deterministic`` and CUDA has already started with no deterministic workspace set:
    cuBLAS reads the variable when it starts, so call this first, before any CUDA work.
    """
    if deterministic:
        current = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
        if current not in _DETERMINISTIC_WORKSPACES:
            if torch.cuda.is_initialized():
                raise RuntimeError(
                    f"CUDA already started with CUBLAS_WORKSPACE_CONFIG={current!r}; deterministic cuBLAS needs "
                    f"{CUBLAS_WORKSPACE!r} before CUDA starts: call set_determinism before any CUDA work, "
                    f"or export CUBLAS_WORKSPACE_CONFIG={CUBLAS_WORKSPACE}")
            if current is not None:
                raise ValueError(f"CUBLAS_WORKSPACE_CONFIG={current!r} is not deterministic; "
                                 f"use {' or '.join(_DETERMINISTIC_WORKSPACES)}")
            os.environ["CUBLAS_WORKSPACE_CONFIG"] = CUBLAS_WORKSPACE
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # seeds the CPU generator and every CUDA device's
    torch.use_deterministic_algorithms(deterministic, warn_only=False)
    if deterministic:
        torch.backends.cudnn.benchmark = False  # autotuning may pick a different kernel each run


def training_precision(device: str) -> str:
    """``"bf16"`` on a CUDA card with native bf16, ``"fp16"`` on an older CUDA card (T4, V100),
    ``"fp32"`` on the CPU. ``device`` is ``"cpu"``, ``"cuda"`` or ``"cuda:N"``."""
    if str(device).split(":")[0] == "cpu":
        return "fp32"
    return "bf16" if torch.cuda.is_bf16_supported(including_emulation=False) else "fp16"


def autocast_dtype(precision: str) -> torch.dtype | None:
    """The autocast dtype for a precision name: bf16 -> torch.bfloat16, fp16 -> torch.float16, fp32 -> None."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": None}[precision]


def assert_float32_master(model: torch.nn.Module) -> None:
    """Raise TypeError naming the first trainable parameter that is not float32, with its dtype.

    Call it after loading and before building the optimizer: the optimizer must update
    float32 weights (autocast computes in bf16/fp16 without changing them).
    """
    for name, param in model.named_parameters():
        if param.requires_grad and param.dtype != torch.float32:
            raise TypeError(
                f"parameter {name!r} is {param.dtype}, not torch.float32: the optimizer would update "
                f"low-precision weights and small steps would round away; load in float32 "
                f"(dtype=torch.float32, or model.float()) and let autocast compute in bf16/fp16")


def fits_in_memory(estimate_bytes: int, device: str, share: float = 0.85) -> bool:
    """Whether a training step estimated at ``estimate_bytes`` (`labs.retrieval.qwen3.training_memory`'s
    ``total``) fits in ``share`` of the GPU's memory (the rest: CUDA context, allocator slack).
    Always True on the CPU, where gradient checkpointing only costs time."""
    if str(device).split(":")[0] == "cpu":
        return True
    total = torch.cuda.get_device_properties(torch.device(device).index or 0).total_memory
    return estimate_bytes <= share * total


def describe_device(device: str) -> str:
    """One line: the device, and for CUDA its name, compute capability, memory and precision."""
    kind = str(device).split(":")[0]
    if kind == "cpu":
        return f"cpu: {torch.get_num_threads()} threads, float32 training (torch {torch.__version__})"
    precision = training_precision(device)
    index = torch.device(device).index or 0
    props = torch.cuda.get_device_properties(index)
    native = "native bf16" if precision == "bf16" else "no native bf16: fp16 autocast with a gradient scaler"
    return (f"{device}: {props.name}, compute capability {props.major}.{props.minor}, "
            f"{props.total_memory / 2**30:.1f} GiB, {native} (torch {torch.__version__}, CUDA {torch.version.cuda})")


def status_kib(field: str) -> int:
    """A field of Linux ``/proc/self/status`` in KiB (``VmRSS`` now, ``VmHWM`` the peak since reset)."""
    return int(re.search(rf"{field}:\s+(\d+)", Path("/proc/self/status").read_text()).group(1))


def reset_peak() -> bool:
    """Reset this process's resident high-water mark (Linux clear_refs '5'); False where not allowed."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mib() -> tuple[float, str]:
    """(peak resident MiB of this process, how it was measured).

    Linux: ``VmHWM``, the peak since the last `reset_peak` (or since start). Elsewhere
    the lifetime ``ru_maxrss`` (KiB on Linux, bytes on macOS), or psutil's current
    resident size on Windows, which has neither.
    """
    try:
        return status_kib("VmHWM") / 1024, "VmHWM"
    except (OSError, AttributeError):
        pass
    try:
        import resource  # Unix only
        import sys

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (2**20 if sys.platform == "darwin" else 1024), "ru_maxrss (lifetime)"
    except ImportError:
        import psutil

        return psutil.Process().memory_info().rss / 2**20, "psutil rss (current, not a peak)"


def memory_report(device: str) -> dict:
    """Peak CPU resident memory of this process, and CUDA's peak allocated/reserved on ``device`` cuda."""
    mib, method = peak_rss_mib()
    out = {"cpu_peak_rss_mib": round(mib, 1), "cpu_peak_method": method}
    if str(device).startswith("cuda"):
        import torch

        out["cuda_peak_allocated_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 3)
        out["cuda_peak_reserved_gib"] = round(torch.cuda.max_memory_reserved() / 2**30, 3)
    return out


def versions() -> dict:
    """torch, transformers and sentence-transformers versions, for a run's metrics."""
    import sentence_transformers
    import torch
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "sentence_transformers": sentence_transformers.__version__}
