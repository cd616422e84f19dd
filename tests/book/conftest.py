"""Options of the book checks, and the rule that keeps a plain `pytest tests` off the browser.

test_browser.py drives headless Chromium over the built book and test_lab.py drives JupyterLab:
they run only when named (make checked-book, make browser, make lab-check), or with --html-root
for a whole-folder run. In a plain `pytest tests` they are not collected, and the run says so at
its end. The rules they apply that need no browser are unit tests here (test_*_rules.py) and run
in every `pytest tests`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

LEFT_OUT = pytest.StashKey[set]()  # the browser modules a folder run left out
FINDINGS = pytest.StashKey[tuple]()  # (the findings file, every page's result), set by test_browser.py
BROWSER_MODULES = {"test_browser.py": "make checked-book or make browser", "test_lab.py": "make lab-check",
                   "test_live.py": "make checked-book or make live-check"}


def pytest_addoption(parser):
    group = parser.getgroup("book", "the book checks (tests/book)")
    group.addoption("--html-root", default=None, metavar="DIR",
                    help="the built book the browser check reads (default _build/html)")
    group.addoption("--pages", default="", metavar="PAGES",
                    help="check only these pages, paths relative to the book, space- or comma-separated")
    group.addoption("--screenshots", default=None, metavar="DIR",
                    help="write a desktop and a phone screenshot of every page here (make browser)")
    group.addoption("--findings", default=None, metavar="FILE",
                    help="write every problem found, by rule and page (default: beside the book, "
                         "browser-check.txt)")
    group.addoption("--lab-notebook", default=None, metavar="NOTEBOOK",
                    help="the lesson whose first slider the JupyterLab check moves (default: the temperature lesson)")
    group.addoption("--timings", default=".cache/timings", metavar="DIR",
                    help="where page_weights.json and browser_check.json go")


def pytest_ignore_collect(collection_path: Path, config):
    """Not collected from a folder run unless the built book is given (named on the command line,
    they always are)."""
    if collection_path.name in BROWSER_MODULES and collection_path.parent == Path(__file__).parent:
        if collection_path.name in ("test_browser.py", "test_live.py") and config.getoption("html_root", default=None):
            return None
        if _folder_run(config, collection_path):
            config.stash.setdefault(LEFT_OUT, set()).add(collection_path.name)
        return True
    return None


def _folder_run(config, path: Path) -> bool:
    """Whether a folder named on the command line holds this module (rather than pytest merely
    looking past it on the way to another file)."""
    for arg in config.args:
        named = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        if named.is_dir() and named in path.resolve().parents:
            return True
    return False


def pytest_terminal_summary(terminalreporter, config):
    for name in sorted(config.stash.get(LEFT_OUT, ())):
        terminalreporter.write_line(f"tests/book/{name} not run here: it drives a browser ({BROWSER_MODULES[name]})")
    found = config.stash.get(FINDINGS, None)
    if found:
        path, results = found
        counts: dict[str, int] = {}
        for result in results.values():
            for p in result.problems:
                counts[p.rule] = counts.get(p.rule, 0) + 1
        terminalreporter.write_line(
            f"browser check: {len(results)} pages, problems by rule: "
            + (", ".join(f"{rule} {n}" for rule, n in sorted(counts.items())) or "none") + f"; all of them in {path}")
