"""labs.retrieval.device on the CPU: determinism, precision by capability (CUDA answers monkeypatched), float32 master weights."""

import random
import re

import numpy as np
import pytest
import torch

from labs.retrieval import device as gpu
from labs.retrieval import machine


@pytest.fixture
def restore_torch_state(monkeypatch):
    """Give each test a clean CUBLAS_WORKSPACE_CONFIG and put torch's global switches back afterwards."""
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    benchmark = torch.backends.cudnn.benchmark
    state = torch.random.get_rng_state()
    yield
    torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
    torch.backends.cudnn.benchmark = benchmark
    torch.random.set_rng_state(state)


def _draws():
    return random.random(), float(np.random.rand()), float(torch.rand(1))


def test_set_determinism_seeds_everything_and_sets_the_cublas_workspace(restore_torch_state):
    import os

    gpu.set_determinism(7)
    first = _draws()
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert torch.are_deterministic_algorithms_enabled()
    assert not torch.is_deterministic_algorithms_warn_only_enabled()
    assert torch.backends.cudnn.benchmark is False
    gpu.set_determinism(7)
    assert _draws() == first
    gpu.set_determinism(8)
    assert _draws() != first


def test_set_determinism_off_leaves_the_workspace_alone(restore_torch_state):
    import os

    gpu.set_determinism(0, deterministic=False)
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ
    assert not torch.are_deterministic_algorithms_enabled()


def test_set_determinism_keeps_a_deterministic_workspace_already_set(restore_torch_state, monkeypatch):
    import os

    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
    gpu.set_determinism(0)
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"


def test_set_determinism_refuses_a_nondeterministic_workspace(restore_torch_state, monkeypatch):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":0:0")
    with pytest.raises(ValueError, match="not deterministic"):
        gpu.set_determinism(0)


def test_set_determinism_refuses_when_cuda_started_without_the_workspace(restore_torch_state, monkeypatch):
    import os

    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    with pytest.raises(RuntimeError, match="before CUDA starts"):
        gpu.set_determinism(0)
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # started with it: fine
    gpu.set_determinism(0)
    assert torch.are_deterministic_algorithms_enabled()


def _fake_cuda(monkeypatch, native_bf16: bool):
    calls = []

    def is_bf16_supported(including_emulation: bool = True):
        calls.append(including_emulation)
        return native_bf16 or including_emulation  # a T4: True only by emulation

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", is_bf16_supported)
    return calls


def test_training_precision_cpu_is_fp32():
    assert gpu.training_precision("cpu") == "fp32"


def test_training_precision_native_bf16_card(monkeypatch):
    calls = _fake_cuda(monkeypatch, native_bf16=True)
    assert gpu.training_precision("cuda") == "bf16"
    assert gpu.training_precision("cuda:1") == "bf16"
    assert calls == [False, False]


def test_training_precision_t4_gets_fp16_despite_emulated_bf16(monkeypatch):
    _fake_cuda(monkeypatch, native_bf16=False)
    assert torch.cuda.is_bf16_supported()  # what a T4 says when asked the default way
    assert gpu.training_precision("cuda") == "fp16"


@pytest.mark.parametrize("device, message", [
    ("mps", "'cpu', 'cuda' or 'cuda:N'"), ("cpu:0", "'cpu', 'cuda' or 'cuda:N'"), ("cuda:", "'cpu', 'cuda' or 'cuda:N'"),
    (0, "'cpu', 'cuda' or 'cuda:N'"), ("cuda", "no CUDA GPU"), ("cuda:1", "no CUDA GPU"),
])
def test_the_one_device_rule(monkeypatch, device, message):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=re.escape(message)):
        machine.device(device, "--device")
    assert machine.device("cpu", "--device") == "cpu"


def test_the_one_device_rule_names_the_gpus_there_are(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert machine.device("cuda:1", "--device") == "cuda:1"
    with pytest.raises(ValueError, match="torch sees 2 GPU"):
        machine.device("cuda:2", "--device")


def test_autocast_dtype():
    assert gpu.autocast_dtype("bf16") is torch.bfloat16
    assert gpu.autocast_dtype("fp16") is torch.float16
    assert gpu.autocast_dtype("fp32") is None
    with pytest.raises(ValueError, match="precision"):
        gpu.autocast_dtype("float16")


def test_assert_float32_master_names_the_first_low_precision_parameter():
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
    gpu.assert_float32_master(model)
    model[1].bfloat16()
    with pytest.raises(TypeError, match=r"parameter '1\.weight' is torch\.bfloat16"):
        gpu.assert_float32_master(model)
    model[1].weight.requires_grad_(False)  # frozen weights never reach the optimizer
    with pytest.raises(TypeError, match=r"'1\.bias'"):
        gpu.assert_float32_master(model)
    model.float()
    gpu.assert_float32_master(model)


def test_the_bf16_rounding_the_rule_prevents():
    """A 2e-5 step on a weight of 0.02 vanishes in bf16 and survives in float32 (the reason for the rule)."""
    w = torch.tensor(0.02)
    assert (w.bfloat16() - 2e-5).bfloat16() == w.bfloat16()
    assert (w - 2e-5) != w


def test_describe_device_cpu():
    line = gpu.describe_device("cpu")
    assert line.startswith("cpu: ") and "float32" in line


def test_describe_device_fake_cuda(monkeypatch):
    from types import SimpleNamespace

    _fake_cuda(monkeypatch, native_bf16=False)
    props = SimpleNamespace(name="Tesla T4", major=7, minor=5, total_memory=15 * 2**30)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)
    line = gpu.describe_device("cuda")
    assert "Tesla T4" in line and "7.5" in line and "fp16 autocast" in line and "15.0 GiB" in line


def test_the_real_is_bf16_supported_takes_including_emulation():
    """The fakes above mirror torch's own signature; this keeps them honest."""
    import inspect

    assert "including_emulation" in inspect.signature(torch.cuda.is_bf16_supported).parameters


def _load_script(name: str):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.e2e
def test_the_gpu_benchmark_runs_its_cpu_form_on_the_tiny_architecture(restore_torch_state, capsys):
    """Same code as the full-size run: left-padded mixed lengths, checks at the end, estimate beside the peak."""
    bench = _load_script("qwen3_gpu")
    result = bench.main(["--size", "tiny", "--device", "cpu", "--batch-size", "4", "--max-length", "32",
                         "--warmup", "1", "--steps", "1"])
    assert all(v is True for k, v in result["checks"].items() if k != "embedding_shape")
    assert result["checks"]["embedding_shape"] == [2, 64]
    assert result["tokens_per_step_real"] < result["tokens_per_step_padded"]  # padding is really there
    assert result["precision"] == "fp32" and result["mfu"] is None and result["deterministic"] is True
    assert result["estimate_gib"]["autocast_copies"] == 0 and "estimate" in result["measured_vs_estimate"]
    assert '"checks"' in capsys.readouterr().out


def test_the_gpu_benchmark_refuses_cuda_without_a_gpu(restore_torch_state, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit, match="no CUDA GPU.*--device cpu"):
        _load_script("qwen3_gpu").main(["--device", "cuda"])


def test_peak_tflops_table():
    bench = _load_script("qwen3_gpu")
    assert bench.peak_tflops("cpu", "fp32", None) is None and bench.peak_tflops("cuda", "bf16", 100.0) == 100.0
    names = [name for rows in bench.PEAK_TFLOPS.values() for name, _ in rows]
    for i, name in enumerate(names):  # a more specific name must come before any name it contains
        assert not any(earlier in name for earlier in names[:i] if earlier != name), name


def test_gpu_check_without_cuda_writes_nothing_and_exits_2(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    report = tmp_path / "gpu-check.txt"
    assert _load_script("gpu_check").main(["--report", str(report)]) == 2
    assert not report.exists()
    assert "no CUDA GPU here" in capsys.readouterr().err


def test_gpu_check_history_ignores_timings():
    history = _load_script("gpu_check")._history
    a = {"history": [{"epoch": 1, "train_loss": 0.5, "mrr@5": 0.4, "seconds": 1.0}]}
    b = {"history": [{"epoch": 1, "train_loss": 0.5, "mrr@5": 0.4, "seconds": 2.0}]}
    assert history(a) == history(b)
    b["history"][0]["train_loss"] = 0.50001
    assert history(a) != history(b)


def test_fits_in_memory(monkeypatch):
    from types import SimpleNamespace

    assert gpu.fits_in_memory(10**15, "cpu")
    _fake_cuda(monkeypatch, native_bf16=False)
    t4 = SimpleNamespace(name="Tesla T4", major=7, minor=5, total_memory=15 * 2**30)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: t4)
    assert gpu.fits_in_memory(12 * 2**30, "cuda")
    assert not gpu.fits_in_memory(14 * 2**30, "cuda")  # 14 > 0.85 x 15: the context and slack need room
