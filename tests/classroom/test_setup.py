"""labs.classroom.setup.setup(): what the first cell of every lesson prepares.

The settings are read in one fresh process (torch's threads and determinism, the hub's switches and
the cuBLAS workspace are process-wide): it runs setup() once per case, clearing the hub's switches
and the Colab marker between cases, and reports each case.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import labs.classroom.setup as first_cell

ROOT = Path(__file__).resolve().parents[2]

#: (label, on Colab, setup's keyword arguments, switch set before the kernel started, the hub's switch after)
HUB_CASES = [
    ("a laptop or CI: the packaged model, no hub", False, {}, None, "1"),
    ("Colab: lesson 7 may fetch Qwen3 for a GPU run", True, {}, None, "0"),
    ("Colab, told offline", True, {"offline": True}, None, "1"),
    ("a laptop, told online", False, {"offline": False}, None, "0"),
    ("set before the kernel started: it wins", True, {}, "1", "1"),
]

PROBE = """
import json, os, sys, types
import torch
from labs.classroom.setup import setup

SWITCHES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
report = {"cases": []}
for colab, kwargs, before in json.loads(sys.argv[1]):
    for name in SWITCHES:
        os.environ.pop(name, None)
    if before is not None:
        os.environ["HF_HUB_OFFLINE"] = before
    sys.modules.pop("google.colab", None)
    if colab:
        sys.modules["google.colab"] = types.ModuleType("google.colab")  # what a Colab kernel has imported
    glue = setup(3, threads=1, **kwargs)
    report["cases"].append({"hub": os.environ["HF_HUB_OFFLINE"], "draw": float(torch.rand(1)),
                            "glue": glue.__qualname__, "module": glue.__module__})
import importlib.util
found = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name == "myst_nb" else found(name, *a)  # as on Colab
report["without_book_tools"] = setup(3, threads=1).__qualname__
report.update(threads=torch.get_num_threads(), deterministic=torch.are_deterministic_algorithms_enabled(),
              workspace=os.environ.get("CUBLAS_WORKSPACE_CONFIG"), tf32=torch.backends.cuda.matmul.allow_tf32,
              cuda_started=torch.cuda.is_initialized())
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def probed() -> dict:
    cases = [[colab, kwargs, before] for _, colab, kwargs, before, _ in HUB_CASES]
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_OFFLINE") and k != "CUBLAS_WORKSPACE_CONFIG"}
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(cases)], capture_output=True, text=True,
                          cwd=ROOT, env=clean, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.e2e  # the probe: setup() in a fresh process
def test_setup_seeds_threads_determinism_and_cuda_settings(probed):
    draws = {case["draw"] for case in probed["cases"]}
    assert len(draws) == 1  # every call seeds torch's generator again: the same first draw
    assert probed["threads"] == 1 and probed["deterministic"] is True
    assert probed["workspace"] == ":4096:8" and probed["tf32"] is False  # set before any CUDA call could start it
    assert probed["cuda_started"] is False
    first = probed["cases"][0]
    assert (first["module"], first["glue"]) == ("labs.classroom.setup", "glue")  # the book tools are installed here


@pytest.mark.e2e  # the probe: setup() in a fresh process
@pytest.mark.parametrize("index", range(len(HUB_CASES)), ids=[case[0] for case in HUB_CASES])
def test_the_hub_is_off_except_on_colab_unless_told(probed, index):
    assert probed["cases"][index]["hub"] == HUB_CASES[index][-1]


@pytest.mark.e2e  # the probe: setup() in a fresh process
def test_without_the_book_tools_glue_is_a_stand_in(probed):
    assert probed["without_book_tools"] == "_no_glue"


@pytest.fixture(scope="module")
def shell():
    """An IPython shell in this process for display() to publish through, cleared afterwards: later
    tests ask get_ipython() whether they run in a kernel."""
    from IPython.core.interactiveshell import InteractiveShell

    had_shell = InteractiveShell.initialized()
    yield InteractiveShell.instance()
    if not had_shell:
        InteractiveShell.clear_instance()


@pytest.mark.parametrize("value", [0.4375, 12, "a word", [1, 2]])
@pytest.mark.parametrize("display", [True, False])
def test_glue_sends_what_myst_nb_glue_sends(shell, monkeypatch, value, display):
    """The same display message, data and metadata, as myst_nb.glue (which the book build reads)."""
    from IPython.core import display_functions
    from myst_nb import glue as myst_glue

    sent: list[tuple] = []
    monkeypatch.setattr(display_functions, "publish_display_data",
                        lambda data, metadata=None, **kw: sent.append((data, metadata, kw)))
    myst_glue("key", value, display=display)
    first_cell.glue("key", value, display=display)
    assert len(sent) == 2 and sent[0] == sent[1]
    data, metadata, _ = sent[1]
    assert metadata["scrapbook"]["name"] == "key"
    assert all(k.startswith("application/papermill.record/") for k in data) is (not display)
