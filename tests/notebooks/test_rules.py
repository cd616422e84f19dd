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
    cfg = (ROOT / "tools" / "outputs" / "nbval_sanitize.cfg").read_text()
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


# ---- exercises and sliders for every reader (issue 32; COMMON interfaces 3 and 4) -------------------
# A phone shows about 44 characters of 12 px monospace in the 322 px code box at 390 px: an exercise
# cell's lines stay within EXERCISE_LINE_MAX, and what to put where is said in the prose above it.
EXERCISE_LINE_MAX = 40
CHECK_CALL = re.compile(r"\bcheck_\w+\(")
REMOVE_OUTPUT = "remove-output"
PLACEHOLDER = re.compile(r"^(\w+) = None\b|^def (\w+)\(", re.M)


def exercise_problems(cells: list[dict], name: str) -> list[str]:
    """Each exercise cell (the code the reader edits, or the cell that calls a check_*): its lines fit a
    phone, the prose above names what to replace, and a check's cell hides its stored output."""
    problems = []
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        src = source(cell)
        edits = i in exercise_cells({"cells": cells})
        checks = bool(CHECK_CALL.search(src))
        if not (edits or checks):
            continue
        long = [line for line in src.splitlines() if len(line) > EXERCISE_LINE_MAX]
        if long:
            problems.append(f"{name} cell {i}: {len(long)} line(s) over {EXERCISE_LINE_MAX} characters in an exercise "
                            f"cell (a phone shows about 44), e.g. {long[0]!r} ({len(long[0])}): say it in the prose")
        if checks and REMOVE_OUTPUT not in cell.get("metadata", {}).get("tags", []):
            problems.append(f"{name} cell {i}: calls a check but lacks the tag {REMOVE_OUTPUT!r} (the static book "
                            "would show 'Not answered yet')")
        if edits:
            above = next((source(c) for c in reversed(cells[:i]) if c["cell_type"] == "markdown"), "")
            names = {n for pair in PLACEHOLDER.findall(src) for n in pair if n} | {"None"}
            if not any(f"`{n}`" in above for n in names):
                problems.append(f"{name} cell {i}: the prose above does not say what to put where (name "
                                f"{' or '.join(f'`{n}`' for n in sorted(names))} in the cell above)")
    return problems


def test_the_exercise_rules_can_fail():
    def cell(kind, text, tags=()):
        return {"cell_type": kind, "source": [text], "metadata": {"tags": list(tags)}}

    good = [cell("markdown", "What is the loss? Put it in place of `None` below."),
            cell("code", "answer = None  # the loss\nok = check_loss(answer)", [REMOVE_OUTPUT])]
    assert exercise_problems(good, "nb") == []
    bad = [cell("markdown", "What is the loss?"),
           cell("code", "answer = None  # replace None with a temperature, for example 0.5\nok = check_loss(answer)")]
    found = exercise_problems(bad, "nb")
    assert len(found) == 3
    assert "1 line(s) over 40 characters" in found[0] and "lacks the tag 'remove-output'" in found[1]
    assert "does not say what to put where" in found[2]
    func = [cell("markdown", "Write `my_pull`: move a and b towards each other."),
            cell("code", "def my_pull(a, b, rate):\n    # your code\n    return None\n\n\nok = check_pull(my_pull)",
                 [REMOVE_OUTPUT])]
    assert exercise_problems(func, "nb") == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_exercise_cells_read_on_a_phone_and_hide_their_checks_output(path):
    problems = exercise_problems(load(path)["cells"], path.name)
    assert not problems, "\n".join(problems)


def _stored_figure(out: dict):
    from tools.book.widget_state import stored_figure

    return stored_figure(out)


def slider_problems(nb: dict, name: str) -> list[str]:
    """Each live_slider cell is tagged nbval-ignore-output, and a slider that draws passes `alt=`:
    every figure it stores has alt text, and the text changes with the picture."""
    from tools.book.widget_state import live_sliders

    state = nb.get("metadata", {}).get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    specs = {s.model_id: s for s in live_sliders(state)}
    problems = []
    for i, cell in enumerate(nb["cells"]):
        src = source(cell)
        if cell["cell_type"] != "code" or "live_slider(" not in src:
            continue
        if IGNORE_TAG not in cell.get("metadata", {}).get("tags", []):
            problems.append(f"{name} cell {i}: a slider cell without the tag {IGNORE_TAG!r}")
        views = [out["data"]["application/vnd.jupyter.widget-view+json"].get("model_id")
                 for out in cell.get("outputs", []) if "application/vnd.jupyter.widget-view+json" in out.get("data", {})]
        for spec in (specs[v] for v in views if v in specs):
            shown = [(_stored_figure(o), pos) for pos, outs in spec.outputs.items() for o in outs
                     if o["output_type"] == "display_data"]
            figures = [(f, pos) for f, pos in shown if f]
            if not figures:
                continue
            if not re.search(r"\balt\s*=", src):
                problems.append(f"{name} cell {i}: live_slider draws a figure but is not given alt= (a function "
                                "returning one sentence about the picture at each position)")
                continue
            bare = [pos for f, pos in figures if not (f[2] or "").strip()]
            if bare:
                problems.append(f"{name} cell {i}: {len(bare)} stored figure(s) without alt text (run the notebook "
                                "again)")
            alts = {f[2] for f, _ in figures if (f[2] or "").strip()}
            if not bare and len({f[1] for f, _ in figures}) > 1 and len(alts) == 1:
                problems.append(f"{name} cell {i}: every position's figure has the same alt text {alts.pop()!r}: say "
                                "what the picture shows at that position")
    return problems


def test_the_slider_rules_can_fail():
    from labs.classroom.sliders import with_alt

    svg = {"image/svg+xml": "<svg><text style='font-size: 11px'>a</text></svg>"}
    other = {"image/svg+xml": "<svg><text style='font-size: 11px'>b</text></svg>"}

    def notebook(src, tags, figures):
        kids = {f"o{k}": {"model_name": "OutputModel", "state": {"outputs": outs}} for k, outs in enumerate(figures)}
        state = {"box": {"model_name": "VBoxModel", "state": {"_dom_classes": ["labs-live-slider"],
                                                               "children": ["IPY_MODEL_s", "IPY_MODEL_st"]}},
                 "s": {"model_name": "SelectionSliderModel", "state": {"_options_labels": ["1", "2"], "index": 0}},
                 "st": {"model_name": "StackModel", "state": {"children": [f"IPY_MODEL_{k}" for k in kids]}}, **kids}
        view = {"output_type": "display_data", "data": {"application/vnd.jupyter.widget-view+json": {
            "model_id": "box"}}}
        return {"cells": [{"cell_type": "code", "source": [src], "metadata": {"tags": tags}, "outputs": [view]}],
                "metadata": {"widgets": {"application/vnd.jupyter.widget-state+json": {"state": state}}}}

    def fig(data, alt=None):
        out = {"output_type": "display_data", "data": data, "metadata": {}}
        return with_alt([out], alt)[0] if alt else out

    good = notebook("live_slider(show, [1, 2], alt=describe)", [IGNORE_TAG],
                    [[fig(svg, "At 1 the line is flat.")], [fig(other, "At 2 the line rises.")]])
    assert slider_problems(good, "nb") == []
    untagged = notebook("live_slider(show, [1, 2])", [], [[fig(svg)], [fig(other)]])
    found = slider_problems(untagged, "nb")
    assert len(found) == 2 and "without the tag" in found[0] and "is not given alt=" in found[1]
    same = notebook("live_slider(show, [1, 2], alt=describe)", [IGNORE_TAG],
                    [[fig(svg, "A line.")], [fig(other, "A line.")]])
    assert "the same alt text 'A line.'" in slider_problems(same, "nb")[0]
    bare = notebook("live_slider(show, [1, 2], alt=describe)", [IGNORE_TAG], [[fig(svg)], [fig(other, "b")]])
    assert "1 stored figure(s) without alt text" in slider_problems(bare, "nb")[0]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_slider_cells_are_tagged_and_describe_their_figures(path):
    problems = slider_problems(load(path), path.name)
    assert not problems, "\n".join(problems)


def stored_figure_text(nb: dict) -> list[tuple[int | str, float | None]]:
    """The smallest text of every figure a notebook stores, in points: its cells' PNGs (as setup()
    records them) and its sliders' figures (SVG text by text, PNG as recorded). None: not recorded."""
    import base64

    from tools.book.browser import smallest_text_pt
    from tools.book.widget_state import live_sliders

    found: list[tuple[int | str, float | None]] = []
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            if "image/png" in out.get("data", {}):
                found.append((i, smallest_text_pt(base64.b64decode("".join(out["data"]["image/png"])))))
    state = nb.get("metadata", {}).get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    for n, spec in enumerate(live_sliders(state), 1):
        for (j, k), outs in sorted(spec.outputs.items()):
            for out in outs:
                figure = _stored_figure(out) if out["output_type"] == "display_data" else None
                if figure:
                    found.append((f"slider {n} position {spec.labels[k]}", smallest_text_pt(figure[1])))
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_every_stored_figure_draws_its_text_at_the_floor_or_more(path):
    """Measured in the stored figures themselves, so legends, annotations and log-axis exponents
    (drawn at 0.7 of the tick labels) count too; code alone cannot show those."""
    small = [(where, pt) for where, pt in stored_figure_text(load(path)) if pt is not None and pt < FIGURE_MIN_PT - 1e-6]
    unknown = sorted({where for where, pt in stored_figure_text(load(path)) if pt is None and isinstance(where, int)})
    assert not small, f"{path.name}: figure text below {FIGURE_MIN_PT} pt: " + ", ".join(
        f"{'cell ' if isinstance(w, int) else ''}{w}: {pt:.1f} pt" for w, pt in small[:12])
    assert not unknown, (f"{path.name}: the PNG figures of cells {unknown} do not record their text sizes: run the "
                         "notebook again (labs' setup() records them)")


def test_the_stored_figure_text_rule_can_fail():
    import base64
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from labs.classroom.figures import png_metadata

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.semilogx([0.01, 1], [0, 1])
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata=png_metadata(fig))
    plt.close(fig)
    png = base64.b64encode(buf.getvalue()).decode()
    nb = {"cells": [{"cell_type": "code", "source": [], "metadata": {},
                     "outputs": [{"output_type": "display_data", "data": {"image/png": png}}]}], "metadata": {}}
    ((where, pt),) = stored_figure_text(nb)
    assert where == 0 and pt < FIGURE_MIN_PT  # the exponents of the log axis, at 0.7 of the tick labels
