"""Print the performance summary at the end of `make test` against the budgets."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BUDGETS = {"make_test_s": 15 * 60, "book_build_s": 120, "notebook_s": 60}


def main(folder: str) -> int:
    times: dict = {}
    for f in sorted(Path(folder).glob("*.json")):
        times.update(json.loads(f.read_text()))
    print("\nPerformance (this run, this machine):")

    def line(label: str, value: float | None, budget: float) -> None:
        if value is None:
            print(f"  {label:<38} not measured")
            return
        mark = "ok" if value <= budget else "OVER BUDGET"
        print(f"  {label:<38} {value:7.1f} s  (budget {budget:.0f} s: {mark})")

    line("make test, install included", times.get("make_test_s"), BUDGETS["make_test_s"])
    line("clean book build", times.get("book_build_s"), BUDGETS["book_build_s"])
    for name, seconds in sorted(times.get("notebooks", {}).items()):
        line(f"nbval {name}", seconds, BUDGETS["notebook_s"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ".cache/timings"))
