"""A pytest plugin (``-p tools.timing``): where a test run's time goes, for `make test`'s summary.

Writes one JSON file into ``TIMINGS_DIR`` (default ``.cache/timings``), under a key: ``TIMING_KEY``
(``notebooks``, ``notebooks_alt``, ``unit``), by default ``notebooks`` for an nbval run and ``unit``
otherwise. Every time is a pair, wall seconds and CPU seconds (user plus system, all cores together):

- under nbval (notebook items), ``KEY.json``: ``{"KEY": {notebook: [wall, cpu]}, "KEY_cells":
  {notebook: [[cell, wall, cpu], ...]}}``, each notebook's SLOWEST_CELLS slowest cells, a cell named
  by its index, its id and its first line. The CPU counts the notebook's kernel as well as pytest.
- otherwise, ``KEY_slowest.json``: ``{"KEY_slowest": [[test, wall, cpu], ...], "KEY_tests": n}``,
  the SLOWEST_TESTS slowest of the n tests that ran, each with its setup, call and teardown (so a
  session fixture's build counts in the first test that asks for it, as in pytest's
  ``--durations``). The CPU counts the subprocesses a test waited for. Under pytest-xdist
  (``-n 2``) each worker measures its own tests and sends the pair with the test's teardown report;
  only the controller writes the file.

A wall time far above its CPU time is a test that waited: for a subprocess it did not wait for, for
the network, or for the cores, on a loaded machine. It measures; it never fails a test.
"""

from __future__ import annotations

import json
import os
import re
import resource
import time
from collections import defaultdict
from pathlib import Path

import psutil
import pytest

SLOWEST_TESTS, SLOWEST_CELLS = 15, 3

_notebooks: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
_cells: dict[str, list[tuple[str, float, float]]] = defaultdict(list)
_tests: list[tuple[str, float, float]] = []


def cell_label(item) -> str:
    """``cell 12 (c024): first line of its code``, from nbval's item (its ``cell_num`` and ``cell``)."""
    cell = getattr(item, "cell", None) or {}
    source = cell.get("source", "") if isinstance(cell, dict) else ""
    first = next((line.strip() for line in "".join(source).splitlines() if line.strip()), "")
    ident = f" ({cell['id']})" if isinstance(cell, dict) and cell.get("id") else ""
    return f"cell {getattr(item, 'cell_num', '?')}{ident}: {first[:60]}"


def _cpu_here() -> float:
    """CPU seconds of this process and of every subprocess it has waited for."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def _kernel(item) -> tuple[int, float] | None:
    """(pid, CPU seconds so far) of the kernel nbval runs this item's notebook in; None without one."""
    try:  # nbval's IPyNbFile.kernel (a RunningKernel) -> jupyter_client's manager -> its provisioner
        pid = item.parent.kernel.km.provisioner.process.pid
        t = psutil.Process(pid).cpu_times()
    except (AttributeError, psutil.Error):
        return None
    return pid, t.user + t.system + t.children_user + t.children_system


def kernel_cpu(before: tuple[int, float] | None, after: tuple[int, float] | None) -> float:
    """The kernels' CPU between two readings. A kernel started in between counts from zero; one that
    ended in between was waited for (so ``_cpu_here`` counts all of it): what was read before is
    taken off, so no second is counted twice."""
    if before and after and before[0] == after[0]:
        return after[1] - before[1]
    return (after[1] if after else 0.0) - (before[1] if before else 0.0)


PROPERTY = "tools.timing"  # the (wall, cpu) pair a test's teardown report carries


def _is_notebook(item) -> bool:
    return Path(str(item.fspath)).suffix == ".ipynb"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    notebook = _is_notebook(item)
    k0 = _kernel(item) if notebook else None
    item._timing_start = start, cpu = time.perf_counter(), _cpu_here()
    yield
    if notebook:
        took, used = time.perf_counter() - start, _cpu_here() - cpu
        used += kernel_cpu(k0, _kernel(item))
        name = Path(str(item.fspath)).name
        _notebooks[name][0] += took
        _notebooks[name][1] += used
        _cells[name].append((cell_label(item), took, used))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test's wall and CPU, from the start of its setup to the end of its teardown, on its
    teardown report: where the test ran (an xdist worker included)."""
    outcome = yield
    start = getattr(item, "_timing_start", None)
    if call.when == "teardown" and start is not None and not _is_notebook(item):
        outcome.get_result().user_properties.append(
            (PROPERTY, (time.perf_counter() - start[0], _cpu_here() - start[1])))


def pytest_runtest_logreport(report):
    """Where the reports arrive (pytest itself, or the xdist controller): collect the pairs."""
    if report.when == "teardown":
        _tests.extend((report.nodeid, *pair) for key, pair in report.user_properties if key == PROPERTY)


def summary(key: str) -> dict:
    """What the run measured, under ``key``: rounded to 0.1 s, the slowest (by wall time) first."""
    if _notebooks:
        return {key: {name: [round(wall, 1), round(cpu, 1)] for name, (wall, cpu) in _notebooks.items()},
                f"{key}_cells": {name: [[label, round(wall, 1), round(cpu, 1)] for label, wall, cpu in
                                        sorted(cells, key=lambda c: -c[1])[:SLOWEST_CELLS]]
                                 for name, cells in _cells.items()}}
    return {f"{key}_slowest": [[test, round(wall, 1), round(cpu, 1)]
                               for test, wall, cpu in sorted(_tests, key=lambda t: -t[1])[:SLOWEST_TESTS]],
            f"{key}_tests": len(_tests)}


def pytest_sessionfinish(session, exitstatus):
    if hasattr(getattr(session, "config", None), "workerinput") or not (_notebooks or _tests):
        return  # an xdist worker: its controller writes
    key = os.environ.get("TIMING_KEY") or ("notebooks" if _notebooks else "unit")
    if not re.fullmatch(r"[a-z_]+", key):
        raise pytest.UsageError(f"TIMING_KEY must be lower-case letters and '_', got {key!r}")
    out = Path(os.environ.get("TIMINGS_DIR", ".cache/timings"))
    out.mkdir(parents=True, exist_ok=True)
    name = key if _notebooks else f"{key}_slowest"
    (out / f"{name}.json").write_text(json.dumps(summary(key), indent=1))
