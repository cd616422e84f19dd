"""Options of the book checks, their browser (pytest-playwright's, with tools/book/browser.py's build
and flags), and the live-demo tests' fixtures: a linked copy of the built book with the fixture page
(``site``), its server (``live_url``), one page for the tests that use the model (``session``, one
model load a module) and contexts of their own (``fresh``). test_browser.py and the live-demo tests
run only when named, or with --html-root; a plain `pytest tests` leaves them out and says so at its end.
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path

import pytest

from tests.book.live_helpers import DESKTOP, Session
from tools.book import browser as chrome, live_page

LEFT_OUT = pytest.StashKey[set]()  # the browser modules a folder run left out
BROWSER_MODULES = {"test_browser.py": "make checked-book or make browser",
                   "test_live*.py": "make checked-book or make live-check"}


def pytest_addoption(parser):
    group = parser.getgroup("book", "the book checks (tests/book)")
    group.addoption("--html-root", default=None, metavar="DIR",
                    help="the built book the browser check reads (default _build/html)")
    group.addoption("--pages", default="", metavar="PAGES",
                    help="check only these pages, paths relative to the book, space- or comma-separated")
    group.addoption("--screenshots", default=None, metavar="DIR",
                    help="write a desktop and a phone screenshot of every page here (make browser)")


def pytest_ignore_collect(collection_path: Path, config):
    """Not collected from a folder run unless the built book is given (pytest asks no hook of the files
    named on the command line: they always run)."""
    module = next((key for key in BROWSER_MODULES if fnmatch.fnmatch(collection_path.name, key)), None)
    if module is None or collection_path.parent != Path(__file__).parent or config.getoption("html_root", default=None):
        return None
    # said at the end only when a folder holding it was named, not when pytest merely looked past it
    if any((config.invocation_params.dir / arg.split("::")[0]).resolve() in collection_path.resolve().parents
           for arg in config.args):
        config.stash.setdefault(LEFT_OUT, set()).add(module)
    return True


def pytest_terminal_summary(terminalreporter, config):
    for name in sorted(config.stash.get(LEFT_OUT, ())):
        terminalreporter.write_line(f"tests/book/{name} not run here: it drives a browser ({BROWSER_MODULES[name]})")


# ---- the browser (pytest-playwright) -------------------------------------------------------


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright launches the Chromium build and flags of tools/book/browser.py, headless."""
    return {**browser_type_launch_args, "executable_path": chrome.CHROMIUM, "headless": True, "args": chrome.FLAGS}


# ---- the live demos' page ------------------------------------------------------------------


@pytest.fixture(scope="module")
def book(request) -> Path:
    """The built book (--html-root)."""
    return Path(request.config.getoption("html_root") or "_build/html").resolve()


@pytest.fixture(scope="module")
def manifest(book) -> dict:
    return json.loads((book / "live" / "manifest.json").read_text())


@pytest.fixture(scope="module")
def site(book, tmp_path_factory) -> Path:
    """A linked copy of the book with the page of every demo (tools/book/live_page.py); it fails without live/."""
    return live_page.mirror(book, tmp_path_factory.mktemp("live") / "html")


@pytest.fixture(scope="module")
def live_url(site):
    with chrome.serve(site) as url:
        yield url


@pytest.fixture(scope="module")
def outside():
    """Every request a context of this module sent off 127.0.0.1 (refused): none, at the module's end."""
    sent: list[str] = []
    yield sent
    assert not sent, f"requests off the book: {sorted(set(sent))[:5]}"


@pytest.fixture(scope="module")
def session(browser, live_url, outside):
    """The fixture page, shared by the tests of a module that use the model (one model load for all of them).
    What it fetched from live/ before any test used a demo is kept in ``before_use``."""
    s = Session(browser, live_url, outside, **DESKTOP)
    s.open()
    s.page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
    s.page.wait_for_timeout(300)
    s.before_use = set(s.live_requests())
    yield s
    s.close()


@pytest.fixture
def fresh(browser, live_url, outside):
    """Start browser contexts of their own (an empty cache): ``fresh(**context_options)``; closed after the test."""
    made = []

    def start(**options):
        s = Session(browser, live_url, outside, **options)
        made.append(s)
        return s

    yield start
    for s in made:
        s.close()
