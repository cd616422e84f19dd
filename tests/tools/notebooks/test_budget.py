"""make budget's table (tools/notebooks/budget.py): the parts' times from bash's time lines, each notebook's from
pytest's JUnit report, written between the markers of tests/README.md and nowhere else."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from tools.notebooks import budget

ROOT = Path(__file__).resolve().parents[3]

LOG = """\
make[1]: Nothing to be done for 'setup'.
time setup: 3.5 s wall, 0.4 s user, 0.2 s system
.....                                   [100%]
time unit: 101.2 s wall, 95.1 s user, 3.2 s system
time e2e: 80.0 s wall, 70.0 s user, 2.0 s system
time nbval: 300.0 s wall, 290.0 s user, 5.0 s system
time checked-book: 400.0 s wall, 300.0 s user, 20.0 s system
time test: 612.0 s wall, 900.5 s user, 40.0 s system
"""

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="notebooks.01_pooling.ipynb" name="Cell 0" time="1.5"/>
<testcase classname="notebooks.01_pooling.ipynb" name="Cell 1" time="2.0"/>
<testcase classname="notebooks.04_temperature.ipynb" name="Cell 0" time="61.0"/>
</testsuite></testsuites>"""


def test_the_table_is_written_between_the_markers_and_marks_what_is_over(tmp_path):
    (tmp_path / "make.log").write_text(LOG)
    (tmp_path / "nbval.xml").write_text(JUNIT)
    readme = tmp_path / "README.md"
    readme.write_text(f"# Tests\n\nBefore.\n\n{budget.BEGIN}\nold table\n{budget.END}\n\nAfter.\n")
    assert budget.main([str(tmp_path / "make.log"), str(tmp_path / "nbval.xml"), str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith("# Tests\n\nBefore.\n\n") and text.endswith(f"{budget.END}\n\nAfter.\n")
    assert "old table" not in text and text.index("`make test`") < text.index("`make setup`")
    assert re.search(r"\| `make test` \| 612 \*\*over\*\* \| 940 \| 600 \|", text)  # CPU: user + system
    assert "| `make unit` | 101 | 98 |  | unit tests |" in text
    assert "| 04_temperature | 61.0 **over** |" in text and "| 01_pooling | 3.5 |" in text


DRY_RUN = "time setup: 3.0 s wall, 1.0 s user, 0.1 s system\ntime test: 12.0 s wall, 3.0 s user, 0.2 s system\n"


@pytest.mark.parametrize("log, stale_report, message", [
    (None, False, "make.log: no such file"),
    ("time unit: 1.0 s wall, 1.0 s user, 0.0 s system\n", False, "no time line for test, setup, e2e, nbval, checked"),
    (DRY_RUN, False, "no time line for unit, e2e, nbval, checked-book"),  # make -n budget: the outer lines only
    (LOG, True, "is older than the make test"),  # another run's nbval report
])
def test_what_is_not_one_whole_run_is_refused_and_the_table_left_as_it_was(tmp_path, log, stale_report, message):
    readme = tmp_path / "README.md"
    readme.write_text(f"{budget.BEGIN}\nold table\n{budget.END}\n")
    if log is not None:
        (tmp_path / "make.log").write_text(log)
    (tmp_path / "nbval.xml").write_text(JUNIT)
    if stale_report:
        day_old = time.time() - 86400
        os.utime(tmp_path / "nbval.xml", (day_old, day_old))
    with pytest.raises(SystemExit, match=message):
        budget.main([str(tmp_path / "make.log"), str(tmp_path / "nbval.xml"), str(readme)])
    assert readme.read_text() == f"{budget.BEGIN}\nold table\n{budget.END}\n"


def test_the_makefile_prints_the_lines_the_table_reads():
    """Each check's recipe starts with the TIME macro; bash's time prints the line budget.parts reads."""
    makefile = (ROOT / "Makefile").read_text()
    timed = re.search(r"^TIMED\s*=\s*(.*)$", makefile, re.M)[1].replace("$(1)", "unit")
    out = subprocess.run(["bash", "-c", f"{timed} sleep 0.1"], capture_output=True, text=True).stderr
    assert "SHELL := bash" in makefile and set(budget.parts(out)) == {"unit"}
    for target in ("unit", "e2e", "nbval", "book", "checked-book", "test"):
        recipe = re.search(rf"^{re.escape(target)}:.*\n\t@(.*)$", makefile, re.MULTILINE)
        assert recipe and "$(TIME)" in recipe.group(1), target


def test_the_readme_has_one_table_to_rewrite():
    text = (ROOT / "tests" / "README.md").read_text()
    assert text.count(budget.BEGIN) == 1 and text.count(budget.END) == 1
