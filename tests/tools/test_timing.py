"""tools/timing.py and tools/timed.py: what `make test`'s summary reads, measured as the Makefile runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tools import timing

ROOT = Path(__file__).resolve().parents[2]


def _pytest(tmp_path: Path, *args: str, key: str | None = None) -> subprocess.CompletedProcess:
    # Only the plugins named (an autoloaded set costs seconds a run).
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIMINGS_DIR": str(tmp_path / "timings"),
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("TIMING_KEY", None)
    if key:
        env["TIMING_KEY"] = key
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tools.timing", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


SPIN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {}: pass\n"


@pytest.mark.e2e
def test_the_slowest_tests_are_listed_slowest_first_with_wall_cpu_and_the_count(tmp_path):
    (tmp_path / "test_some.py").write_text(
        "import subprocess, sys, time\n\ndef test_sleeps():\n    time.sleep(0.6)\n\n"
        f"def test_spins():\n    exec({SPIN.format(0.4)!r})\n\n"
        f"def test_spins_in_a_subprocess():\n    subprocess.run([sys.executable, '-c', {SPIN.format(0.3)!r}])\n\n"
        "def test_fast():\n    pass\n\ndef test_fails():\n    assert False\n")
    done = _pytest(tmp_path, "test_some.py")
    assert done.returncode == 1, done.stdout  # it measures; the failure is the test's own
    found = json.loads((tmp_path / "timings" / "unit_slowest.json").read_text())
    assert found["unit_tests"] == 5
    rows = {test.split("::")[1]: (wall, cpu) for test, wall, cpu in found["unit_slowest"]}
    assert [w for _, w, _ in found["unit_slowest"]] == sorted((w for _, w, _ in found["unit_slowest"]), reverse=True)
    assert rows["test_sleeps"][0] >= 0.6 and rows["test_sleeps"][1] < 0.3  # waiting is wall time, not CPU
    assert rows["test_spins"][1] >= 0.4
    assert rows["test_spins_in_a_subprocess"][1] >= 0.3  # a subprocess it waited for counts


@pytest.mark.e2e
def test_under_xdist_the_controller_lists_every_workers_tests_with_their_cpu(tmp_path):
    """make unit runs `-n 2`: each worker measures its tests, the controller alone writes them all."""
    (tmp_path / "test_some.py").write_text(
        "import time\n\n"
        + "".join(f"def test_spins_{i}():\n    exec({SPIN.format(0.2)!r})\n\n" for i in range(4))
        + "def test_sleeps():\n    time.sleep(0.3)\n")
    done = _pytest(tmp_path, "-p", "xdist", "-n", "2", "test_some.py")
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads((tmp_path / "timings" / "unit_slowest.json").read_text())
    rows = {test.split("::")[1]: (wall, cpu) for test, wall, cpu in found["unit_slowest"]}
    assert found["unit_tests"] == 5 and len(rows) == 5
    assert all(rows[f"test_spins_{i}"][1] >= 0.2 for i in range(4))
    assert rows["test_sleeps"][0] >= 0.3 and rows["test_sleeps"][1] < 0.2


@pytest.mark.e2e
def test_each_notebook_gets_wall_and_cpu_and_its_slowest_cells_named(tmp_path):
    nb = new_notebook(cells=[new_code_cell("import time\ntime.sleep(0.5)"), new_code_cell(SPIN.format(0.4)),
                             new_code_cell("# a comment first\n" + SPIN.format(0.2)), new_code_cell("x = 1")])
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"c{i}"
    nbformat.write(nb, tmp_path / "nb.ipynb")
    done = _pytest(tmp_path, "-p", "nbval", "--nbval-lax", "--nbval-current-env", "nb.ipynb", key="notebooks_alt")
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads((tmp_path / "timings" / "notebooks_alt.json").read_text())
    wall, cpu = found["notebooks_alt"]["nb.ipynb"]
    assert wall >= 1.1 and cpu >= 0.6  # the kernel's CPU counts, not only pytest's
    cells = found["notebooks_alt_cells"]["nb.ipynb"]
    assert [c for c, _, _ in cells] == ["cell 0 (c0): import time", "cell 1 (c1): import time",
                                        "cell 2 (c2): # a comment first"]
    by_cell = {c.split(":")[0]: (w, u) for c, w, u in cells}
    assert by_cell["cell 1 (c1)"][1] >= 0.4 and by_cell["cell 2 (c2)"][1] >= 0.2
    # the kernel ends in the last cell's teardown: what it used before is not counted a second time
    assert cpu < sum(u for _, _, u in cells) + 1.0


@pytest.mark.parametrize("before, after, used", [
    (None, (7, 1.5), 1.5),  # a kernel started in between: all of it
    ((7, 1.5), (7, 2.0), 0.5),  # the same kernel
    ((7, 1.5), None, -1.5),  # it ended, and was waited for: the caller's own count holds all of it
    ((7, 1.5), (8, 0.25), -1.25),  # one ended, another started
    (None, None, 0.0),
])
def test_kernel_cpu_counts_each_second_once(before, after, used):
    assert timing.kernel_cpu(before, after) == used


def test_a_bad_key_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(timing, "_tests", [("t.py::test_one", 0.1, 0.1)])
    monkeypatch.setenv("TIMING_KEY", "Unit-1")
    monkeypatch.setenv("TIMINGS_DIR", str(tmp_path))
    with pytest.raises(pytest.UsageError, match="TIMING_KEY must be lower-case letters and '_', got 'Unit-1'"):
        timing.pytest_sessionfinish(None, 0)
    assert not list(tmp_path.iterdir())


def test_timed_records_wall_and_cpu_and_keeps_the_exit_status(tmp_path):
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\nraise SystemExit(3)"
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "timed.py"), str(tmp_path), "spin",
                           sys.executable, "-c", spin], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    found = json.loads((tmp_path / "spin.json").read_text())
    assert set(found) == {"spin_s", "spin_cpu_s"} and found["spin_cpu_s"] >= 0.3 and found["spin_s"] >= 0.3


# A parent that leaves a spinning grandchild behind and ends at once, as Chromium leaves its zygote.
ORPHAN = ("import os, sys, time\n"
          "if os.fork() == 0:\n"
          "    if os.fork() == 0:\n"
          "        t = time.process_time()\n"
          "        while time.process_time() - t < 0.4: pass\n"
          "    os._exit(0)\n"
          "os.wait()\n")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a child subreaper is Linux's")
def test_timed_counts_the_cpu_of_an_orphan_nobody_waited_for(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "timed.py"), str(tmp_path), "orphan",
                           sys.executable, "-c", ORPHAN], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    found = json.loads((tmp_path / "orphan.json").read_text())
    assert found["orphan_cpu_s"] >= 0.4  # getrusage alone: about 0.05 (the parents only)
    # nothing of it is left running or unreaped
    assert not subprocess.run(["pgrep", "-f", "process_time\\(\\) - t < 0.4"], capture_output=True).stdout


def test_timed_names_a_command_it_cannot_run_and_a_bad_key(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "timed.py"), str(tmp_path), "gone",
                           str(tmp_path / "no-such-command")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 127 and "cannot run" in done.stderr and "no-such-command" in done.stderr
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "timed.py"), str(tmp_path), "Bad Key", "true"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "usage:" in done.stderr
