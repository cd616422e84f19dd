"""tools/report.py: `make test`'s summary shows wall and CPU time of the run and of each part, the
slowest unit tests and each notebook's slowest cells, and the budgets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tools.report import BUDGETS, PARTS, summary

ROOT = Path(__file__).resolve().parents[2]
RUN = {"make_test_s": 540.0, "make_test_cpu_s": 1010.5, "unit_s": 170.2, "unit_cpu_s": 300.1,
       "nbval_s": 250.0, "nbval_cpu_s": 260.4,
       "unit_slowest": [["tests/a.py::test_x", 12.5, 11.0], ["tests/b.py::test_y", 3.0, 0.2]], "unit_tests": 900,
       "notebooks": {"01_pooling.ipynb": [20.0, 25.1]},
       "notebooks_alt": {"01_pooling.ipynb": [70.0, 60.3], "02_gradients.ipynb": [4.0, 3.5]},
       "notebooks_cells": {"01_pooling.ipynb": [["cell 4 (p04): model = load()", 9.5, 9.1]]}}


def text_of(times: dict) -> str:
    return "\n".join(summary(times))


def test_the_summary_gives_cpu_beside_wall_for_the_run_and_each_part():
    text = text_of(RUN)
    assert "make test, install included                    540.0 s  CPU  1010.5 s  (budget 600 s: ok)" in text
    assert "unit tests                                     170.2 s  CPU   300.1 s" in text
    assert "nbval, every notebook                          250.0 s  CPU   260.4 s" in text
    assert "set-up (install, npm, compile)               not measured" in text  # a part this run did not write


def test_the_slowest_unit_tests_and_cells_are_listed_with_wall_and_cpu():
    text = text_of(RUN)
    assert "The 2 slowest of 900 unit tests" in text
    assert "   12.5 s  CPU    11.0 s  tests/a.py::test_x" in text and "    3.0 s  CPU     0.2 s  tests/b.py::test_y" in text
    assert "01_pooling.ipynb               20.0 s  CPU    25.1 s |    70.0 s  CPU    60.3 s" in text
    assert "       9.5 s  CPU     9.1 s  cell 4 (p04): model = load()" in text
    assert "02_gradients.ipynb            not run                |     4.0 s  CPU     3.5 s" in text


def test_side_by_side_the_alone_budgets_are_not_applied_and_it_says_why():
    text = text_of(RUN)
    assert "side by side" in text and "OVER BUDGET" not in text  # 170 s of unit tests, and lesson 1 at 70 s


def test_alone_the_unit_and_notebook_budgets_apply():
    alone = {k: v for k, v in RUN.items() if not k.startswith("make_test")}
    alone["unit_s"] = BUDGETS["unit"] + 1
    text = text_of(alone)
    assert f"unit tests                                     181.0 s  CPU   300.1 s  (budget {BUDGETS['unit']} s: OVER BUDGET)" in text
    assert f"60.3 s  (budget {BUDGETS['notebook']} s: OVER BUDGET)" in text  # the second pass of lesson 1: 70 s
    assert f"3.5 s  (budget {BUDGETS['notebook']} s: ok)" in text


def test_a_bare_wall_time_still_reads():
    text = text_of({"unit_slowest": [["t.py::test_a", 2.0]], "notebooks": {"01_pooling.ipynb": 20.0}})
    assert "    2.0 s                 t.py::test_a" in text and "01_pooling.ipynb               20.0 s" in text


def test_what_a_run_did_not_write_says_not_measured():
    lines = [line for line in summary({}) if line.endswith("not measured")]
    # every part, the two checks' own times, the slowest unit and end-to-end tests, the notebooks, the page weights
    assert len(lines) == len(PARTS) + 6
    assert any("make test, install included" in line for line in lines)


def test_the_command_reads_a_folder_and_ends_with_the_load(tmp_path):
    (tmp_path / "unit.json").write_text(json.dumps({"unit_s": 12.0, "unit_cpu_s": 20.0}))
    (tmp_path / "broken.json").write_text("{")
    done = subprocess.run([sys.executable, "-m", "tools.report", str(tmp_path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "broken.json: unreadable" in done.stdout
    assert "unit tests                                      12.0 s  CPU    20.0 s  (budget 180 s: ok)" in done.stdout
    assert done.stdout.rstrip().splitlines()[-1].startswith("  load average now:")
