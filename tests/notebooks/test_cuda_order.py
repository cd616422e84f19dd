"""GPU runtimes, rehearsed on the CPU (tools/platforms/cuda_rehearsal.py): every lesson's second code cell
makes its CUDA settings through setup(), and nothing starts CUDA before them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import nbformat
import pytest

from tests.notebooks.test_rules import NOTEBOOKS, ROOT
from tools.platforms.cuda_rehearsal import problems

INSTALL = "# the install cell: nothing here\nimport sys\n"
TOO_EARLY = ("import torch\nfrom labs.classroom.setup import setup\n"
             "x = torch.ones(2, device='cuda')  # a model moved to the GPU before setup()\nglue = setup(0)\n")
IN_ORDER = ("import torch\nfrom labs.classroom.setup import setup\nglue = setup(0, deterministic=False)\n"
            "x = torch.ones(2, device='cuda')  # after setup(): ready\n")

pytestmark = pytest.mark.e2e  # fresh processes end to end (make e2e)


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory) -> dict[str, dict]:
    """One process for every lesson and two made-up ones: imports are paid once."""
    made = tmp_path_factory.mktemp("cuda")
    for name, cell in (("too_early", TOO_EARLY), ("in_order", IN_ORDER)):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(INSTALL), nbformat.v4.new_code_cell(cell)])
        nbformat.write(nb, made / f"{name}.ipynb")
    paths = [*NOTEBOOKS, made / "too_early.ipynb", made / "in_order.ipynb"]
    done = subprocess.run([sys.executable, "-m", "tools.platforms.cuda_rehearsal", *map(str, paths)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, env={**os.environ, "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {r["notebook"]: r for r in results}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_cuda_settings_come_before_cuda(rehearsal, path):
    result = rehearsal[path.name]
    assert problems(result) == []
    assert result["events"] == []  # neither cell starts CUDA at all


def test_the_rehearsal_catches_cuda_started_before_setup(rehearsal):
    found = problems(rehearsal["too_early.ipynb"])
    assert any("CUDA starts in cell 2 before setup()" in p and "device='cuda'" in p for p in found), found


def test_cuda_after_setup_is_ready_even_without_deterministic_kernels(rehearsal):
    result = rehearsal["in_order.ipynb"]
    assert [e["where"] for e in result["events"]] == ["line 4: x = torch.ones(2, device='cuda')  # after setup(): ready"]
    assert problems(result) == []
    assert result["after"]["workspace"] == ":4096:8" and not result["after"]["deterministic"]
