"""Rules every lesson notebook keeps, checked on the committed files (nbval checks the outputs)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
IGNORE = "NBVAL_IGNORE_OUTPUT"
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
        if cell["cell_type"] != "code" or IGNORE not in source(cell):
            continue
        src = source(cell)
        is_widget = "widgets." in src or "interact" in src or "live_slider(" in src
        is_timing = bool(re.search(r"perf_counter|time\.time|timeit|max_memory|peak|memory", src))
        assert is_widget or is_timing, f"{path.name} cell {i}: {IGNORE} on a cell that is neither a widget nor a timing"
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
    assert "hide-output" in first_code.get("metadata", {}).get("tags", [])


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
FIGURE_MIN_PT = int(re.search(r"^FIGURE_MIN_PT = (\d+)", (ROOT / ".ci" / "browser_check.py").read_text(),
                              re.M).group(1))
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
    setup = next((text for _, text in code if "plt.rcParams.update" in text), "")
    assert re.search(r'"font\.size": 1[1-9]', setup) and '"figure.dpi": 100' in setup, (
        f"{path.name}: the setup cell sets font.size (at least 11) and figure.dpi 100")
    for i, text in code:
        small = small_fonts(text, FIGURE_MIN_PT)
        assert not small, f"{path.name} cell {i}: figure text below {FIGURE_MIN_PT} pt: {small}"
