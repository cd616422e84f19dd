"""labs.classroom.setup.setup(): what the first cell of every lesson prepares, each case in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, os, sys, types
if {colab!r}:
    sys.modules["google.colab"] = types.ModuleType("google.colab")  # what a Colab kernel has imported
import torch
from labs.classroom.setup import setup
glue = setup(3, threads=1{extra})
print(json.dumps({{"hub": os.environ["HF_HUB_OFFLINE"], "threads": torch.get_num_threads(),
                  "deterministic": torch.are_deterministic_algorithms_enabled(),
                  "workspace": os.environ.get("CUBLAS_WORKSPACE_CONFIG"), "tf32": torch.backends.cuda.matmul.allow_tf32,
                  "glue": glue.__module__, "draw": float(torch.rand(1))}}))
"""


def probe(colab: bool = False, extra: str = "", env: dict | None = None) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_OFFLINE") and k != "CUBLAS_WORKSPACE_CONFIG"}
    done = subprocess.run([sys.executable, "-c", PROBE.format(colab=colab, extra=extra)], capture_output=True,
                          text=True, cwd=ROOT, env={**clean, **(env or {})}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_setup_seeds_threads_determinism_and_cuda_settings():
    first, again = probe(), probe()
    assert first["draw"] == again["draw"]  # the seed fixes torch's generator
    assert first["threads"] == 1 and first["deterministic"] is True
    assert first["workspace"] == ":4096:8" and first["tf32"] is False  # set before any CUDA call could start it
    assert first["glue"].startswith("myst_nb")  # the book tools are installed here


@pytest.mark.parametrize("colab, extra, env, hub", [
    (False, "", None, "1"),  # a laptop or CI: the packaged model, no hub
    (True, "", None, "0"),  # Colab: lesson 7 may fetch Qwen3 for a GPU run
    (True, ", offline=True", None, "1"),
    (False, ", offline=False", None, "0"),
    (True, "", {"HF_HUB_OFFLINE": "1"}, "1"),  # set before the kernel started: it wins
])
def test_the_hub_is_off_except_on_colab_unless_told(colab, extra, env, hub):
    assert probe(colab, extra, env)["hub"] == hub
