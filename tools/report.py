"""Print the performance summary at the end of `make test`, against the budgets.

    python -m tools.report [FOLDER]      (default .cache/timings; `make report` prints the last run's)

Reads every *.json in FOLDER:
  make_test.json, setup.json, unit.json, nbval.json, nbval_alt.json, book_build.json, live_build.json,
  book_checks.json, lab_check_run.json
                     {"KEY_s": wall s, "KEY_cpu_s": CPU s}     (tools/timed.py, from the Makefile)
  unit_slowest.json  {"unit_slowest": [[test, wall s, CPU s], ...], "unit_tests": n}   (tools/timing.py)
  notebooks.json     {"notebooks": {name: [wall s, CPU s]}, "notebooks_cells": {name: [[cell, wall s, CPU s], ...]}}
                                                             (tools/timing.py, the first nbval pass)
  notebooks_alt.json the same for the second pass, other CPU settings
  page_weights.json  {"page_weights": {"pages": {page: bytes}, "total_bytes": n, ...}}  (tests/book/test_browser.py)
  browser_check.json {"browser_check_s": s}                  (tests/book/test_browser.py, the whole book)
  lab_check.json     {"lab_check_s": s}                      (tools/book/lab.py)
A value not written by this run prints as "not measured". CPU time is all cores together: on a
loaded machine the wall time grows and the CPU time barely moves. The load average closes the summary.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

# Seconds. Unit tests and notebooks: alone on the 2-core machine (make unit, make nbval); make test
# runs its parts side by side, so there their wall times include each other's load.
BUDGETS = {"make_test": 600, "unit": 180, "book_build": 120, "notebook": 60}
PAGE_LIMIT, BOOK_LIMIT, LIVE_LIMIT = 3_000_000, 80_000_000, 70_000_000  # bytes, as tools/book/browser.py enforces
#: make test's parts, in the order they run: (key written by tools/timed.py, label).
PARTS = [("make_test", "make test, install included"), ("setup", "set-up (install, npm, compile)"),
         ("unit", "unit tests"), ("end_to_end", "end-to-end tests (marked e2e)"),
         ("nbval", "nbval, every notebook"), ("nbval_alt", "nbval, other CPU settings (.ci/run)"),
         ("live_build", "live demos' model (make live, stamped)"), ("book_build", "clean book build"),
         ("book_checks", "browser and live-demo checks"), ("lab_check_run", "JupyterLab check")]


def load(folder: Path) -> dict:
    times: dict = {}
    for f in sorted(folder.glob("*.json")):
        try:
            times.update(json.loads(f.read_text()))
        except (json.JSONDecodeError, AttributeError) as err:
            print(f"  {f}: unreadable ({err})")
    return times


def pair(value) -> tuple[float | None, float | None]:
    """(wall, CPU) from what tools/timing.py wrote: [wall, cpu], or a bare wall time."""
    if isinstance(value, (list, tuple)):
        return value[0], value[1] if len(value) > 1 else None
    return value, None


def seconds(wall: float | None, cpu: float | None) -> str:
    """``  12.5 s  CPU   10.1 s``: wall, then CPU (blank when not measured)."""
    text = f"{wall:7.1f} s" if wall is not None else "  not run"
    return text + (f"  CPU {cpu:7.1f} s" if cpu is not None else " " * 15)


def line(label: str, value: float | None, budget: float | None, cpu: float | None = None) -> str:
    if value is None:
        return f"  {label:<44} not measured"
    text = f"  {label:<44} {value:7.1f} s"
    if cpu is not None:
        text += f"  CPU {cpu:7.1f} s"
    if budget is not None:
        text += f"  (budget {budget:.0f} s: {'ok' if value <= budget else 'OVER BUDGET'})"
    return text


def weight(label: str, size: int, limit: int) -> str:
    mark = "ok" if size <= limit else "OVER LIMIT"
    return f"  {label:<44} {size / 1e6:7.2f} MB (limit {limit / 1e6:.0f} MB: {mark})"


def summary(times: dict) -> list[str]:
    side_by_side = "make_test_s" in times  # make test runs every check at once
    out = ["", "Performance (this run, this machine): wall time, then CPU time (user + system, all cores together;",
           "on a loaded machine the wall time grows and the CPU time barely moves):"]
    for key, label in PARTS:
        budget = BUDGETS.get(key) if key in ("make_test", "book_build") or not side_by_side else None
        out.append(line(label, times.get(f"{key}_s"), budget, times.get(f"{key}_cpu_s")))
    if side_by_side:
        out.append("  (make test ran its checks side by side on this machine's cores: their wall times include")
        out.append(f"  each other's load. The budgets of the unit tests, {BUDGETS['unit']} s, and of a notebook,")
        out.append(f"  {BUDGETS['notebook']} s, are for one run alone, as make unit and make nbval run them)")
    out.append(line("in the checks: browser check, every page", times.get("browser_check_s"), None))
    out.append(line("in the checks: JupyterLab check itself", times.get("lab_check_s"), None))

    for key, what in (("unit", "unit tests"), ("end_to_end", "end-to-end tests")):
        slowest = times.get(f"{key}_slowest")
        if slowest:
            out.append(f"The {len(slowest)} slowest of {times.get(f'{key}_tests', '?')} {what}, wall and CPU (setup, "
                       "call and teardown; a shared fixture counts in the first test to use it):")
            out += [f"  {seconds(*pair(rest))}  {test}" for test, *rest in slowest]
        else:
            out.append(f"  slowest {what:<37}not measured")

    runs, alt = times.get("notebooks") or {}, times.get("notebooks_alt") or {}
    if not (runs or alt):
        out.append("  nbval (each notebook)                        not measured")
    else:
        budget = None if side_by_side else BUDGETS["notebook"]
        cells = times.get("notebooks_cells") or times.get("notebooks_alt_cells") or {}
        which = "this CPU" if times.get("notebooks_cells") else "other CPU settings"
        out.append(f"Each notebook under nbval, wall and CPU: this CPU | other CPU settings (make nbval-alt); then its "
                   f"slowest cells ({which}):")
        for name in sorted(set(runs) | set(alt)):
            first, second = pair(runs.get(name)), pair(alt.get(name))
            walls = [w for w, _ in (first, second) if w is not None]
            mark = "" if budget is None else (
                f"  (budget {budget} s: {'OVER BUDGET' if any(w > budget for w in walls) else 'ok'})")
            out.append(f"  {name:<27} {seconds(*first)} | {seconds(*second)}{mark}".rstrip())
            for cell, *rest in cells.get(name, []):
                out.append(f"      {seconds(*pair(rest))}  {cell}")
    weights = times.get("page_weights")
    if not weights:
        out.append("  page weights                                 not measured")
    else:
        out.append("Page weights (HTML with its stored outputs, plus its images):")
        for page, size in sorted(weights["pages"].items()):
            if page.startswith("notebooks/") or size > PAGE_LIMIT:
                out.append(weight(page, size, PAGE_LIMIT))
        others = {p: s for p, s in weights["pages"].items() if not p.startswith("notebooks/")}
        if others:
            page, size = max(others.items(), key=lambda kv: kv[1])
            out.append(weight(f"heaviest other page: {page}", size, PAGE_LIMIT))
        out.append(weight("the whole built book but live/", weights["total_bytes"], BOOK_LIMIT))
        if "live_bytes" in weights:
            out.append(weight("live/ (the live demos' model, fetched on use)", weights["live_bytes"], LIVE_LIMIT))
    return out


def main(folder: str) -> int:
    print("\n".join(summary(load(Path(folder)))))
    one, five, fifteen = os.getloadavg()
    print(f"  load average now: {one:.1f} (1 min), {five:.1f} (5 min), {fifteen:.1f} (15 min), on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ".cache/timings"))
