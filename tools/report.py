"""Print the performance summary at the end of `make test` against the budgets.

Reads every *.json in the timings folder (default .cache/timings):
  total.json         {"make_test_s": s}                      (Makefile, `make test`)
  book.json          {"book_build_s": s}                     (Makefile, `make book`)
  live.json          {"live_build_s": s}                     (Makefile, `make live`)
  unit.json          {"unit_s": s}                           (the unit tests)
  notebooks.json     {"notebooks": {name: s}}                (tools/nbval_timing.py, nbval)
  notebooks_alt.json {"notebooks_alt": {name: s}}            (the second nbval pass, other settings)
  page_weights.json  {"page_weights": {"pages": {page: bytes}, "total_bytes": n, ...}}  (tests/book/test_browser.py)
  browser_check.json {"browser_check_s": s}                  (tests/book/test_browser.py, the whole book)
  lab_check.json     {"lab_check_s": s}                      (tools/book/lab.py)
A value not written by this run prints as "not measured".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

BUDGETS = {"make_test_s": 600, "book_build_s": 120, "notebook_s": 90}
PAGE_LIMIT, BOOK_LIMIT, LIVE_LIMIT = 3_000_000, 80_000_000, 70_000_000  # bytes, as tools/book/browser.py enforces


def load(folder: Path) -> dict:
    times: dict = {}
    for f in sorted(folder.glob("*.json")):
        try:
            times.update(json.loads(f.read_text()))
        except (json.JSONDecodeError, AttributeError) as err:
            print(f"  {f}: unreadable ({err})")
    return times


def line(label: str, value: float | None, budget: float | None) -> str:
    if value is None:
        return f"  {label:<44} not measured"
    if budget is None:
        return f"  {label:<44} {value:7.1f} s"
    mark = "ok" if value <= budget else "OVER BUDGET"
    return f"  {label:<44} {value:7.1f} s  (budget {budget:.0f} s: {mark})"


def weight(label: str, size: int, limit: int) -> str:
    mark = "ok" if size <= limit else "OVER LIMIT"
    return f"  {label:<44} {size / 1e6:7.2f} MB (limit {limit / 1e6:.0f} MB: {mark})"


def summary(times: dict) -> list[str]:
    out = ["", "Performance (this run, this machine):"]
    out.append(line("make test, install included", times.get("make_test_s"), BUDGETS["make_test_s"]))
    out.append(line("unit tests", times.get("unit_s"), None))
    out.append(line("clean book build", times.get("book_build_s"), BUDGETS["book_build_s"]))
    out.append(line("live demos' model (make live, stamped)", times.get("live_build_s"), None))
    out.append(line("browser check, every page", times.get("browser_check_s"), None))
    out.append(line("JupyterLab check", times.get("lab_check_s"), None))
    side_by_side = "make_test_s" in times  # make test runs every check at once
    if side_by_side:
        out.append("  (make test ran these side by side on this machine's cores: their times include each")
        out.append(f"  other's load; the {BUDGETS['notebook_s']:.0f} s budget of a notebook is for one run alone,")
        out.append("  as in `make nbval`)")
    for key, label in (("notebooks", "nbval"), ("notebooks_alt", "nbval, other settings")):
        runs = times.get(key)
        if not runs:
            out.append(line(f"{label} (each notebook)", None, None))
            continue
        for name, seconds in sorted(runs.items()):
            out.append(line(f"{label} {name}", seconds, None if side_by_side else BUDGETS["notebook_s"]))
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ".cache/timings"))
