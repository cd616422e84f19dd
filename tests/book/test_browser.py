"""The built book in headless Chromium, page by page, at 1280 and 390 px (tests/book/browser.py says
what is checked). One test per page: it fails with every problem on that page, each with its rule,
width, element and size. All problems also go to one file, by rule (--findings).

    pytest tests/book/test_browser.py --html-root _build/html [--pages "notebooks/02_infonce.html"]
                                      [--screenshots _build/screenshots]
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.book import browser
from tests.book.conftest import FINDINGS


def _root(config) -> Path:
    return Path(config.getoption("html_root") or "_build/html").resolve()


def _pages(config) -> list[str]:
    root = _root(config)
    if not (root / "index.html").exists():
        raise pytest.UsageError(f"{root}: no built book (run make book, or give --html-root)")
    every = [p.relative_to(root).as_posix() for p in browser.book_pages(root)]
    wanted = [p.removeprefix("./") for p in re.split(r"[\s,]+", config.getoption("pages")) if p]
    missing = sorted(set(wanted) - set(every))
    if missing:
        raise pytest.UsageError(f"no such page(s) in {root}: {missing}")
    return [p for p in every if not wanted or p in wanted]


def pytest_generate_tests(metafunc):
    if "page" in metafunc.fixturenames:
        metafunc.parametrize("page", _pages(metafunc.config))


@pytest.fixture(scope="module")
def book(request) -> Path:
    return _root(request.config)


@pytest.fixture(scope="module")
def findings(request, book):
    """Every page's result; written out, by rule, when the module ends."""
    started = time.monotonic()
    results: dict[str, browser.PageResult] = {}
    yield results
    path = Path(request.config.getoption("findings") or book.parent / "browser-check.txt")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(browser.report(results), encoding="utf-8")
    request.config.stash[FINDINGS] = (path, results)
    if not request.config.getoption("pages"):
        timings = Path(request.config.getoption("timings"))
        timings.mkdir(parents=True, exist_ok=True)
        (timings / "browser_check.json").write_text(
            json.dumps({"browser_check_s": round(time.monotonic() - started, 1)}))


@pytest.fixture(scope="module")
def chromium(book):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=browser.CHROMIUM, headless=True, args=browser.FLAGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def base_url(book):
    with browser.serve(book) as url:
        yield url


@pytest.fixture(scope="module")
def shots(request) -> Path | None:
    folder = request.config.getoption("screenshots")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
    return Path(folder) if folder else None


def test_page_weights(book, request):
    """Each page (its HTML and the images it loads) under 3 MB, the whole book under 80 MB; no page loads
    the theme's icon script, and only pages with widgets load the widget runtime."""
    weights = browser.page_weights(book, browser.book_pages(book))
    timings = Path(request.config.getoption("timings"))
    timings.mkdir(parents=True, exist_ok=True)
    (timings / "page_weights.json").write_text(json.dumps({"page_weights": weights}, indent=1))
    problems = browser.weight_problems(weights) + browser.asset_problems(book, browser.book_pages(book))
    assert not problems, "\n".join(map(str, problems))


def test_page(page, book, chromium, base_url, shots, findings):
    context = chromium.new_context()
    try:
        result = browser.check_page(context.new_page(), book, book / page, base_url, shots)
    finally:
        context.close()
    findings[page] = result
    if result.problems:
        pytest.fail(f"{page} ({result.summary}): {len(result.problems)} problem(s)\n"
                    + "\n".join(f"  - {p}" for p in result.problems), pytrace=False)
