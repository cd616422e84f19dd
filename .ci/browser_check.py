"""Browser check of the built book, offline, in headless Chromium (Debian's `chromium`).

Serves _build/html on 127.0.0.1, loads every page, blocks every request that
leaves 127.0.0.1 (and fails the page if one is attempted), and asserts:

- math is typeset where the page has math (MathJax <mjx-container> elements),
- every mermaid block is drawn as SVG,
- every saved widget view is rendered by the widget manager,
- no broken images (each <img> decoded), no broken internal links or anchors,
- no console errors or page errors (one known message from the theme aside),
- no failed same-origin requests.

Writes a desktop and a phone screenshot of every page to _build/screenshots/.
Usage: python .ci/browser_check.py _build/html
"""

from __future__ import annotations

import functools
import http.server
import re
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Raised by the theme's own scripts (sphinx-thebe declares it twice), not by our assets.
KNOWN_CONSOLE = [re.compile(r"Identifier 'THEBE_JS_URL' has already been declared")]
SKIP_PAGES = {"genindex.html", "search.html"}


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the output readable
        pass


class Anchors(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)


@functools.cache
def anchors(path: Path) -> set[str]:
    parser = Anchors()
    parser.feed(path.read_text(errors="replace"))
    return parser.ids


def check_links(root: Path, page: Path, hrefs: list[str], base: str) -> list[str]:
    problems = []
    for href in hrefs:
        url = urlparse(urljoin(base, href))
        if url.scheme not in ("http", "") or (url.hostname and url.hostname != "127.0.0.1"):
            continue  # external links are not followed offline
        target = root / unquote(url.path).lstrip("/")
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            problems.append(f"broken link {href!r}")
        elif url.fragment and target.suffix == ".html" and url.fragment not in anchors(target):
            problems.append(f"broken anchor {href!r}")
    return problems


def check_page(page, root: Path, path: Path, base_url: str, shots: Path) -> list[str]:
    rel = path.relative_to(root).as_posix()
    url = f"{base_url}/{rel}"
    problems: list[str] = []
    console: list[str] = []
    outside: list[str] = []
    failed: list[str] = []

    page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: console.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: failed.append(r.url) if r.url.startswith(base_url) else None)
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)

    def route(r):
        host = urlparse(r.request.url).hostname
        if r.request.url.startswith(("data:", "blob:")) or host == "127.0.0.1":
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(url, wait_until="load")
    html = path.read_text(errors="replace")

    has_math = 'class="math' in html
    if has_math:
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=20000)
        page.evaluate("() => MathJax.startup.promise")
        typeset = page.locator("mjx-container").count()
        if typeset == 0:
            problems.append("math on the page but nothing typeset")
    mermaid = page.locator("pre.mermaid, div.mermaid").count()
    if mermaid:
        try:
            page.wait_for_function(
                "() => [...document.querySelectorAll('pre.mermaid, div.mermaid')].every(e => e.querySelector('svg'))",
                timeout=20000,
            )
        except Exception:
            drawn = page.locator("pre.mermaid svg, div.mermaid svg").count()
            problems.append(f"{mermaid - drawn} of {mermaid} mermaid diagrams not drawn")
    views = html.count("application/vnd.jupyter.widget-view+json")
    if views:
        try:
            page.wait_for_function(
                "n => document.querySelectorAll('.jupyter-widgets.widget-container, .jupyter-widgets.widget-box,"
                " .widget-slider, .widget-dropdown, .widget-vbox, .widget-hbox').length >= n",
                arg=1,
                timeout=20000,
            )
        except Exception:
            problems.append("saved widgets on the page but none rendered")
        unrendered = page.evaluate(
            "() => [...document.querySelectorAll('script[type=\"application/vnd.jupyter.widget-view+json\"]')]"
            ".filter(s => !(s.previousElementSibling && s.previousElementSibling.classList.contains('jupyter-widgets'))"
            " && !(s.parentElement && s.parentElement.querySelector('.jupyter-widgets'))).length"
        )
        if unrendered:
            problems.append(f"{unrendered} saved widget views not rendered")
    broken_images = page.evaluate(
        "() => [...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)"
    )
    problems += [f"broken image {src}" for src in broken_images]
    hrefs = page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))")
    problems += check_links(root, path, hrefs, url)

    name = rel.replace("/", "__").removesuffix(".html")
    page.screenshot(path=str(shots / f"{name}-desktop.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(300)
    page.screenshot(path=str(shots / f"{name}-phone.png"), full_page=False)

    errors = [m for m in console if not any(k.search(m) for k in KNOWN_CONSOLE)]
    problems += [f"console error: {m[:200]}" for m in errors]
    problems += [f"tried to reach the network: {u}" for u in sorted(set(outside))]
    problems += [f"failed request: {u}" for u in sorted(set(failed))]
    summary = f"math {'yes' if has_math else 'no'}, mermaid {mermaid}, widgets {views}"
    print(f"  {'ok ' if not problems else 'BAD'} {rel}  ({summary})")
    return problems


def main(folder: str) -> int:
    root = Path(folder).resolve()
    if not (root / "index.html").exists():
        print(f"{root}: no built book (run make book)", file=sys.stderr)
        return 2
    shots = root.parent / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    handler = functools.partial(Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    pages = sorted(
        p for p in root.rglob("*.html")
        if not p.relative_to(root).as_posix().startswith(("_static/", "_sources/", "_images/"))
        and p.name not in SKIP_PAGES
    )
    print(f"Browser check: {len(pages)} pages from {base_url}")
    failures: dict[str, list[str]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        for path in pages:
            context = browser.new_context()
            page = context.new_page()
            try:
                problems = check_page(page, root, path, base_url, shots)
            except Exception as err:  # a page that cannot even load is a failure, not a crash
                problems = [f"could not check: {err}"]
            finally:
                context.close()
            if problems:
                failures[path.relative_to(root).as_posix()] = problems
        browser.close()
    server.shutdown()
    for page_name, problems in failures.items():
        print(f"\n{page_name}:")
        for p in problems:
            print(f"  - {p}")
    print(f"\nScreenshots: {shots}")
    print(f"{len(pages) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "_build/html"))
