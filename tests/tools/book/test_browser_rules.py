"""The browser check's rules that need no browser (tools/book/browser.py): raw TeX, notes left from
writing, what is cut, diagram and figure text, display math size, page weights, stored images
and which boxes of a widget state are live sliders."""

from __future__ import annotations

import base64
import html
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from PIL import Image

from labs.classroom.sliders import with_alt
from tools.book import browser
from tools.book.widget_state import live_sliders

ROOT = Path(__file__).resolve().parents[3]


BOOK = {  # a built book: what each page loads, and what it does not
    "_images/fig.png": b"x" * 1000,
    "_images/other.png": b"y" * 500,
    "_static/scripts/fontawesome.js": b"x" * 1000,
    "_static/widgets/embed-amd.js": b"y" * 500,
    "_static/course.css": b"z" * 20,
    "live/model.onnx": b"z" * 2000,  # the live demos' model, fetched only on use: weighed apart
    "book/a.html": b'<img src="../_images/fig.png"><img src="../_images/fig.png"><img src="data:image/png;base64,AA">'
                   b'<script defer src="../_static/scripts/fontawesome.js?digest=1"></script>'
                   b'<script src="../_static/widgets/embed-amd.js?v=2"></script>'
                   b'<link rel="stylesheet" type="text/css" href="../_static/course.css?v=3" />',
    "book/b.html": b'<link rel="stylesheet" href="../_static/course.css" /><script src="https://example.org/x.js">'
                   b'</script><script src="../_static/widgets/embed-amd.js"></script>'
                   b'<script type="application/vnd.jupyter.widget-view+json">{}</script>',
}


def test_pages_weigh_their_html_and_images_and_load_no_icon_script_nor_an_unused_widget_runtime(tmp_path):
    for rel, data in BOOK.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    pages = [tmp_path / "book" / "a.html", tmp_path / "book" / "b.html"]
    weights = browser.page_weights(tmp_path, pages)
    a, b = len(BOOK["book/a.html"]), len(BOOK["book/b.html"])
    assert weights == {"pages": {"book/a.html": a + 1000, "book/b.html": b},
                       "total_bytes": sum(map(len, BOOK.values())) - 2000, "live_bytes": 2000}
    assert browser.weight_problems(weights) == []
    heavy = dict(weights, live_bytes=browser.LIVE_LIMIT + 1)
    assert [p.text for p in browser.weight_problems(heavy)] == [
        f"the live demos' files (live/) weigh {(browser.LIVE_LIMIT + 1) / 1e6:.1f} MB "
        f"(limit {browser.LIVE_LIMIT / 1e6:.0f} MB)"]
    assert len(browser.weight_problems(dict(weights, total_bytes=browser.BOOK_LIMIT + 1))) == 1
    assert len(browser.weight_problems(dict(weights, pages={"a.html": browser.PAGE_LIMIT + 1}))) == 1
    assert browser.page_assets(tmp_path, pages[0]) == {"_static/scripts/fontawesome.js": 1000,
                                                       "_static/widgets/embed-amd.js": 500, "_static/course.css": 20}
    assert [p.text for p in browser.asset_problems(tmp_path, pages)] == [
        "book/a.html loads _static/scripts/fontawesome.js (0.00 MB) for its icons",
        "book/a.html loads the widget runtime (0.00 MB) but shows no widget"]


def test_shown_images_compare_with_the_stored_ones():
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><text>a &amp; b #1 50%</text></svg>'
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n....").decode()
    outputs = [{"output_type": "display_data", "data": {"image/svg+xml": svg}},
               {"output_type": "display_data", "data": {"image/png": png[:6] + "\n" + png[6:]}}]
    shown = ["data:image/svg+xml," + quote(svg), "data:image/png;base64," + png]
    assert browser._shown_images(shown) == browser._stored_images(outputs)
    # live_slider's <img alt> outputs: the page's src (entities decoded, as getAttribute gives it)
    stored = with_alt([dict(o, metadata={}) for o in outputs], "A figure.")
    srcs = [html.unescape(re.search(r"src='([^']*)'", o["data"]["text/html"]).group(1)) for o in stored]
    assert browser._shown_images(srcs) == browser._stored_images(stored) == browser._stored_images(outputs)


def drawn(fmt: str, dpi: int = 100, metadata: bool = True, **style) -> bytes:
    """A 4 x 3 in figure: 11 pt ticks on a log axis, a 9 pt legend; PNGs record their text sizes as labs' do."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from labs.classroom.figures import png_metadata

    with matplotlib.rc_context({"svg.fonttype": "none", "font.size": 11, "axes.formatter.min_exponent": 0, **style}):
        fig, ax = plt.subplots(figsize=(4, 3))
        ax.semilogx([0.01, 0.1, 1], [1, 2, 3], label="a line")
        ax.legend(fontsize=9)
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=dpi, metadata=png_metadata(fig) if fmt == "png" and metadata else None)
    plt.close(fig)
    return buf.getvalue()


def undated_png() -> bytes:
    png = io.BytesIO()
    Image.new("L", (2, 1)).save(png, "PNG")  # no pHYs chunk, no text
    return png.getvalue()


@pytest.mark.parametrize("figure, smallest_pt, width_pt", [
    # the case: 11 pt ticks pass a 10 pt floor, the legend (9 pt) and the log axis's
    # exponents (0.7 x 11 = 7.7 pt) do not, in SVG and PNG; 4 in is 288 pt at any dpi (retina is 2x)
    (lambda: drawn("svg", 72), 7.7, 288),
    (lambda: drawn("png", 100), 7.7, 288),
    (lambda: drawn("png", 200), 7.7, 288),
    (lambda: drawn("svg", **{"axes.formatter.min_exponent": 4}), 9, 288),  # decades in digits: the legend
    (lambda: drawn("png", metadata=False), None, 288),  # a PNG that records no text sizes is not measured
    (undated_png, None, None),  # nor sized without its resolution
], ids=["svg", "png", "png-retina", "svg-digits", "png-unrecorded", "png-no-dpi"])
def test_figure_text_and_width_are_read_from_the_figure_itself(figure, smallest_pt, width_pt):
    data = figure()
    assert browser.smallest_text_pt(data) == (smallest_pt and pytest.approx(smallest_pt))
    assert browser.figure_width_pt(data) == (width_pt and pytest.approx(width_pt, abs=0.5))


# ---- raw TeX ---------------------------------------------------------------------------------


def block(text: str, kind: str = "prose", folded: bool = False) -> dict:
    return {"kind": kind, "text": text, "first": text[:60], "near": "The gradient, by hand", "folded": folded}


def test_raw_tex_left_in_the_prose_is_found():
    """Lesson 4 today: a markdown line starting with '+' inside inline math broke it in two."""
    blocks = [block(r"and into W, which both sides share, $\partial L / \partial W = X^\top \partial L / \partial A_q"),
              block(r"Y^\top \partial L / \partial A_p$."),
              block("$$ L = 1 $$"), block(r"the share \(x\) of the row"), block("the shares s_{ij} of row i")]
    problems = browser.raw_tex(blocks)
    assert [p.rule for p in problems] == ["raw-tex"] * 5
    assert "any width" in problems[0].text and "The gradient, by hand" in problems[0].text
    assert "'…o W, which both sides share, $\\partial L / \\partial W" in problems[0].text
    assert "(5 pieces)" in problems[0].text


def test_dollars_and_backslashes_that_are_not_tex_pass():
    blocks = [block("It costs $5 a month, or $50 a year."), block("a 10$ fee"),
              block(r'plt.xlabel(r"$\tau$")', kind="code"),
              block(r"'Instruct: Given a support question\nQuery:In Iris'", kind="output")]
    assert browser.raw_tex(blocks) == []


# ---- notes left from writing the book -------------------------------------------------------


@pytest.mark.parametrize("text, kind, what", [
    ("# NBVAL_IGNORE_OUTPUT\nlive_slider(show, taus)", "code", "a test marker"),
    ("cut = lambda v, d: v[:, :d]  # noqa: E731", "code", "a linter marker"),
    ("The source lesson gives the same five starting points.", "prose", "the lesson it came from"),
    ("(The chapter this lab follows reports a TF-IDF baseline.)", "prose", "the lesson it came from"),
    ("(An earlier version of this page trained at lr 1.0.)", "prose", "an earlier draft"),
    ("the course's seed 004, for Qwen3-Embedding-0.6B", "prose", "a version name"),
    ("2 cores shared with about 6 other helpers' jobs", "output", "the authors' machines"),
    ("TODO: a figure here", "prose", "a to-do marker"),
    ("# FIXME", "code", "a to-do marker"),
    ("as issue 15 asked", "prose", "the project's issues"),
])
def test_author_notes_are_found_in_prose_code_and_output(text, kind, what):
    problems = browser.author_notes([block(text, kind=kind)])
    assert len(problems) == 1 and problems[0].rule == "author-note"
    assert what in problems[0].text and "The gradient, by hand" in problems[0].text


def test_a_folded_note_is_found_and_says_so():
    (problem,) = browser.author_notes([block("# NBVAL_IGNORE_OUTPUT", kind="code", folded=True)])
    assert "folded" in problem.text


@pytest.mark.parametrize("text", [
    "one random seed for every source; seed 0 and seed 4 agree", "an issue with the password",
    "a to-do list app", "the source of the lesson's data", "an earlier version of the model",
])
def test_ordinary_words_are_not_author_notes(text):
    assert browser.author_notes([block(text)]) == []


# ---- layout --------------------------------------------------------------------------------


DIAGRAM = {"what": 'diagram "1 Pooling"', "near": "Course map", "fontPx": 16, "scale": 0.41,
           "naturalWidth": 870, "drawnWidth": 358, "column": 358}
EQUATION = {"fontPx": 13.6, "width": 200, "column": 358, "bodyPx": 16, "what": "L = 1", "near": "The formula"}
FIGURE = ('Fig. 1.1 "Token vectors"', "The real grid")
SEVERE = [
    {"id": "image-alt", "impact": "critical", "help": "Images must have alternative text",
     "nodes": [{"target": [".jp-RenderedSVG > img"], "html": "<img src=\"data:image/svg+xml,...\">"}]},
    {"id": "color-contrast", "impact": "serious", "help": "Elements must meet contrast",
     "nodes": [{"target": [f"details:nth-child({i}) > summary"], "html": "<summary>Answer</summary>"}
               for i in range(6)]},
]


@pytest.mark.parametrize("found, rules, says", [
    (lambda: browser.cut_problems([{"what": 'Fig. 4.1 "Five words on a plane"', "near": "First intuition",
                                    "full": 554, "shown": 342}], "390 px"),
     ["cut"], ['390 px: Fig. 4.1 "Five words on a plane" near "First intuition" is cut',
               "342 of its 554 px show (212 px, 38% hidden"]),
    (lambda: browser.mermaid_problems([DIAGRAM, dict(DIAGRAM, scale=0.7), dict(DIAGRAM, scale=0.5, fontPx=None)],
                                      "390 px"),
     ["mermaid-scale", "mermaid-text"], ["drawn at 0.41 of its natural size (at least 0.45)", "drawn at 6.6 px",
                                         "legible up to 573 px"]),
    # shrunk though it fits at full size; a too-wide one (470 px at full size) is right to shrink
    (lambda: browser.math_problems({"inline": [20.4, 20.4], "display": [
        EQUATION, dict(EQUATION, width=320), dict(EQUATION, fontPx=20.4, width=300)]}, "390 px"),
     ["math-size"], ["drawn at 13.6 px, 67% of the page's math (20.4 px)", "(300 px in 358)"]),
    (lambda: browser.math_problems({"inline": [16], "display": [dict(EQUATION, fontPx=16, width=420)]}, "390 px"),
     ["equation-wide"], ["wider than its column (420 px in 358)"]),
    # a page without inline math compares with the body text
    (lambda: browser.math_problems({"inline": [], "display": [dict(EQUATION, fontPx=16)]}, "390 px"), [], []),
    (lambda: [p for p in [browser.figure_text_problem(*FIGURE, 342, 7.1 * 72, "390 px"),
                          browser.figure_text_problem(*FIGURE, 358, 4.9 * 72, "390 px")] if p],
     ["figure-text"], ["drawn at 6.7 px", "at most 5.0 in wide"]),
    (lambda: [browser.figure_text_problem(*FIGURE, 358, 4 * 72, "390 px", 7.7)],
     ["figure-text"], ["(7.7 pt) is drawn at 9.6 px"]),
    (lambda: browser.tab_problems([{"n": 0, "heading": "The dial", "tabs": 3, "at": "", "limit": 30},
                                   {"n": 1, "heading": "Exercise", "tabs": 12, "at": "", "limit": 30},
                                   {"n": 2, "heading": "Practice", "tabs": None, "at": 'summary "Show code"',
                                    "limit": 30}]),
     ["keyboard", "keyboard"], ['live slider 2 under "Exercise": 12 Tabs from its heading (at most 9)',
                                "not reached in 30 Tabs", "Show code"]),
    (lambda: browser.axe_problems(SEVERE + [{"id": "region", "impact": "moderate", "help": "All content in landmarks",
                                             "nodes": [{"target": ["div"]}]}], "390 px"),
     ["axe", "axe"], ["390 px: critical image-alt", ".jp-RenderedSVG > img", "6 element(s)", "and 2 more"]),
], ids=["cut", "mermaid", "math-size", "equation-wide", "math-size-body", "figure-text", "figure-text-pt", "keyboard",
        "axe"])
def test_a_rule_names_what_breaks_it_and_by_how_much(found, rules, says):
    problems = found()
    assert [p.rule for p in problems] == rules
    assert all(any(s in p.text for p in problems) for s in says), problems


# ---- the widget state the slider walk reads ---------------------------------------------------


def test_only_the_course_s_live_slider_boxes_are_read_as_sliders():
    """Other VBoxes in a widget state are not sliders (tests/classroom/test_sliders.py reads real sliders back)."""
    def model(name, **state):
        return {"model_name": name, "state": state}

    state = {"state": {
        "box": model("VBoxModel", _dom_classes=["labs-live-slider"], children=["IPY_MODEL_s", "IPY_MODEL_stack"]),
        "s": model("SelectionSliderModel", _options_labels=["0", "1"], index=1),
        "stack": model("StackModel", _dom_classes=["labs-live-stack"], children=["IPY_MODEL_o"]),
        "o": model("OutputModel", outputs=[{"output_type": "stream", "name": "stdout", "text": "value is 0\n"}]),
        "other": model("VBoxModel", children=["IPY_MODEL_o"]),
    }}
    assert [spec.model_id for spec in live_sliders(state)] == ["box"]


# ---- what a plain `pytest tests` runs -------------------------------------------------------


@pytest.mark.e2e  # pytest in a fresh process
def test_a_folder_run_leaves_the_browser_modules_out_and_says_so():
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "--confcutdir", "tests/book", "tests/book"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
                         env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})  # as the Makefile runs tests/book
    assert run.returncode == 0, run.stdout + run.stderr
    assert "test_browser.py::" not in run.stdout
    assert "test_course_icons.py::" in run.stdout  # the rest of tests/book is collected
    assert "tests/book/test_browser.py not run here: it drives a browser" in run.stdout


# ---- every reader (issue 32): axe-core, the drawers, the keyboard, what a page loads --------------


def test_axe_is_vendored_from_the_npm_lock_for_the_check_not_the_book():
    lock = json.loads((ROOT / "package-lock.json").read_text())
    assert "node_modules/axe-core" in lock["packages"]
    assert browser.AXE_JS.is_file(), "make vendor (npm ci) installs axe-core"
    assert "axe" not in (ROOT / ".ci" / "vendor.sh").read_text()  # nothing of it goes into the pages


def nav(lessons=9, outline=3, primary=1, secondary=1, open_=()):
    return {"lessons": lessons, "outline": outline, "open": list(open_), "hasOutline": True,
            "primaryButtons": primary, "secondaryButtons": secondary}


def test_the_drawer_rule_needs_a_visible_button_and_the_lesson_list_behind_it():
    assert browser.drawer_problems(nav(0), nav(9, open_=["pst-primary-sidebar-modal"]), 9, "390 px") == []
    (hidden,) = browser.drawer_problems(nav(0, primary=0), nav(0), 9, "390 px")
    assert hidden.rule == "drawer" and "no visible button opens the contents" in hidden.text
    (dead,) = browser.drawer_problems(nav(0), nav(0), 9, "390 px")  # the case: the button does nothing
    assert "0 of the 9 lessons are listed (dialogs open: none)" in dead.text
