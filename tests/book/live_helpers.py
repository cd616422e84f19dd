"""What every test of the live demos uses: a browser context that keeps the book offline, the demos'
state as the page keeps it (``div.labsLive``), and the checks every reader's tests share. The fixtures
that make them are in tests/book/conftest.py.
"""

from __future__ import annotations

from urllib.parse import urlparse

from tools.book import browser as chrome, live_page

WAIT_MS = 90_000  # model loads wait on the page, not on a clock; generous under make test's load
DESKTOP = {"viewport": {"width": 1280, "height": 900}}
PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True}
RANKED = "s.query === arg && s.rankings && !s.stored"  # `until`: the page's own ranking of ``arg``
# Every script of a long animation frame, with where it came from: a task of the page as a whole also
# counts the time the machine's other jobs take from the browser.
LONG_SCRIPTS = """window.__scripts = [];
new PerformanceObserver(list => { for (const f of list.getEntries()) for (const s of f.scripts || [])
    window.__scripts.push([s.startTime, s.duration, s.sourceURL, s.invoker]); })
    .observe({type: 'long-animation-frame', buffered: true});"""


class Session:
    """One browser context: every request off 127.0.0.1 refused and recorded, every request and page error kept."""

    def __init__(self, browser, base_url: str, outside: list[str], **options):
        self.context = browser.new_context(**options)
        self.requests: list[str] = []
        self.errors: list[str] = []
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
        """Open a page of the book (or any URL), and wait for its demos to be built."""
        self.page.goto(rel if "://" in rel else f"{self.base_url}/{rel}", wait_until="load")
        if wait_demos:
            self.page.wait_for_function("() => !document.querySelector('.live-demo:not(.live-built)')", timeout=WAIT_MS)
        return self.page

    def live_requests(self) -> list[str]:
        return [urlparse(u).path for u in self.requests if "/live/" in urlparse(u).path]

    def live_errors(self) -> list[str]:
        return [e for e in self.errors if "/live/" in e or "live-loader" in e]

    def close(self):
        """Close the context; a live error it logged fails the test."""
        errors = self.live_errors()
        self.context.close()
        assert not errors, errors


def demo(page, kind: str, nth: int = 0):
    return page.locator(f'.live-demo[data-live="{kind}"]').nth(nth)


def state(page, kind: str, nth: int = 0) -> dict:
    return demo(page, kind, nth).evaluate("d => JSON.parse(JSON.stringify(d.labsLive))")


def until(page, kind: str, condition: str, arg=None, nth: int = 0) -> dict:
    """Wait until ``condition`` (JavaScript of ``s``, the demo's state, ``d``, its element, and ``arg``)
    holds, and return the state; a demo that falls back to its stored example fails the wait, with its reason."""
    page.wait_for_function(
        f"([d, arg]) => {{ const s = d.labsLive; if ({condition}) return true;"
        " if (s.status === 'fallback') throw new Error(s.fallback); return false; }",
        arg=[demo(page, kind, nth).element_handle(), arg], timeout=WAIT_MS)
    return state(page, kind, nth)


def ask(page, kind: str, text: str | None = None, chip: int | None = None) -> dict:
    """Type ``text`` into a search demo (or click example ``chip``) and wait for the page's own ranking of it."""
    box = demo(page, kind)
    if chip is not None:
        box.locator(".live-chip").nth(chip).click()
    else:
        box.locator("input").fill(text)
    return until(page, kind, RANKED, box.locator("input").input_value())


def axe_problems(page, *include: str) -> list[str]:
    """axe-core's serious and critical findings inside the elements ``include`` selects (the browser check's run)."""
    return [p.text for p in chrome.axe_problems(chrome.axe_violations(page, list(include)), "in the demos")]


def unnamed(page, controls: str) -> list[str]:
    """The controls ``controls`` selects that have no label, aria-label or text."""
    return page.evaluate("""(controls) => [...document.querySelectorAll(controls)]
        .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.textContent.trim())
        .map(e => e.outerHTML.slice(0, 80))""", controls)


def cut_demos(page) -> list[str]:
    """The demos that scroll sideways or reach past the screen's right edge (on a phone, innerWidth grows with
    what overflows; the root's clientWidth stays the screen's)."""
    return page.evaluate("() => [...document.querySelectorAll('.live-demo')].filter(d => d.scrollWidth > d.clientWidth"
                         " + 1 || d.getBoundingClientRect().right > document.documentElement.clientWidth + 1)"
                         ".map(d => d.dataset.live)")
