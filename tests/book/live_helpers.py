"""What every test of the live demos uses: a browser context that keeps the book offline, and the
demos' state as the page keeps it (``div.labsLive``).

The fixtures that make them (the built book's copy, its server, the shared page) are in
tests/book/conftest.py; the browser itself is pytest-playwright's ``browser``, launched once per
pytest process with the flags of tools/book/browser.py.
"""

from __future__ import annotations

from urllib.parse import urlparse

from tools.book import live_page

WAIT_MS = 90_000  # model loads wait on the page, not on a clock; generous under make test's load


class Session:
    """One browser context: every request off 127.0.0.1 refused and recorded, every request and page error kept."""

    def __init__(self, browser, base_url: str, outside: list[str], **options):
        self.context = browser.new_context(**options)
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.outside = outside
        self.base_url = base_url

        def route(r):
            url = r.request.url
            if url.startswith(("data:", "blob:")) or urlparse(url).hostname == "127.0.0.1" or url.startswith("file:"):
                r.continue_()
            else:
                outside.append(url)
                r.abort()

        self.context.route("**/*", route)
        self.context.on("request", lambda r: self.requests.append(r.url))
        self.page = self.context.new_page()
        self.page.on("pageerror", lambda e: self.errors.append(f"{e} {e.stack or ''}"))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" and "live" in m.text else None)

    def open(self, rel: str = live_page.FIXTURE, wait_demos: bool = True):
        self.page.goto(f"{self.base_url}/{rel}", wait_until="load")
        if wait_demos:
            self.page.wait_for_function("() => document.querySelectorAll('.live-demo.live-built').length === "
                                        "document.querySelectorAll('.live-demo').length", timeout=WAIT_MS)
        return self.page

    def live_requests(self) -> list[str]:
        return [urlparse(u).path for u in self.requests if "/live/" in urlparse(u).path]

    def live_errors(self) -> list[str]:
        return [e for e in self.errors if "/live/" in e or "live-loader" in e]

    def close(self):
        self.context.close()


def demo(page, kind: str, nth: int = 0):
    return page.locator(f'.live-demo[data-live="{kind}"]').nth(nth)


def state(page, kind: str, nth: int = 0) -> dict:
    return demo(page, kind, nth).evaluate("d => JSON.parse(JSON.stringify(d.labsLive))")


def ask(page, kind: str, text: str | None = None, chip: int | None = None) -> dict:
    """Type ``text`` into a search demo (or click example ``chip``) and wait for the page's own ranking of it."""
    box = demo(page, kind)
    if chip is not None:
        box.locator(".live-chip").nth(chip).click()
    else:
        box.locator("input").fill(text)
    want = box.locator("input").input_value()
    demo(page, kind).evaluate(
        "(d, want) => new Promise((ok, no) => { const t0 = Date.now(); (function poll() { const s = d.labsLive;"
        " if (s.query === want && s.rankings && !s.stored) return ok(); if (s.status === 'fallback') return no(new"
        " Error(s.fallback)); if (Date.now() - t0 > " + str(WAIT_MS) + ") return no(new Error('no ranking'));"
        " setTimeout(poll, 20); })(); })", want)
    return state(page, kind)
