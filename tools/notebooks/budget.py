"""Write the budget table of tests/README.md from a measured `make test`: `make budget`.

    python -m tools.notebooks.budget LOG JUNIT_XML README

LOG is what `make test` printed, each part ending with the Makefile's TIME line (``time unit: 101.2 s
wall, 95.1 s user, 3.2 s system``); JUNIT_XML is nbval's JUnit report, summed by notebook. The table
replaces what stands between README's two budget markers.
"""

from __future__ import annotations

import os
import re
import sys
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

BEGIN, END = "<!-- budget: written by make budget (tools/notebooks/budget.py), not by hand -->", "<!-- /budget -->"
LINE = re.compile(r"^time (?P<part>[\w.-]+): (?P<wall>[\d.]+) s wall, (?P<user>[\d.]+) s user, "
                  r"(?P<system>[\d.]+) s system$", re.MULTILINE)
#: make test and its steps: a log without a time line for each (``make -n budget``: the outer lines only) is
#: not a whole run.
STEPS = ("test", "setup", "unit", "e2e", "nbval", "checked-book")
BUDGETS = {"test": 600, "notebook": 60}  # seconds: make test on a 2-core machine; a notebook under nbval
WHY = {"test": "the whole run (its parts run side by side)", "setup": "the environment, the npm assets",
       "unit": "unit tests", "e2e": "end-to-end tests", "nbval": "every cell of every notebook",
       "live": "the in-page model (a stamp skips it when nothing changed)", "book": "the HTML build",
       "checked-book": "clean build, then the page and live-demo checks in Chromium"}


def parts(log: str) -> dict[str, tuple[float, float]]:
    """{part: (wall s, CPU s)} from the ``time`` lines of a make log (the last one of each part)."""
    return {m["part"]: (float(m["wall"]), float(m["user"]) + float(m["system"])) for m in LINE.finditer(log)}


def notebooks(junit: Path) -> dict[str, float]:
    """{notebook: seconds} summed over its cells, from pytest's JUnit XML of an nbval run."""
    seconds: dict[str, float] = defaultdict(float)
    for case in ET.parse(junit).iter("testcase"):
        name = case.get("classname", "").removesuffix(".ipynb").rsplit(".", 1)[-1]  # notebooks.01_pooling.ipynb
        seconds[name] += float(case.get("time", 0))
    return dict(sorted(seconds.items()))


def machine() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    found = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), re.M) if cpuinfo.is_file() else None
    return f"{found[1] if found else 'a CPU'}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end"


def table(measured: dict[str, tuple[float, float]], cells: dict[str, float]) -> str:
    rows = ["| part | wall s | CPU s | budget s | what |", "|---|---:|---:|---:|---|"]
    for part, (wall, cpu) in measured.items():
        budget = BUDGETS.get(part)
        over = " **over**" if budget and wall > budget else ""
        rows.append(f"| `make {part}` | {wall:.0f}{over} | {cpu:.0f} | {budget or ''} | {WHY.get(part, '')} |")
    for name, wall in cells.items():
        over = " **over**" if wall > BUDGETS["notebook"] else ""
        rows.append(f"| {name} | {wall:.1f}{over} | | {BUDGETS['notebook']} | its cells under nbval, in make test |")
    return "\n".join([f"Measured {time.strftime('%Y-%m-%d')} on {machine()}.", "", *rows])


def rewrite(readme: Path, text: str) -> None:
    old = readme.read_text(encoding="utf-8")
    if old.count(BEGIN) != 1 or old.count(END) != 1:
        raise SystemExit(f"{readme}: needs the markers {BEGIN} and {END}, once each")
    head, rest = old.split(BEGIN)
    readme.write_text(f"{head}{BEGIN}\n{text}\n{END}{rest.split(END, 1)[1]}", encoding="utf-8")


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        raise SystemExit(__doc__.split("\n\n")[1].strip())
    log, junit, readme = map(Path, argv)
    for path in (log, readme):
        if not path.is_file():
            raise SystemExit(f"{path}: no such file")
    measured = parts(log.read_text(encoding="utf-8", errors="replace"))
    missing = [step for step in STEPS if step not in measured]
    if missing:
        raise SystemExit(f"{log}: no time line for {', '.join(missing)}: not a whole make test (a dry run?); "
                         "the table is left as it was")
    if junit.is_file() and junit.stat().st_mtime < log.stat().st_mtime - measured["test"][0] - 60:
        raise SystemExit(f"{junit} is older than the make test of {log}: it is another run's; the table is left "
                         "as it was")
    cells = notebooks(junit) if junit.is_file() else {}
    rewrite(readme, table({"test": measured["test"], **measured}, cells))  # make test's row first
    print(f"{readme}: the budget table, from {log} and {junit}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
