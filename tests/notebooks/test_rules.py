"""Rules every lesson notebook keeps, checked on the committed files (nbval checks the outputs)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
IGNORE_TAG = "nbval-ignore-output"  # widgets and timings only; a tag, so no marker shows on the page
MAX_CELLS, MAX_WORDS = 45, 4000  # a lesson is read in one sitting, about 40 minutes
# What a reader must never see: markers for the tools, and notes from writing the book.
AUTHOR_NOTES = re.compile(r"NBVAL_|# *noqa|source lesson|seed 00\d|earlier version of this page|chapter this lab "
                          r"follows|helpers' jobs|\bTODO\b|\bFIXME\b|\bissue \d+\b", re.I)
DECIMAL = re.compile(r"(?<![\w.])-?\d+\.\d+(?:e-?\d+)?(?![\w.])")


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def source(cell: dict) -> str:
    return "".join(cell["source"])


def text_outputs(cell: dict) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            parts.append("".join(out["text"]))
        elif "application/vnd.jupyter.widget-view+json" in out.get("data", {}):
            continue  # the repr of a widget lists its settings, not results
        elif "text/plain" in out.get("data", {}):
            parts.append("".join(out["data"]["text/plain"]))
    return "\n".join(parts)


def widget_texts(nb: dict) -> str:
    """Text that saved Output widgets show in the HTML book."""
    state = nb.get("metadata", {}).get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    parts = []
    for model in state.get("state", {}).values():
        for out in model.get("state", {}).get("outputs", []) or []:
            if out.get("output_type") == "stream":
                parts.append("".join(out.get("text", "")))
            elif "text/plain" in out.get("data", {}):
                parts.append("".join(out["data"]["text/plain"]))
    return "\n".join(parts)


def prose(nb: dict) -> str:
    return "\n".join(source(c) for c in nb["cells"] if c["cell_type"] == "markdown")


ids = [p.name for p in NOTEBOOKS]


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found"


def test_toc_lists_every_notebook_in_course_order():
    toc = (ROOT / "_toc.yml").read_text()
    listed = re.findall(r"file:\s*notebooks/(\S+)", toc)
    assert sorted(listed) == listed, "_toc.yml must list the notebooks in course order"
    assert {f"{n}.ipynb" for n in listed} == {p.name for p in NOTEBOOKS}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_every_code_cell_ran_cleanly(path):
    nb = load(path)
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code" or not source(cell).strip():
            continue
        assert cell.get("execution_count") is not None, f"{path.name} cell {i} has no stored output: run make outputs"
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", f"{path.name} cell {i} stored an error"
            assert out.get("name") != "stderr", f"{path.name} cell {i} wrote to stderr: {''.join(out['text'])[:200]}"
        assert "NBVAL_SKIP" not in source(cell), f"{path.name} cell {i}: a skipped cell is an unchecked claim"
        assert "nbval-skip" not in cell.get("metadata", {}).get("tags", [])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_ignored_cells_are_widgets_or_timings_and_print_no_quoted_number(path):
    nb = load(path)
    quoted = set(DECIMAL.findall(prose(nb)))
    widget_text = widget_texts(nb)
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code" or IGNORE_TAG not in cell.get("metadata", {}).get("tags", []):
            continue
        src = source(cell)
        is_widget = "widgets." in src or "interact" in src or "live_slider(" in src
        is_timing = bool(re.search(r"perf_counter|time\.time|timeit|max_memory|peak|memory", src))
        assert is_widget or is_timing, f"{path.name} cell {i}: {IGNORE_TAG} on a cell that is neither a widget nor a timing"
        shown = text_outputs(cell) + ("\n" + widget_text if is_widget else "")
        clash = quoted & set(DECIMAL.findall(shown))
        assert not clash, f"{path.name} cell {i} is unchecked but prints numbers the prose quotes: {sorted(clash)}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_lesson_shape(path):
    nb = load(path)
    text = prose(nb)
    cells = nb["cells"]
    assert cells[0]["cell_type"] == "markdown" and source(cells[0]).startswith("# "), "starts with a title"
    for needed in ("Learning goals", "What to know first", "## In 20 seconds", "## Self-test", "<details>"):
        assert needed in text, f"{path.name} lacks {needed!r}"
    assert "Reading it" in text
    first_code = next(c for c in cells if c["cell_type"] == "code")
    assert "google.colab" in source(first_code), "the first code cell is the Colab install cell"
    assert first_code.get("metadata", {}).get("tags", []) == ["remove-cell"], "the install cell is not on the page"
    setup = next(c for c in cells if c["cell_type"] == "code" and c is not first_code)
    assert "setup(" in source(setup) and "from labs.classroom.setup import setup" in source(setup), (
        f"{path.name}: the second code cell imports and calls labs.classroom.setup.setup()")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_a_lesson_is_read_in_one_sitting(path):
    nb = load(path)
    words = len(re.findall(r"\S+", prose(nb)))
    assert len(nb["cells"]) <= MAX_CELLS, f"{path.name}: {len(nb['cells'])} cells (at most {MAX_CELLS})"
    assert words <= MAX_WORDS, f"{path.name}: {words} words of prose (at most {MAX_WORDS})"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_nothing_from_writing_the_book_is_on_the_page(path):
    for i, cell in enumerate(load(path)["cells"]):
        hit = AUTHOR_NOTES.search(source(cell)) or (AUTHOR_NOTES.search(text_outputs(cell))
                                                    if cell["cell_type"] == "code" else None)
        assert not hit, f"{path.name} cell {i} shows {hit.group(0)!r}: readers never see how the book was made"


def test_the_author_note_rule_can_fail():
    for text in ("# NBVAL_IGNORE_OUTPUT", "f = lambda: 0  # noqa: E731", "as the source lesson says", "issue 23"):
        assert AUTHOR_NOTES.search(text), text
    assert not AUTHOR_NOTES.search("the lesson's source code, seed 4 and an issue of scale")


def exercise_cells(nb: dict) -> list[int]:
    """Cells where the reader answers: code that sets ``answer = None`` (or a function left to write)."""
    return [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
            and re.search(r"^(answer|\w+_answer) = None\b|^def \w+\(.*\):\n\s+# your code", source(c), re.M)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_every_exercise_has_a_worked_solution_after_the_attempt(path):
    """QuantEcon's pattern: the attempt cell, then within two cells a collapsed worked solution."""
    nb = load(path)
    for i in exercise_cells(nb):
        after = [source(c) for c in nb["cells"][i + 1:i + 3] if c["cell_type"] == "markdown"]
        assert any(re.search(r":class: dropdown|<details>", text) and "olution" in text for text in after), (
            f"{path.name} cell {i}: an exercise without a collapsible worked solution right after it")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_every_figure_has_alt_text_and_a_reading(path):
    cells = load(path)["cells"]
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        if not any("image/png" in out.get("data", {}) for out in cell.get("outputs", [])):
            continue
        alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt", "")
        assert len(alt) > 20, f"{path.name} cell {i}: a figure without alt text"
        following = next((c for c in cells[i + 1 :] if c["cell_type"] == "markdown"), None)
        assert following is not None and "Reading it" in source(following), (
            f"{path.name} cell {i}: the figure is not followed by a 'Reading it' paragraph"
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_slider_cells_have_saved_state(path):
    nb = load(path)
    has_widget = any(c["cell_type"] == "code" and ("widgets." in source(c) or "live_slider(" in source(c))
                     for c in nb["cells"])
    if has_widget:
        state = nb.get("metadata", {}).get("widgets", {}).get("application/vnd.jupyter.widget-state+json")
        assert state and state.get("state"), f"{path.name}: sliders without saved widget state (run make outputs)"


FLOAT_DIGEST = re.compile(r"\.(npy|npz|safetensors|pt|pth|bin)\b[^\n]{0,40}?\b[0-9a-f]{8,}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_no_stored_output_prints_a_digest_of_float_data(path):
    """Float bits differ from CPU to CPU: a hash of an array or of weights holds on no other machine."""
    for i, cell in enumerate(load(path)["cells"]):
        if cell["cell_type"] == "code":
            hit = FLOAT_DIGEST.search(text_outputs(cell))
            assert not hit, f"{path.name} cell {i} prints a digest of float data: {hit.group(0)!r} (hash text files)"


def test_the_float_digest_rule_can_fail():
    assert FLOAT_DIGEST.search("for example corpus_embeddings.npy f33c4f59d8b6...")
    assert not FLOAT_DIGEST.search("for example corpus_ids.json 46d05ae84c4b...")


def test_nbval_sanitizer_covers_addresses():
    cfg = (ROOT / "tests" / "notebooks" / "nbval_sanitize.cfg").read_text()
    assert "0x[0-9a-fA-F]+" in cfg


def test_book_config_never_executes():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["execute"]["execute_notebooks"] == "off"


# Figure text (issue 15): no text below the floor the browser check measures on screen.
FIGURE_MIN_PT = 10  # points; tests/book/ turns it into on-screen pixels at 1280 and 390 px
FONT_SIZE = re.compile(r"(?<!\w)(?:fontsize|labelsize|size|[\"'][\w.]*size[\"'])\s*[=:]\s*(\d+(?:\.\d+)?)")
NAMED_SMALL = re.compile(r"[\"'](?:xx-small|x-small|small|smaller)[\"']")


def small_fonts(code: str, floor: float) -> list[str]:
    """Font sizes in plotting code below `floor` points, and the named sizes smaller than the default."""
    found = [m.group(0) for m in FONT_SIZE.finditer(code) if float(m.group(1)) < floor]
    return found + NAMED_SMALL.findall(code)


def test_the_small_font_rule_can_fail():
    assert small_fonts('ax.legend(fontsize=9); ax.tick_params(labelsize=8)', 10) == ["fontsize=9", "labelsize=8"]
    assert small_fonts('plt.rcParams.update({"legend.fontsize": "small", "font.size": 7})', 10) == [
        '"font.size": 7', '"small"']
    assert small_fonts("ax.text(0, 0, 'a', size=10); batch_size=4; capsize=3", 10) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_figure_text_is_at_least_the_floor_at_100_dpi(path):
    """The browser check turns FIGURE_MIN_PT into on-screen pixels, so it must hold for every text."""
    code = [(i, source(c)) for i, c in enumerate(load(path)["cells"]) if c["cell_type"] == "code"]
    for i, text in code:
        small = small_fonts(text, FIGURE_MIN_PT)
        assert not small, f"{path.name} cell {i}: figure text below {FIGURE_MIN_PT} pt: {small}"
