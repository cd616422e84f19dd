"""The browser check of the built book: what test_browser.py runs on every page, in headless Chromium,
served on 127.0.0.1 (any other request fails the page) at 1280 and 390 px. A Problem names its rule,
width, element (a figure's caption, a table's first row, an output's first line) and by how much.

- offline: `math` typeset, `mermaid` drawn, `widgets` rendered, `sliders` live and showing the stored
  output at each position; no broken `images`, `console` error, `network` or failed `requests`;
  `weight` of pages, the book and its live/ folder (broken links fail the build: Sphinx's -n -W);
- nothing cut: `cut`, `page-scroll`, `cell-cut`, `equation-wide`, `code-scroll` (1280 px, outside `wide`);
- legible: `figure-text`, `mermaid-text`, `mermaid-scale`, `math-size`;
- `raw-tex` in prose, `author-note` anywhere (folded or not); a lesson's `time-estimate` and numbered
  figures (`figure-caption`);
- every reader: `axe` (critical, serious), `drawer`, `keyboard`, `slider-name`, `slider-stops`,
  `equation-focus`, `unanswered`, `exercise-cut`, `solution-width`.

measure.js measures in the page; the rules are applied on one side (its `legibility` and `readers`,
or the functions here, tested in tests/tools/book/test_browser_rules.py).
"""

from __future__ import annotations

import functools
import http.server
import io
import json
import os
import re
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

from PIL import Image

from labs.classroom.figures import TEXT_KEY, svg_text_sizes
from tools.book.widget_state import data_url, live_sliders, stored_figure

# Debian's chromium-headless-shell (make chromium): the full browser's Blink and V8, cheaper to run.
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium-headless-shell")
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
MEASURE_JS = (Path(__file__).parent / "measure.js").read_text(encoding="utf-8")
# axe-core from the npm lock (make vendor installs it): run in each page by the check, never part of the book.
AXE_JS = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
AXE_FAIL = ("critical", "serious")  # impacts that fail a page; moderate and minor are left to judgement
TAB_LIMIT = 9  # Tab presses from a slider's section heading to its handle ("under 10")
# Raised by the theme's own scripts (sphinx-thebe declares it twice), not by our assets.
KNOWN_CONSOLE = [re.compile(r"Identifier 'THEBE_JS_URL' has already been declared")]
SKIP_PAGES = {"genindex.html", "search.html"}
PAGE_LIMIT = 3_000_000  # bytes per page, its images included
BOOK_LIMIT = 80_000_000  # bytes, the whole built book but its live/ folder
# The live demos' model, runtime and vectors (tools/live_model.py), fetched only when a reader uses a
# demo (tests/book/test_live.py holds that), so counted apart from the book, under their own limit.
LIVE_FOLDER = "live"
LIVE_LIMIT = 70_000_000
DESKTOP, PHONE = (1280, 900), (390, 844)
WIDTHS = {"1280 px": DESKTOP, "390 px": PHONE}
MERMAID_MIN = {"1280 px": 0.7, "390 px": 0.45}  # of a diagram's natural size
MERMAID_TEXT_MIN_PX = 10.0  # a diagram's smallest label as drawn
SLIDER_WAIT_S = 10  # at most this long for a slider's output to follow it (it takes milliseconds)
# Figure text: the notebooks draw no text below FIGURE_MIN_PT points (tests/notebooks/test_rules.py
# holds their code to it); as shown on screen that text must be at least FIGURE_TEXT_MIN_PX.
FIGURE_MIN_PT = 10
FIGURE_TEXT_MIN_PX = 10.0
# Display math is "much smaller" below this share of the page's inline math size.
MATH_MIN_SHARE = 0.85
CUT_TOLERANCE_PX = 2  # sub-pixel rounding aside
PHONE_COLUMN_PX = 358  # the text column at 390 px: what a figure for phones is drawn for
PNG = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Problem:
    """One thing wrong on a page: the rule it breaks and what a person needs to find and fix it."""

    rule: str
    text: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.text}"


@contextmanager
def serve(root: Path) -> Iterator[str]:
    """The built book on a free 127.0.0.1 port, for as long as the block runs: its base URL."""
    quiet = type("Quiet", (http.server.SimpleHTTPRequestHandler,), {"log_message": lambda *args: None})
    handler = functools.partial(quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def book_pages(root: Path) -> list[Path]:
    """Every page of the built book, in path order (search and index pages aside)."""
    return sorted(
        p for p in root.rglob("*.html")
        if not p.relative_to(root).as_posix().startswith(("_static/", "_sources/", "_images/"))
        and p.name not in SKIP_PAGES
    )


# ---- text rules: raw TeX and notes from writing the book ------------------------------------

# TeX that MathJax did not typeset: a control word (\frac, \partial, \top), a spacing or brace
# command, math delimiters, or a braced sub- or superscript. Typeset math is not in the text.
RAW_TEX = re.compile(
    r"\$\$"
    r"|(?<![\\$\w])\$(?=[^\s$\d])[^$\n]{1,300}?(?<![\s\\])\$(?![\w$])"  # a $...$ pair, as MyST reads one
    r"|\\(?:[A-Za-z]{2,}|[,;!{}]|[()\[\]])"
    r"|[_^]\{"
)

# What the reader should never see: left from writing, testing or reviewing the book.
AUTHOR_NOTES: list[tuple[str, re.Pattern]] = [
    ("a test marker", re.compile(r"\bNBVAL_\w*|\bPYTEST_VALIDATE\w*")),
    ("a linter marker", re.compile(r"#\s*noqa\b|\bnoqa:\s*[A-Z]+\d+|#\s*type:\s*ignore|#\s*pragma:\s*no cover"
                                   r"|#\s*fmt:\s*(?:off|on|skip)\b")),
    ("a to-do marker", re.compile(r"\b(?:TODO|FIXME|XXX|TBD)\b")),
    ("a reference to the project's issues", re.compile(r"\b(?:issues?|PR|pull request)\s*#?\d+\b", re.I)),
    ("a note about the lesson it came from", re.compile(r"\bsource lesson|\bchapter this (?:lab|lesson|page) follows",
                                                        re.I)),
    ("a note about an earlier draft", re.compile(r"\b(?:an? |the )?(?:earlier|previous|older|first|old) "
                                                 r"(?:version|draft) of this (?:page|lesson|notebook|chapter)", re.I)),
    ("a version name from the project", re.compile(r"\bseed 0\d\d\b", re.I)),
    ("a note about the authors' machines", re.compile(r"\bhelpers?['’]?s?['’]? jobs?\b|\bother helpers\b", re.I)),
]


def _context(text: str, start: int, end: int, width: int = 30) -> str:
    """The match with a little text either side, on one line."""
    left, right = max(0, start - width), min(len(text), end + width)
    snippet = " ".join(text[left:right].split())
    return ("…" if left else "") + snippet + ("…" if right < len(text) else "")


def _where(block: dict) -> str:
    folded = ", folded" if block.get("folded") else ""
    kind = {"prose": "text", "code": "code", "output": "printed output"}[block["kind"]]
    return f'{kind} near "{block["near"]}"{folded}, "{block["first"]}"'


def raw_tex(blocks: list[dict], width: str = "any width") -> list[Problem]:
    """Raw TeX in the prose a reader sees. Code and printed output aside: a plot label's TeX is code,
    and a printed repr's escapes ("\\nQuery") are not TeX."""
    out = []
    for block in blocks:
        if block["kind"] != "prose":
            continue
        found = list(RAW_TEX.finditer(block["text"]))
        if found:
            first = found[0]
            out.append(Problem("raw-tex", f"{width}: raw TeX '{_context(block['text'], first.start(), first.end())}' "
                                          f"({len(found)} piece{'s' if len(found) > 1 else ''}) in {_where(block)}"))
    return out


def author_notes(blocks: list[dict], width: str = "any width") -> list[Problem]:
    """Markers and notes left from writing the book, anywhere in a page's text, code and outputs."""
    out = []
    for block in blocks:
        for what, pattern in AUTHOR_NOTES:
            m = pattern.search(block["text"])
            if m:
                context = _context(block["text"], m.start(), m.end())
                out.append(Problem("author-note", f"{width}: {what} '{m.group(0)}' ('{context}') in {_where(block)}"))
    return out


# ---- layout rules ------------------------------------------------------------------------


def cut_problems(found: list[dict], width: str) -> list[Problem]:
    """Figures, tables, outputs, widgets and diagrams a reader cannot see whole (measure.js `cut`)."""
    out = []
    for f in found:
        hidden = f["full"] - f["shown"]
        share = 100 * hidden / f["full"]
        out.append(Problem("cut", f'{width}: {f["what"]} near "{f["near"]}" is cut: {f["shown"]} of its {f["full"]} px '
                                  f"show ({hidden} px, {share:.0f}% hidden or behind a sideways scroll)"))
    return out


def mermaid_problems(diagrams: list[dict], width: str) -> list[Problem]:
    """Diagrams shrunk below MERMAID_MIN of their size, and labels under MERMAID_TEXT_MIN_PX as drawn."""
    out = []
    for d in diagrams:
        where = f'{width}: {d["what"]} near "{d["near"]}"'
        if d["scale"] < MERMAID_MIN[width] - 1e-3:
            out.append(Problem("mermaid-scale", f"{where} drawn at {d['scale']:.2f} of its natural size "
                                                f"(at least {MERMAID_MIN[width]})"))
        if d["fontPx"] and (drawn := d["fontPx"] * d["scale"]) < MERMAID_TEXT_MIN_PX - 1e-6:
            fits = d["column"] * d["fontPx"] / MERMAID_TEXT_MIN_PX
            out.append(Problem("mermaid-text", f"{where}: its labels are drawn at {drawn:.1f} px (at least "
                                               f"{MERMAID_TEXT_MIN_PX:g}); it is {d['naturalWidth']:.0f} px wide at "
                                               f"full size and shrunk to {d['drawnWidth']:.0f} px, legible up to "
                                               f"{fits:.0f} px"))
    return out


def math_problems(sizes: dict, width: str) -> list[Problem]:
    """Display math wider than its column, or much smaller than the page's inline math where it would fit."""
    out = []
    for d in sizes["display"]:
        if d["width"] > d["column"] + 1:
            out.append(Problem("equation-wide", f'{width}: display equation wider than its column ({d["width"]:.0f} '
                                                f'px in {d["column"]}) near "{d["near"]}": split it'))
        reference = statistics.median(sizes["inline"]) if sizes["inline"] else d["bodyPx"]
        if d["fontPx"] >= MATH_MIN_SHARE * reference:
            continue
        at_full = d["width"] * reference / d["fontPx"]
        if at_full <= d["column"] + 1:
            out.append(Problem("math-size", f'{width}: display equation "{d["what"]}" near "{d["near"]}" is drawn at '
                                            f'{d["fontPx"]:.1f} px, {100 * d["fontPx"] / reference:.0f}% of the '
                                            f"page's math ({reference:.1f} px), though at full size it fits "
                                            f'({at_full:.0f} px in {d["column"]})'))
    return out


# ---- figures ----------------------------------------------------------------------------


def _stored_images(outputs: list[dict]) -> list[tuple[str, bytes]]:
    """The figures stored in a slider position's outputs, as ("svg" or "png", bytes)."""
    return [figure[:2] for out in outputs if (figure := stored_figure(out))]


def _shown_images(srcs: list[str]) -> list[tuple[str, bytes]]:
    """The figures a page shows (their <img> data: URLs), as ("svg" or "png", bytes)."""
    return [data_url(src) for src in srcs if src.startswith("data:")]


def figure_width_pt(data: bytes) -> float | None:
    """The drawn width of a matplotlib figure in points: an SVG's width="...pt", or a PNG's pixel
    width over its pHYs resolution (matplotlib writes the dpi it rendered at; retina is 2x)."""
    if data[:8] == PNG:
        image = Image.open(io.BytesIO(data))
        return image.width / image.info["dpi"][0] * 72 if "dpi" in image.info else None
    m = re.search(rb'<svg[^>]*?\swidth="([\d.]+)pt"', data[:4000])
    return float(m.group(1)) if m else None


def _figure_bytes(root: Path, page_url: str, src: str) -> bytes | None:
    if src.startswith("data:"):
        return data_url(src)[1]
    path = root / urlparse(urljoin(page_url, src)).path.lstrip("/")
    return path.read_bytes() if path.is_file() else None


def png_text(data: bytes) -> dict[str, str]:
    """A PNG's text chunks before its image data (keyword: text), where matplotlib writes its savefig metadata."""
    return {k: v for k, v in Image.open(io.BytesIO(data)).info.items() if isinstance(v, str)}


def png_smallest_text_pt(data: bytes) -> float | None:
    """The smallest text a PNG figure draws, in points, as labs records it (TEXT_KEY; None if not)."""
    value = png_text(data).get(TEXT_KEY)
    return float(value) if value else None


def smallest_text_pt(data: bytes) -> float | None:
    """Every text of a figure, measured: an SVG's <text> and <tspan> sizes (text kept as text), or the
    size a PNG records. None: a PNG that records nothing, or a figure without text."""
    if data[:8] == PNG:
        return png_smallest_text_pt(data)
    sizes = svg_text_sizes(data.decode("utf-8", "replace"))
    return min(sizes) if sizes else None


def figure_text_problem(name: str, near: str, shown_px: float, width_pt: float, width: str,
                        smallest_pt: float = FIGURE_MIN_PT) -> Problem | None:
    """A figure `width_pt` points wide shown `shown_px` wide: is its smallest text (`smallest_pt`
    points as drawn) at least FIGURE_TEXT_MIN_PX on screen?"""
    px = smallest_pt * shown_px / width_pt
    if px >= FIGURE_TEXT_MIN_PX - 1e-6:
        return None
    fit_in = PHONE_COLUMN_PX * smallest_pt / FIGURE_TEXT_MIN_PX / 72
    grow = FIGURE_TEXT_MIN_PX * width_pt / shown_px
    return Problem("figure-text", f'{width}: {name} near "{near}": its smallest text ({smallest_pt:.1f} pt) is drawn '
                                  f"at {px:.1f} px (at least {FIGURE_TEXT_MIN_PX:g}): {width_pt / 72:.1f} in wide, "
                                  f"shown {shown_px:.0f} px wide (for a phone, draw it at most {fit_in:.1f} in wide "
                                  f"at that size, panels stacked, or its smallest text at {grow:.1f} pt)")


def check_figure_text(page, root: Path, width: str) -> list[Problem]:
    """Every figure shown in a cell output (a slider's current one included): its smallest text as
    shown. SVG figures are measured text by text; PNG figures by the sizes they record."""
    out = []
    for fig in page.evaluate("() => bookCheck.shownFigures()"):
        data = _figure_bytes(root, page.url, fig["src"])
        points = figure_width_pt(data) if data else None
        if not points:
            out.append(Problem("figure-text", f"{width}: {fig['name']} near \"{fig['near']}\": cannot tell its size "
                                              "in points (a PNG without pHYs?)"))
            continue
        smallest = smallest_text_pt(data)
        if smallest is None:
            if data[:8] == PNG:
                out.append(Problem("figure-text", f"{width}: {fig['name']} near \"{fig['near']}\": the PNG does not "
                                                  "record its text sizes (run the notebook again: labs' setup() "
                                                  "records them)"))
            continue
        problem = figure_text_problem(fig["name"], fig["near"], fig["shown"], points, width, smallest)
        if problem:
            out.append(problem)
    return out


# ---- sliders ----------------------------------------------------------------------------

TIME_RE = re.compile(r"<em>About \d+ minutes to read and run")
STATE_RE = re.compile(r'<script type="application/vnd\.jupyter\.widget-state\+json">(.*?)</script>', re.S)

def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.replace("\xa0", " ").splitlines() if line.strip()]


def check_sliders(page, html: str) -> tuple[list[str], int]:
    """Move every live slider through every position (other choices: a step each way); (problems, positions)."""
    problems: list[str] = []
    match = STATE_RE.search(html)
    specs = live_sliders(json.loads(match.group(1))) if match else []
    others = page.evaluate(
        "() => [...document.querySelectorAll('.widget-slider')].filter(s => !s.closest('.labs-live-slider')).length")
    if others:
        problems.append(f"{others} slider(s) not made with the course's live_slider: their output cannot follow "
                        "them without a kernel")
    if not specs:
        return problems, 0
    found = page.evaluate("ids => bookCheck.markSliders(ids)", [s.model_id for s in specs])
    specs.sort(key=lambda s: found.index(s.model_id) if s.model_id in found else len(found))  # page order
    checked = 0
    for n, spec in enumerate(specs, 1):
        if spec.model_id not in found:
            problems.append(f"live slider {n}: not rendered on the page")
            continue
        box = page.locator(f'[data-check-id="{spec.model_id}"]')
        box.scroll_into_view_if_needed()  # read as a reader reads it: off screen, a cell is not laid out (course.css)
        handle = box.locator(".noUi-handle")
        name = f"live slider {n} ({spec.labels[0]} .. {spec.labels[-1]})"

        def expect(i: int, j: int, how: str) -> bool:
            want = {"readout": spec.labels[i], "handle's aria-valuetext": spec.labels[i],
                    "text": _lines(spec.text(i, j)), "images": _stored_images(spec.outputs[(j, i)])}

            def seen() -> dict:
                shown = box.evaluate("box => bookCheck.sliderShown(box)")
                return {"readout": shown["readout"], "handle's aria-valuetext": shown["valuetext"],
                        "text": _lines(shown["text"]), "images": _shown_images(shown["images"])}

            # The widget manager swaps the output within milliseconds; the limit is generous so that
            # the check holds while make test runs the notebooks beside it on the same cores.
            deadline = time.monotonic() + SLIDER_WAIT_S
            while (got := seen()) != want and time.monotonic() < deadline:
                page.wait_for_timeout(10)
            if got == want:
                return True
            where = f"position {spec.labels[i]!r}" + (f", choice {spec.choice_labels[j]!r}" if spec.choice_labels
                                                      else "")
            wrong = next(k for k in want if got[k] != want[k])
            brief = {"text": lambda v: repr(" / ".join(v)[:120]),
                     "images": lambda v: f"{len(v)} image(s), {sum(len(b) for _, b in v)} bytes"}.get(wrong, repr)
            problems.append(f"{name}: {how}, at {where} the page shows {wrong} {brief(got[wrong])}, "
                            f"not the stored {brief(want[wrong])}")
            return False

        def choose(j: int) -> None:
            if spec.choice_kind == "Dropdown":
                box.locator("select").select_option(index=j)
            else:
                box.locator(".widget-toggle-button").nth(j).click()

        last = len(spec.labels) - 1
        first = spec.choice_start if spec.choice_labels else 0
        for j in [first] + [k for k in range(len(spec.choice_labels)) if k != first]:
            if spec.choice_labels:
                choose(j)
            ok = expect(spec.start, j, f"choice {j + 1} chosen")
            i = spec.start
            handle.focus()
            # Under the first choice the slider visits every position and comes back (the way back
            # checks where it lands); under the others one step each way is enough to show the link
            # (the classroom tests prove every stored position equals what the function prints).
            stops = ((("ArrowLeft", 0), ("ArrowRight", last), ("ArrowLeft", spec.start)) if j == first else
                     (("ArrowRight", min(spec.start + 1, last)), ("ArrowLeft", max(spec.start - 1, 0)),
                      ("ArrowRight", spec.start)))
            for leg, (key, stop) in enumerate(stops):
                each = not (j == first and leg == 2)
                while ok and i != stop:
                    page.keyboard.press(key)
                    i += 1 if key == "ArrowRight" else -1
                    if each or i == stop:
                        ok = expect(i, j, f"after {key}")
                        checked += 1
            if not ok:
                break
        if ok:
            if spec.choice_labels:
                choose(spec.choice_start)
            expect(spec.start, spec.choice_start, "back at the start")
    return problems, checked


# ---- one page ---------------------------------------------------------------------------


def settle(page) -> None:
    """Wait until the page has laid itself out again after a change (measure.js `settle`)."""
    page.evaluate("() => bookCheck.settle()")


def measure_width(page, root: Path, width: str) -> list[Problem]:
    """The layout rules at one width, with every <details> open (an answer or a folded cell is
    read opened)."""
    page.evaluate("() => bookCheck.openDetails()")
    settle(page)
    try:
        found = [Problem(p["rule"], f"{width}: {p['text']}")
                 for p in page.evaluate("phone => bookCheck.legibility(phone)", width == "390 px")]
        found += cut_problems(page.evaluate("px => bookCheck.cut(px)", CUT_TOLERANCE_PX), width)
        found += mermaid_problems(page.evaluate("() => bookCheck.diagrams()"), width)
        found += math_problems(page.evaluate("() => bookCheck.mathSizes()"), width)
        found += check_figure_text(page, root, width)
        found += [Problem(p["rule"], f"{width}: {p['text']}")
                  for p in page.evaluate("phone => bookCheck.readers(phone)", width == "390 px")]
    finally:
        page.evaluate("() => bookCheck.restoreDetails()")
    return found


# ---- every reader: axe-core, the drawers, the keyboard ---------------------------------------


def axe_problems(violations: list[dict], width: str) -> list[Problem]:
    """axe-core's critical and serious violations, one problem per rule, naming its elements."""
    out = []
    for v in violations:
        if v.get("impact") not in AXE_FAIL:
            continue
        nodes = v.get("nodes", [])
        shown = "; ".join(" ".join(map(str, n.get("target", []))) + (f' ("{n["html"][:60]}")' if n.get("html") else "")
                          for n in nodes[:4])
        more = f" and {len(nodes) - 4} more" if len(nodes) > 4 else ""
        out.append(Problem("axe", f"{width}: {v['impact']} {v['id']} ({v.get('help', '')}): {len(nodes)} element(s): "
                                  f"{shown}{more}"))
    return out


def axe_violations(page, include: list[str] | None = None) -> list[dict]:
    """axe-core's violations on the page as it is now, or inside the elements the selectors ``include``
    pick (axe is injected for the check only)."""
    if not AXE_JS.is_file():
        raise FileNotFoundError(f"{AXE_JS} is missing: make vendor installs axe-core")
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(content=AXE_JS.read_text(encoding="utf-8"))
    return page.evaluate("""async include => (await axe.run(include ? {include: include.map(s => [s])} : document,
                                                         {resultTypes: ['violations']})).violations
        .map(v => ({id: v.id, impact: v.impact, help: v.help,
                    nodes: v.nodes.map(n => ({target: n.target, html: n.html}))}))""", include)


def check_axe(page, width: str) -> list[Problem]:
    return axe_problems(axe_violations(page), width)


def drawer_problems(before: dict, after: dict, lessons: int, width: str) -> list[Problem]:
    """The contents drawer: a visible button, and after pressing it the lesson list is shown (on a
    phone, in the drawer; wider, the sidebar the button hides and shows again)."""
    if not before["primaryButtons"]:
        return [Problem("drawer", f"{width}: no visible button opens the contents (the lesson list)")]
    if after["lessons"] < lessons:
        return [Problem("drawer", f"{width}: after pressing the contents button, {after['lessons']} of the {lessons} "
                                  f"lessons are listed (dialogs open: {after['open'] or 'none'})")]
    return []


def _press(page, button: str, until: str, arg=None) -> dict:
    """Press the visible button.<button>, wait up to 3 s for `until` (JS of v = navShown() and n = arg),
    and read navShown() before Escape closes what it opened."""
    page.locator(f"button.{button}:visible").first.click()
    try:
        page.wait_for_function(f"n => {{ const v = bookCheck.navShown(); return {until}; }}", arg=arg, timeout=3000)
    except Exception:
        pass  # read next
    seen = page.evaluate("() => bookCheck.navShown()")
    page.keyboard.press("Escape")
    settle(page)
    return seen


def check_drawers(page, width: str, lessons: int) -> list[Problem]:
    """Press the contents button (and, where the page has an outline that is not shown, the outline
    button): the lesson list, and the outline, must show."""
    problems: list[Problem] = []
    before = page.evaluate("() => bookCheck.navShown()")
    if not before["primaryButtons"]:
        return drawer_problems(before, before, lessons, width)
    if width == "1280 px" and before["lessons"] >= lessons:  # the sidebar shows the list: the button hides it
        hidden = _press(page, "primary-toggle", "v.lessons < n", lessons)
        after = _press(page, "primary-toggle", "v.lessons >= n", lessons)
        if hidden["lessons"] == after["lessons"]:
            problems.append(Problem("drawer", f"{width}: the contents button neither hides nor shows the lesson list"))
    else:
        after = _press(page, "primary-toggle", "v.lessons >= n", lessons)
    problems += drawer_problems(before, after, lessons, width)
    now = page.evaluate("() => bookCheck.navShown()")
    if now["hasOutline"] and not now["outline"]:
        if not now["secondaryButtons"]:
            problems.append(Problem("drawer", f"{width}: the page outline is not shown and no visible button opens it"))
        elif not _press(page, "secondary-toggle", "v.outline > 0")["outline"]:
            problems.append(Problem("drawer", f"{width}: the outline button does not show the page outline"))
    # The pointer and focus leave the buttons: a tooltip left fading in would be measured at the next width.
    page.mouse.move(0, page.viewport_size["height"] - 1)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    settle(page)
    return problems


def tab_problems(counts: list[dict]) -> list[Problem]:
    """Each slider reached from the heading above it within TAB_LIMIT Tab presses."""
    out = []
    for c in counts:
        if c["tabs"] is None:
            out.append(Problem("keyboard", f'1280 px: live slider {c["n"] + 1} under "{c["heading"]}": not reached in '
                                           f'{c["limit"]} Tabs from its heading (focus stopped at {c["at"]})'))
        elif c["tabs"] > TAB_LIMIT:
            out.append(Problem("keyboard", f'1280 px: live slider {c["n"] + 1} under "{c["heading"]}": {c["tabs"]} Tabs '
                                           f"from its heading (at most {TAB_LIMIT})"))
    return out


def tab_counts(page, limit: int = 30) -> list[dict]:
    """For each live slider: how many Tab presses take the focus from its section heading (focused as a
    reader arriving from the outline starts there) to its handle or its first step button; None
    where `limit` presses do not."""
    counts = []
    for s in page.evaluate("() => bookCheck.sliderHeadings()"):
        entry = {"n": s["n"], "heading": s["heading"], "tabs": None, "at": "", "limit": limit}
        heading = page.locator(f'[data-check-heading~="{s["n"]}"]')
        if heading.count():
            heading.focus()
            for tabs in range(1, limit + 1):
                page.keyboard.press("Tab")
                state = page.evaluate("n => bookCheck.focusIn(n)", s["n"])
                if state["onHandle"]:
                    entry["tabs"] = tabs
                    break
                entry["at"] = state["at"]
        else:
            entry["at"] = "no heading above it"
        counts.append(entry)
    page.evaluate("() => { if (document.activeElement) document.activeElement.blur(); window.scrollTo(0, 0); }")
    return counts


def check_page(page, root: Path, path: Path, base_url: str, shots: Path | None) -> tuple[list[Problem], str]:
    """Every rule on one page, at 1280 px and then at 390 px: (problems, a summary of what it held)."""
    rel = path.relative_to(root).as_posix()
    url = f"{base_url}/{rel}"
    problems: list[Problem] = []
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

    def hard(rule: str, items: list[str]) -> None:
        problems.extend(Problem(rule, item) for item in items)

    def offline() -> None:
        hard("console", [f"console error: {m[:200]}" for m in console if not any(k.search(m) for k in KNOWN_CONSOLE)])
        hard("network", [f"tried to reach the network: {u}" for u in sorted(set(outside))])
        hard("requests", [f"failed request: {u}" for u in sorted(set(failed))])

    page.route("**/*", route)
    page.set_viewport_size({"width": DESKTOP[0], "height": DESKTOP[1]})
    page.goto(url, wait_until="load")
    html = path.read_text(errors="replace")
    if "<article" not in html:  # a redirect page (the root index.html): it works offline, nothing to measure
        page.wait_for_timeout(300)
        offline()
        return problems, "a redirect"
    page.evaluate(MEASURE_JS)

    has_math = 'class="math' in html
    if has_math:
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=20000)
        page.evaluate("() => MathJax.startup.promise")
        if page.locator("mjx-container").count() == 0:
            hard("math", ["math on the page but nothing typeset"])
    mermaid = page.locator("pre.mermaid, div.mermaid").count()
    if mermaid:
        try:
            page.wait_for_function(
                "() => [...document.querySelectorAll('pre.mermaid, div.mermaid')].every(e => e.querySelector('svg'))",
                timeout=20000,
            )
        except Exception:
            drawn = page.locator("pre.mermaid svg, div.mermaid svg").count()
            hard("mermaid", [f"{mermaid - drawn} of {mermaid} mermaid diagrams not drawn"])
    views = html.count("application/vnd.jupyter.widget-view+json")
    positions = 0
    if views:
        try:
            page.wait_for_function("() => bookCheck.unrenderedViews() === 0", timeout=20000)
        except Exception:
            pass  # counted next
        unrendered = page.evaluate("() => bookCheck.unrenderedViews()")
        if unrendered:
            hard("widgets", [f"{unrendered} saved widget views not rendered"])
        slider_problems, positions = check_sliders(page, html)
        hard("sliders", slider_problems)
    hard("images", [f"broken image {src}" for src in page.evaluate(
        "() => [...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)")])

    page.evaluate("() => { if (document.activeElement) document.activeElement.blur(); window.scrollTo(0, 0); }")
    blocks = page.evaluate("() => bookCheck.blocks()")
    problems += raw_tex(blocks) + author_notes(blocks)
    if rel.startswith("notebooks/"):
        time_at, title = TIME_RE.search(html), html.find("<h1", max(html.find("<article"), 0))
        section = html.find("<h2", title) if title >= 0 else -1  # the lesson's first section
        if not time_at or (section >= 0 and time_at.start() > section):
            problems.append(Problem("time-estimate", "no time estimate at the top of the lesson (a line '*About N "
                                                     "minutes to read and run; ...*' before the first section)"))
        problems += [Problem("figure-caption", f"a figure without a numbered caption (cell metadata "
                                               f"mystnb.figure): {alt!r}")
                     for alt in page.evaluate("() => bookCheck.unnumberedFigures()")]

    tabs = tab_counts(page)
    problems += tab_problems(tabs)
    lessons = len([p for p in (root / "notebooks").glob("*.html")]) if (root / "notebooks").is_dir() else 0
    name = rel.replace("/", "__").removesuffix(".html")
    for width, (w, h) in WIDTHS.items():
        if w != DESKTOP[0]:
            page.set_viewport_size({"width": w, "height": h})
            settle(page)
        problems += measure_width(page, root, width)
        problems += check_axe(page, width)
        if shots:
            shots.mkdir(parents=True, exist_ok=True)
            page.evaluate("() => window.scrollTo(0, 0)")
            page.screenshot(path=str(shots / f"{name}-{'desktop' if w == DESKTOP[0] else 'phone'}.png"),
                            full_page=True)
        problems += check_drawers(page, width, lessons)
    offline()
    summary = (f"math {'yes' if has_math else 'no'}, mermaid {mermaid}, widgets {views}, "
               f"slider positions checked {positions}"
               + (f", Tabs from heading to slider {[t['tabs'] for t in tabs]}" if tabs else ""))
    return problems, summary


# ---- page weights ------------------------------------------------------------------------

IMG_RE = re.compile(r'<img[^>]+src="([^"]+)"')
ASSET_RE = re.compile(r'<script[^>]+src="([^"]+)"|<link[^>]+rel="stylesheet"[^>]+href="([^"]+)"'
                      r'|<link[^>]+href="([^"]+)"[^>]+rel="stylesheet"')
# Scripts a page must not load: the theme's icon script (the icons are CSS: book/_ext/course_icons.py)
# anywhere, and the widget runtime where the page has no widget.
ICON_SCRIPT = "scripts/fontawesome.js"
WIDGET_RUNTIME = "widgets/embed-amd.js"


def _local_files(root: Path, path: Path, pattern: re.Pattern) -> dict[str, int]:
    """The book's files a page names (in the group `pattern` matched), each once, with their sizes."""
    found = {}
    for m in pattern.finditer(path.read_text(errors="replace")):
        target = (path.parent / unquote(urlparse(m.group(m.lastindex)).path)).resolve()  # a URL elsewhere: no file
        if target.is_file() and root in target.parents:
            found[target.relative_to(root).as_posix()] = target.stat().st_size
    return found


def page_assets(root: Path, path: Path) -> dict[str, int]:
    """The scripts and stylesheets a page names: what a first visit fetches besides the page and its images."""
    return _local_files(root, path, ASSET_RE)


def asset_problems(root: Path, pages: list[Path]) -> list[Problem]:
    """No page loads the 1.45 MB icon script, and only a page with widgets loads the widget runtime."""
    out = []
    for path in pages:
        rel = path.relative_to(root).as_posix()
        assets = page_assets(root, path)
        icons = [a for a in assets if a.endswith(ICON_SCRIPT)]
        if icons:
            out.append(Problem("weight", f"{rel} loads {icons[0]} ({assets[icons[0]] / 1e6:.2f} MB) for its icons"))
        runtime = [a for a in assets if a.endswith(WIDGET_RUNTIME)]
        if runtime and "application/vnd.jupyter.widget-view+json" not in path.read_text(errors="replace"):
            out.append(Problem("weight", f"{rel} loads the widget runtime ({assets[runtime[0]] / 1e6:.2f} MB) but "
                                         "shows no widget"))
    return out


def page_weights(root: Path, pages: list[Path]) -> dict:
    """Bytes of each page (its HTML, stored outputs inline, plus the _images it loads) and of the book."""
    weights = {path.relative_to(root).as_posix(): path.stat().st_size + sum(_local_files(root, path, IMG_RE).values())
               for path in pages}
    live = root / LIVE_FOLDER
    book = sum(f.stat().st_size for f in root.rglob("*") if f.is_file() and live not in f.parents)
    live_bytes = sum(f.stat().st_size for f in live.rglob("*") if f.is_file())
    return {"pages": weights, "total_bytes": book, "live_bytes": live_bytes}


def weight_problems(weights: dict) -> list[Problem]:
    out = [Problem("weight", f"{rel} weighs {size / 1e6:.2f} MB (limit {PAGE_LIMIT / 1e6:.0f} MB)")
           for rel, size in weights["pages"].items() if size > PAGE_LIMIT]
    if weights["total_bytes"] > BOOK_LIMIT:
        out.append(Problem("weight", f"the built book weighs {weights['total_bytes'] / 1e6:.1f} MB "
                                     f"(limit {BOOK_LIMIT / 1e6:.0f} MB)"))
    if weights.get("live_bytes", 0) > LIVE_LIMIT:
        out.append(Problem("weight", f"the live demos' files ({LIVE_FOLDER}/) weigh {weights['live_bytes'] / 1e6:.1f} MB "
                                     f"(limit {LIVE_LIMIT / 1e6:.0f} MB)"))
    return out
