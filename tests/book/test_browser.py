"""The built book in headless Chromium, page by page, at 1280 and 390 px (tools/book/browser.py says
what is checked). One test per page: it fails with every problem on that page, each with its rule,
width, element and size.

    pytest tests/book/test_browser.py --html-root _build/html [--pages "notebooks/02_infonce.html"]
                                      [--screenshots _build/screenshots]
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tools.book import browser as checks


def _root(config) -> Path:
    return Path(config.getoption("html_root") or "_build/html").resolve()


def _pages(config) -> list[str]:
    root = _root(config)
    if not (root / "index.html").exists():
        raise pytest.UsageError(f"{root}: no built book (run make book, or give --html-root)")
    every = [p.relative_to(root).as_posix() for p in checks.book_pages(root)]
    wanted = [p.removeprefix("./") for p in re.split(r"[\s,]+", config.getoption("pages")) if p]
    missing = sorted(set(wanted) - set(every))
    if missing:
        raise pytest.UsageError(f"no such page(s) in {root}: {missing}")
    return [p for p in every if not wanted or p in wanted]


def pytest_generate_tests(metafunc):
    if "page_path" in metafunc.fixturenames:
        metafunc.parametrize("page_path", _pages(metafunc.config))


@pytest.fixture(scope="module")
def book(request) -> Path:
    return _root(request.config)


@pytest.fixture(scope="module")
def book_url(book):
    with checks.serve(book) as url:
        yield url


@pytest.fixture(scope="module")
def shots(request) -> Path | None:
    folder = request.config.getoption("screenshots")
    return Path(folder) if folder else None


def test_page_weights(book):
    """Each page (its HTML and the images it loads) under 3 MB, the whole book under 80 MB; no page loads
    the theme's icon script, and only pages with widgets load the widget runtime."""
    weights = checks.page_weights(book, checks.book_pages(book))
    problems = checks.weight_problems(weights) + checks.asset_problems(book, checks.book_pages(book))
    assert not problems, "\n".join(map(str, problems))


def test_page(page_path, book, browser, book_url, shots):
    context = browser.new_context()
    try:
        problems, summary = checks.check_page(context.new_page(), book, book / page_path, book_url, shots)
    finally:
        context.close()
    if problems:
        pytest.fail(f"{page_path} ({summary}): {len(problems)} problem(s)\n"
                    + "\n".join(f"  - {p}" for p in problems), pytrace=False)


SLIDER_PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>A live slider</title>
<link rel="stylesheet" href="_static/course.css">
<script src="_static/widgets/require.js"></script><script src="_static/widgets/widgets-offline.js"></script>
<script src="_static/widgets/embed-amd.js"></script><script src="_static/course.js"></script>
<script type="application/vnd.jupyter.widget-state+json">{state}</script></head>
<body><main><article class="bd-article"><h1>Temperature</h1><h2>The dial</h2><p>Move the temperature.</p>
<div class="cell_output"><script type="application/vnd.jupyter.widget-view+json">{view}</script></div>
</article></main></body></html>"""


def describe_dial(tau: float) -> str:
    return f"At tau {tau:.3f} the bar reaches {1 / (1 + tau):.0%} of the axis."


def test_a_live_slider_in_the_page_for_every_reader(book, browser, tmp_path, monkeypatch):
    """live_slider's stored figures carry their alt text in Chromium (the book's own widget manager and
    course.js): the handle is named and announces the readout, a move announces the new picture, step
    buttons move a slider whose 31 stops are too fine for a finger at 390 px, and axe finds nothing
    critical or serious."""
    import matplotlib

    matplotlib.use("Agg")
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from labs.classroom import sliders

    def dial(tau: float) -> None:
        fig, ax = plt.subplots(figsize=(3, 1.5))
        ax.barh([0], [1 / (1 + tau)])
        ax.set_xlim(0, 1)
        plt.show()

    taus = [round(0.02 * k, 2) for k in range(1, 32)]
    monkeypatch.setattr(sliders, "_reaches_a_frontend", lambda widget: True)
    box = sliders.live_slider(dial, taus, description="temperature", fmt="{:.2f}", value=0.2, alt=describe_dial)
    state = widgets.Widget.get_manager_state()
    (tmp_path / "_static").symlink_to(book / "_static")
    view = json.dumps({"version_major": 2, "version_minor": 0, "model_id": box.model_id})
    (tmp_path / "slider.html").write_text(SLIDER_PAGE.format(state=json.dumps(state).replace("</", "<\\/"),
                                                             view=view), encoding="utf-8")
    with checks.serve(tmp_path) as url:
        context = browser.new_context(viewport={"width": 390, "height": 844})
        try:
            page = context.new_page()
            page.goto(f"{url}/slider.html", wait_until="load")
            handle = page.locator(".labs-live-slider .noUi-handle")
            handle.wait_for(timeout=20000)
            alt = lambda: page.evaluate("() => [...document.querySelectorAll('.labs-live-stack img')]"
                                        ".filter(i => i.offsetParent !== null).map(i => i.alt)")
            page.wait_for_function("() => document.querySelector('.noUi-handle').getAttribute('aria-valuetext') === '0.20'")
            assert alt() == [describe_dial(0.2)]
            assert handle.get_attribute("aria-label") == "temperature"
            handle.focus()
            page.keyboard.press("ArrowRight")
            page.wait_for_function("() => document.querySelector('.noUi-handle').getAttribute('aria-valuetext') === '0.22'")
            page.wait_for_function("s => document.querySelector('.labs-live-slider [aria-live]').textContent.includes(s)",
                                   arg=describe_dial(0.22))
            assert alt() == [describe_dial(0.22)]
            step = page.get_by_role("button", name="Next temperature")
            assert step.is_visible()  # 31 stops on a phone's track: under 11 px each
            step.click()
            page.wait_for_function("() => document.querySelector('.widget-readout').textContent.trim() === '0.24'")
            assert alt() == [describe_dial(0.24)]
            assert checks.check_axe(page, "390 px") == []
        finally:
            context.close()
