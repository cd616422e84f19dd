"""Rules every lesson notebook keeps, checked on the committed files (nbval checks the outputs).

A test with a `path` argument is one rule, run on every lesson (pytest_generate_tests below) and
on `make lesson`'s frame (tests/tools/notebooks/test_lesson.py); SEEDS breaks each rule that has
a helper of its own in a copy of lesson 1, to show it fails.
"""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

import pytest
import yaml
from PIL import Image
from PIL.PngImagePlugin import PngInfo

from labs.classroom.figures import TEXT_KEY
from tests.notebooks.order import toc_order
from tools.book.browser import AUTHOR_NOTES, FIGURE_MIN_PT, smallest_text_pt
from tools.book.widget_state import live_sliders, stored_figure

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
IGNORE_TAG = "nbval-ignore-output"  # widgets and timings only; a tag, so no marker shows on the page
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
MAX_CELLS, MAX_WORDS = 45, 4000  # a lesson is read in one sitting, about 40 minutes
DECIMAL = re.compile(r"(?<![\w.])-?\d+\.\d+(?:e-?\d+)?(?![\w.])")
NOTES = [(what, re.compile(p.pattern, p.flags | re.I)) for what, p in AUTHOR_NOTES]  # in a cell, in any case
# Float bits differ from CPU to CPU: a hash of an array or of weights holds on no other machine.
FLOAT_DIGEST = re.compile(r"\.(npy|npz|safetensors|pt|pth|bin)\b[^\n]{0,40}?\b[0-9a-f]{8,}")
# Figure text: none below FIGURE_MIN_PT points, which the browser check turns into on-screen pixels.
FONT_SIZE = re.compile(r"(?<!\w)(?:fontsize|labelsize|size|[\"'][\w.]*size[\"'])\s*[=:]\s*(\d+(?:\.\d+)?)")
NAMED_SMALL = re.compile(r"[\"'](?:xx-small|x-small|small|smaller)[\"']")
# A phone shows about 44 characters of 12 px monospace in the 322 px code box at 390 px: an exercise
# cell's lines stay within EXERCISE_LINE_MAX, and what to put where is said in the prose above it.
EXERCISE_LINE_MAX = 40
CHECK_CALL = re.compile(r"\bcheck_\w+\(")
REMOVE_OUTPUT = "remove-output"
PLACEHOLDER = re.compile(r"^(\w+) = None\b|^def (\w+)\(", re.M)


def pytest_generate_tests(metafunc):
    if "path" in metafunc.fixturenames:
        metafunc.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def source(cell: dict) -> str:
    return "".join(cell["source"])


def prose(nb: dict) -> str:
    return "\n".join(source(c) for c in nb["cells"] if c["cell_type"] == "markdown")


def tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def code_cells(nb: dict) -> list[tuple[int, dict]]:
    return [(i, c) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]


def printed(outputs: list[dict]) -> str:
    """The text outputs show: streams and text/plain (a widget's repr lists its settings, not results)."""
    parts = []
    for out in outputs:
        if out["output_type"] == "stream":
            parts.append("".join(out["text"]))
        elif "text/plain" in out.get("data", {}) and WIDGET_VIEW not in out["data"]:
            parts.append("".join(out["data"]["text/plain"]))
    return "\n".join(parts)


def widget_state(nb: dict) -> dict:
    return nb.get("metadata", {}).get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})


def slider_figures(nb: dict) -> dict[int, list[tuple[str, tuple]]]:
    """cell index -> every figure its live_slider stores, as (the position's label, (kind, bytes, alt text))."""
    specs = {s.model_id: s for s in live_sliders(widget_state(nb))}
    found: dict[int, list[tuple[str, tuple]]] = {}
    for i, cell in code_cells(nb):
        views = [o["data"][WIDGET_VIEW].get("model_id") for o in cell["outputs"] if WIDGET_VIEW in o.get("data", {})]
        for spec in (specs[view] for view in views if view in specs):
            found.setdefault(i, []).extend((spec.labels[k], figure) for (_, k), outs in sorted(spec.outputs.items())
                                           for out in outs if out["output_type"] == "display_data"
                                           and (figure := stored_figure(out)))
    return found


def test_toc_lists_every_notebook_in_course_order():
    listed = [page.removeprefix("notebooks/") for page in toc_order((ROOT / "_toc.yml").read_text())
              if page.startswith("notebooks/")]
    assert NOTEBOOKS and sorted(listed) == listed, "_toc.yml must list the notebooks in course order"
    assert {f"{n}.ipynb" for n in listed} == {p.name for p in NOTEBOOKS}


def test_book_config_never_executes():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["execute"]["execute_notebooks"] == "off"


def test_every_code_cell_ran_cleanly(path):
    for i, cell in code_cells(load(path)):
        if not source(cell).strip():
            continue
        assert cell.get("execution_count") is not None, f"{path.name} cell {i} has no stored output: run make outputs"
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", f"{path.name} cell {i} stored an error"
            assert out.get("name") != "stderr", f"{path.name} cell {i} wrote to stderr: {''.join(out['text'])[:200]}"
        assert "nbval-skip" not in tags(cell), f"{path.name} cell {i}: a skipped cell is an unchecked claim"


def test_ignored_cells_are_widgets_or_timings_and_print_no_quoted_number(path):
    nb = load(path)
    quoted = set(DECIMAL.findall(prose(nb)))
    widget_text = printed([o for m in widget_state(nb).get("state", {}).values()
                           for o in m.get("state", {}).get("outputs", []) or []])
    for i, cell in code_cells(nb):
        if IGNORE_TAG not in tags(cell):
            continue
        src = source(cell)
        is_widget = "widgets." in src or "interact" in src or "live_slider(" in src
        is_timing = bool(re.search(r"perf_counter|time\.time|timeit|max_memory|peak|memory", src))
        assert is_widget or is_timing, f"{path.name} cell {i}: {IGNORE_TAG} on a cell neither a widget nor a timing"
        clash = quoted & set(DECIMAL.findall(printed(cell["outputs"]) + ("\n" + widget_text if is_widget else "")))
        assert not clash, f"{path.name} cell {i} is unchecked but prints numbers the prose quotes: {sorted(clash)}"


def test_lesson_shape(path):
    nb = load(path)
    text = prose(nb)
    assert nb["cells"][0]["cell_type"] == "markdown" and source(nb["cells"][0]).startswith("# "), "starts with a title"
    for needed in ("Learning goals", "What to know first", "## In 20 seconds", "## Self-test", "<details>",
                   "Reading it"):
        assert needed in text, f"{path.name} lacks {needed!r}"
    setup = code_cells(nb)[1][1]  # after the install cell (tests/tools/notebooks/test_install_cell.py)
    assert "setup(" in source(setup) and "from labs.classroom.setup import setup" in source(setup), (
        f"{path.name}: the second code cell imports and calls labs.classroom.setup.setup()")


def test_a_lesson_is_read_in_one_sitting(path):
    nb = load(path)
    words = len(re.findall(r"\S+", prose(nb)))
    assert len(nb["cells"]) <= MAX_CELLS, f"{path.name}: {len(nb['cells'])} cells (at most {MAX_CELLS})"
    assert words <= MAX_WORDS, f"{path.name}: {words} words of prose (at most {MAX_WORDS})"


def test_nothing_from_writing_the_book_is_on_the_page(path):
    """The browser check's author notes (tools/book/browser.py), here in the cells and their outputs, in
    any case: a lowercase ``# noqa`` or ``todo`` in a cell is a note too."""
    for i, cell in enumerate(load(path)["cells"]):
        for what, pattern in NOTES:
            hit = pattern.search(source(cell) + "\n" + printed(cell.get("outputs", [])))
            assert not hit, f"{path.name} cell {i} shows {what} {hit.group(0)!r}: readers never see how it was made"


def exercise_cells(nb: dict) -> list[int]:
    """Cells where the reader answers: code that sets ``answer = None`` (or a function left to write)."""
    return [i for i, c in code_cells(nb) if re.search(r"^(answer|\w+_answer) = None\b|^def \w+\(.*\):\n\s+# your code",
                                                      source(c), re.M)]


def test_every_exercise_has_a_worked_solution_after_the_attempt(path):
    """QuantEcon's pattern: the attempt cell, then within two cells a collapsed worked solution."""
    nb = load(path)
    for i in exercise_cells(nb):
        after = [source(c) for c in nb["cells"][i + 1:i + 3] if c["cell_type"] == "markdown"]
        assert any(re.search(r":class: dropdown|<details>", text) and "olution" in text for text in after), (
            f"{path.name} cell {i}: an exercise without a collapsible worked solution right after it")


def test_every_figure_has_alt_text_and_a_reading(path):
    cells = load(path)["cells"]
    for i, cell in code_cells({"cells": cells}):
        if not any("image/png" in out.get("data", {}) for out in cell["outputs"]):
            continue
        alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt", "")
        assert len(alt) > 20, f"{path.name} cell {i}: a figure without alt text"
        following = next((c for c in cells[i + 1:] if c["cell_type"] == "markdown"), None)
        assert following is not None and "Reading it" in source(following), (
            f"{path.name} cell {i}: the figure is not followed by a 'Reading it' paragraph")


def test_slider_cells_have_saved_state(path):
    nb = load(path)
    if any("widgets." in source(c) or "live_slider(" in source(c) for _, c in code_cells(nb)):
        assert widget_state(nb).get("state"), f"{path.name}: sliders without saved widget state (run make outputs)"


def test_no_stored_output_prints_a_digest_of_float_data(path):
    for i, cell in code_cells(load(path)):
        hit = FLOAT_DIGEST.search(printed(cell["outputs"]))
        assert not hit, f"{path.name} cell {i} prints a digest of float data: {hit.group(0)!r} (hash text files)"


def test_figure_text_is_at_least_the_floor_at_100_dpi(path):
    """Font sizes in the plotting code, and the named sizes smaller than the default."""
    for i, cell in code_cells(load(path)):
        small = [m.group(0) for m in FONT_SIZE.finditer(source(cell)) if float(m.group(1)) < FIGURE_MIN_PT]
        small += NAMED_SMALL.findall(source(cell))
        assert not small, f"{path.name} cell {i}: figure text below {FIGURE_MIN_PT} pt: {small}"


def test_every_stored_figure_draws_its_text_at_the_floor_or_more(path):
    """As setup() records it in the stored PNGs and sliders' figures: legends and log-axis exponents count too."""
    nb = load(path)
    found = [(f"cell {i}", smallest_text_pt(base64.b64decode("".join(out["data"]["image/png"]))))
             for i, cell in code_cells(nb) for out in cell["outputs"] if "image/png" in out.get("data", {})]
    unknown = [where for where, pt in found if pt is None]
    found += [(f"cell {i} slider at {label}", smallest_text_pt(figure[1]))
              for i, figures in slider_figures(nb).items() for label, figure in figures]
    small = [f"{where}: {pt:.1f} pt" for where, pt in found if pt is not None and pt < FIGURE_MIN_PT - 1e-6]
    assert not small, f"{path.name}: figure text below {FIGURE_MIN_PT} pt: " + ", ".join(small[:12])
    assert not unknown, (f"{path.name}: the PNG figures of {', '.join(unknown)} do not record their text sizes: run "
                         "the notebook again (labs' setup() records them)")


def test_exercise_cells_read_on_a_phone_and_hide_their_checks_output(path):
    """Each exercise cell (the code the reader edits, or the cell that calls a check_*): its lines fit a
    phone, the prose above names what to replace, and a check's cell hides its stored output."""
    cells, name, problems = load(path)["cells"], path.name, []
    edited = exercise_cells({"cells": cells})
    for i, cell in code_cells({"cells": cells}):
        src, edits, checks = source(cell), i in edited, bool(CHECK_CALL.search(source(cell)))
        long = [line for line in src.splitlines() if len(line) > EXERCISE_LINE_MAX] if edits or checks else []
        if long:
            problems.append(f"{name} cell {i}: {len(long)} line(s) over {EXERCISE_LINE_MAX} characters in an exercise "
                            f"cell (a phone shows about 44), e.g. {long[0]!r} ({len(long[0])}): say it in the prose")
        if checks and REMOVE_OUTPUT not in tags(cell):
            problems.append(f"{name} cell {i}: calls a check but lacks the tag {REMOVE_OUTPUT!r} (the static book "
                            "would show 'Not answered yet')")
        if edits:
            above = next((source(c) for c in reversed(cells[:i]) if c["cell_type"] == "markdown"), "")
            names = {n for pair in PLACEHOLDER.findall(src) for n in pair if n} | {"None"}
            if not any(f"`{n}`" in above for n in names):
                problems.append(f"{name} cell {i}: the prose above does not say what to put where (name "
                                f"{' or '.join(f'`{n}`' for n in sorted(names))} in the cell above)")
    assert not problems, "\n".join(problems)


def test_slider_cells_are_tagged_and_describe_their_figures(path):
    """Each live_slider cell is tagged nbval-ignore-output, and a slider that draws passes `alt=`: every
    figure it stores has alt text, and the text changes with the picture."""
    nb = load(path)
    figures = slider_figures(nb)
    problems = []
    for i, cell in code_cells(nb):
        src = source(cell)
        if "live_slider(" not in src:
            continue
        if IGNORE_TAG not in tags(cell):
            problems.append(f"{path.name} cell {i}: a slider cell without the tag {IGNORE_TAG!r}")
        drawn = [figure for _, figure in figures.get(i, [])]
        if drawn and not re.search(r"\balt\s*=", src):
            problems.append(f"{path.name} cell {i}: live_slider draws a figure but is not given alt= (a function "
                            "returning one sentence about the picture at each position)")
        elif bare := [f for f in drawn if not (f[2] or "").strip()]:
            problems.append(f"{path.name} cell {i}: {len(bare)} stored figure(s) without alt text (run the notebook "
                            "again)")
        elif len({f[1] for f in drawn}) > 1 and len(alts := {f[2] for f in drawn}) == 1:
            problems.append(f"{path.name} cell {i}: every position's figure has the same alt text {alts.pop()!r}: "
                            "say what the picture shows at that position")
    assert not problems, "\n".join(problems)


# ---- each rule above fails on its fault, seeded in a copy of lesson 1 --------------------------------

def seed(old: str, new: str, count: int = 1):
    """A fault: the regular expression `old` replaced by the text `new` in lesson 1's JSON (count 0: all)."""
    return lambda text: re.sub(old, lambda _: new, text, count=count)


def png(smallest_pt: str | None) -> str:
    """A stored PNG that records its smallest text as setup() does (None: records nothing)."""
    info = PngInfo()
    if smallest_pt:
        info.add_text(TEXT_KEY, smallest_pt)
    buf = io.BytesIO()
    Image.new("L", (4, 4)).save(buf, "PNG", pnginfo=info)
    return base64.b64encode(buf.getvalue()).decode()


ANSWER = "answer = None  # replace with a shape"  # lesson 1's first exercise
PNG = r'(?<="image/png": ")[^"]+'
ALT = r'alt=\\"[^"\\]*\\"'  # a stored slider figure's alt text
SEEDS = {  # a rule: its faults, and what each failure says (None: a near miss the rule lets pass)
    test_nothing_from_writing_the_book_is_on_the_page: [
        (seed("# Setup:", "# NBVAL_IGNORE_OUTPUT"), "NBVAL_"),
        (seed("# Setup:", "f = 0  # noqa: E731"), "# noqa"),
        (seed("# Setup:", "f = 0  # todo: a lambda"), "todo"),
        (seed("The promise:", "As the source lesson says"), "source lesson"),
        (seed("Not answered yet", "see issue 23"), "issue 23"),
        (seed("The promise:", "The lesson's source code, seed 4 and an issue of scale:"), None)],
    test_no_stored_output_prints_a_digest_of_float_data: [
        (seed("Not answered yet", "corpus_embeddings.npy f33c4f59d8b6"), ".npy f33c4f59d8b6"),
        (seed("Not answered yet", "corpus_ids.json 46d05ae84c4b"), None)],
    test_figure_text_is_at_least_the_floor_at_100_dpi: [
        (seed("# Setup:", "ax.legend(fontsize=9); ax.tick_params(labelsize=8)  #"), r"\['fontsize=9', 'labelsize=8'\]"),
        (seed("# Setup:", "plt.rcParams.update({'legend.fontsize': 'small', 'font.size': 7})  #"),
         "'font.size': 7.*'small'")],
    test_every_stored_figure_draws_its_text_at_the_floor_or_more: [
        (seed(PNG, png("7.00")), "cell 13: 7.0 pt"),
        (seed(PNG, png(None)), "cell 13 do not record")],
    test_exercise_cells_read_on_a_phone_and_hide_their_checks_output: [
        (seed(ANSWER, "answer = None  # replace None with a temperature, 0.5"), r"1 line\(s\) over 40 characters"),
        (seed('"remove-output"', '"hide-output"'), "lacks the tag 'remove-output'"),
        (seed(ANSWER, r"def pool(grid):\n    # your code"), r"does not say what to put where \(name `None` or `pool`")],
    test_slider_cells_are_tagged_and_describe_their_figures: [
        (seed(r'"nbval-ignore-output",\s*', ""), "without the tag"),
        (seed("alt=pooling_alt", "pooling_alt"), "not given alt="),
        (seed(ALT, r'alt=\"\"'), r"1 stored figure\(s\) without alt text"),
        (seed(ALT, r'alt=\"A line.\"', 0), "the same alt text 'A line.'")],
    test_slider_cells_have_saved_state: [(seed("widget-state", "state"), "without saved widget state")],
}


@pytest.mark.parametrize("rule, fault, says", [pytest.param(rule, *row, id=f"{rule.__name__[5:]}-{n}")
                                               for rule, rows in SEEDS.items() for n, row in enumerate(rows)])
def test_each_rule_fails_on_its_fault(rule, fault, says, tmp_path):
    text, copy = NOTEBOOKS[0].read_text(), tmp_path / NOTEBOOKS[0].name
    copy.write_text(fault(text))
    assert copy.read_text() != text, "the seed found nothing to break"
    if says is None:
        rule(copy)
    else:
        with pytest.raises(AssertionError, match=says):
            rule(copy)
