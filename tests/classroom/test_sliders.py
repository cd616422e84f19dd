"""labs.classroom.sliders.live_slider: every stored position holds exactly what fn prints (and draws) for it.

Three kernels, three behaviours: ipywidgets 8 (stored positions linked in the browser, the unit
tests below, run outside a kernel with a widget frontend assumed), ipywidgets 7 as Colab has it
(the kernel redraws one Output: a real kernel with `Stack` taken away, every position moved through
the kernel by tools/platforms/colab_frontend.py; `make colab-twin` does the same with the real ipywidgets
7.7.1), and no widget frontend at all (a script: one line and the start position).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import html as html_lib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import ipywidgets as widgets
import matplotlib
import nbformat
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from tools.book import browser as browser_rules
from tools.book.widget_state import live_sliders, notebook_live_sliders, stored_figure
from labs.classroom import sliders
from labs.classroom.sliders import capture, LIVE_ONLY, live_slider, MAX_STORED, NEEDS_A_NOTEBOOK

ROOT = Path(__file__).resolve().parents[2]
REACHES_A_FRONTEND = sliders._reaches_a_frontend


@pytest.fixture(autouse=True)
def widget_frontend(monkeypatch):
    """These tests run outside a kernel, where widgets reach no frontend: pretend one is there
    (the tests of the no-frontend case put the real check back)."""
    monkeypatch.setattr(sliders, "_reaches_a_frontend", lambda widget: True)


def printed(fn, *args) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn(*args)
    return buf.getvalue()


def share(tau: float) -> None:
    import math

    p = math.exp(0.75 / tau) / (math.exp(0.75 / tau) + 3 * math.exp(0.6 / tau))
    print(f"tau = {tau:.3f}, share {p:.3f}")


def share_gap(tau: float, gap: float) -> None:
    print(f"tau = {tau:.3f}, gap {gap:.2f}")
    print(f"sum {tau + gap:.3f}")


def spec_of(box: widgets.VBox):
    """The LiveSlider parsed back out of the kernel's widget state, as the notebook stores it."""
    specs = {s.model_id: s for s in live_sliders(widgets.Widget.get_manager_state())}
    return specs[box.model_id]


TAUS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]


def test_each_stored_position_is_what_fn_prints():
    box = live_slider(share, TAUS, description="tau", value=0.1, fmt="{:.2f}")
    spec = spec_of(box)
    assert spec.labels == ["0.01", "0.02", "0.05", "0.10", "0.20", "0.50", "1.00"]
    assert spec.start == 3 and spec.choice_labels == []
    for i, tau in enumerate(TAUS):
        assert spec.text(i) == printed(share, tau)
        assert spec.images(i) == 0 and not spec.live_only(i)
    assert len({spec.text(i) for i in range(len(TAUS))}) == len(TAUS)  # a wrong index would show


def test_grid_with_a_dropdown_stores_every_pair():
    gaps = [0.0, 0.15, 0.5]
    box = live_slider(share_gap, TAUS, description="tau", choices=gaps, choice_description="gap",
                      choice_value=0.5, choice_fmt="{:.2f}")
    spec = spec_of(box)
    assert spec.choice_labels == ["0.00", "0.15", "0.50"] and spec.choice_start == 2
    assert spec.choice_kind == "Dropdown"
    for j, gap in enumerate(gaps):
        for i, tau in enumerate(TAUS):
            assert spec.text(i, j) == printed(share_gap, tau, gap)


def test_toggle_buttons_and_labelled_choices():
    box = live_slider(lambda v, on: print(v, on), [1, 2], choices=[("mask on", True), ("mask off", False)],
                      toggle=True)
    spec = spec_of(box)
    assert spec.choice_kind == "ToggleButtons" and spec.choice_labels == ["mask on", "mask off"]
    assert spec.text(1, 1) == "2 False\n"


def test_slider_and_stacks_are_linked_in_the_browser():
    box = live_slider(share_gap, TAUS, choices=[0.0, 0.5])
    slider, choice, outer = box.children
    models = widgets.Widget.get_manager_state()["state"].values()
    links = {(m["state"]["source"][0], m["state"]["source"][1], m["state"]["target"][0], m["state"]["target"][1])
             for m in models if m["model_name"] == "DirectionalLinkModel"}
    for inner in outer.children:
        assert (f"IPY_MODEL_{slider.model_id}", "index", f"IPY_MODEL_{inner.model_id}", "selected_index") in links
    assert (f"IPY_MODEL_{choice.model_id}", "index", f"IPY_MODEL_{outer.model_id}", "selected_index") in links


def draw(steps: int) -> None:
    print(f"{steps} steps")
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot(range(steps + 2))
    ax.set_title(f"after {steps} steps")
    plt.show()
    print("done")


def describe_draw(steps: int) -> str:
    return f"A line rising over {steps + 2} points, after {steps} steps."


@pytest.mark.parametrize("image", ["svg", "png"])
def test_figures_are_stored_in_order_as_compact_images_with_their_alt_text(image):
    box = live_slider(draw, [0, 5, 10], description="steps", image=image, alt=describe_draw)
    spec = spec_of(box)
    for i, steps in enumerate([0, 5, 10]):
        outs = spec.outputs[(0, i)]
        assert [o["output_type"] for o in outs] == ["stream", "display_data", "stream"]
        assert outs[0]["text"] == f"{steps} steps\n" and outs[2]["text"] == "done\n"
        data = outs[1]["data"]
        assert set(data) == {"text/html", "text/plain"}  # one <img alt>, and the sentence as its text form
        assert data["text/plain"] == describe_draw(steps)
        kind, picture, alt = stored_figure(outs[1])
        assert kind == image and alt == describe_draw(steps)
        assert len(data["text/html"]) < 60_000
        if image == "svg":
            assert f"after {steps} steps" in picture.decode()  # the SVG's text stays text
        else:
            assert picture.startswith(b"\x89PNG")
    figures = [stored_figure(spec.outputs[(0, i)][1])[1] for i in range(3)]
    assert len(set(figures)) == 3
    assert plt.get_fignums() == []  # every figure closed, none left for the inline backend


def test_the_stored_figure_is_the_one_drawn_byte_for_byte():
    """The <img>'s data: URL decodes to exactly the SVG (or PNG) matplotlib wrote."""
    for image in ("svg", "png"):
        raw = capture(draw, (3,), image)[1]["data"]
        shown = sliders.with_alt([{"output_type": "display_data", "data": raw, "metadata": {}}], "A line.")[0]
        kind, picture, alt = stored_figure(shown)
        want = raw["image/svg+xml"].encode() if image == "svg" else base64.b64decode(raw["image/png"])
        assert picture == want and alt == "A line."


def test_alt_text_is_escaped_and_one_line():
    shown = sliders.with_alt(capture(draw, (1,), "svg"), 'The "cold" line <below> & the\nwarm one.')
    kind, _, alt = stored_figure(shown[1])
    assert alt == 'The "cold" line <below> & the warm one.'


def test_alt_is_checked_and_named():
    with pytest.raises(TypeError, match="alt must be a function"):
        live_slider(draw, [1], alt="a line")
    with pytest.raises(ValueError, match=r"alt must return a sentence .* at value=1"):
        live_slider(draw, [1], alt=lambda steps: "")
    with pytest.raises(ValueError, match="alt gave 2 sentences for 1 figures"):
        live_slider(draw, [1], alt=lambda steps: ["one", "two"])

    def broken(steps):
        raise KeyError("no such run")

    with pytest.raises(RuntimeError, match=r"alt failed at value=1: 'no such run'"):
        live_slider(draw, [1], alt=broken)


def test_a_figure_without_alt_is_refused_and_named():
    with pytest.raises(ValueError, match="draw draws a figure, so alt= is required"):
        live_slider(draw, [0, 5], description="steps")
    assert spec_of(live_slider(share, TAUS, description="tau"))  # text only: no alt needed


@pytest.fixture()
def alt_optional(monkeypatch):
    """REQUIRE_ALT off: a figure without alt gets a description from its title (a notebook mid-edit)."""
    monkeypatch.setattr(sliders, "REQUIRE_ALT", False)


def test_with_alt_optional_a_figure_is_described_from_itself(alt_optional):
    spec = spec_of(live_slider(draw, [0, 5], description="steps"))
    assert stored_figure(spec.outputs[(0, 1)][1])[2] == "At steps = 5: a panel titled 'after 5 steps'."


def test_a_png_figure_records_its_smallest_text():
    def small(steps):
        fig, ax = plt.subplots(figsize=(3, 2))
        ax.plot([1, 2], label="line")
        ax.legend(fontsize=7)
        plt.show()

    kind, picture, _ = stored_figure(capture_with_alt(small, (1,), "png")[0])
    assert kind == "png" and browser_rules.png_smallest_text_pt(picture) == 7.0


def capture_with_alt(fn, args, image):
    return sliders.with_alt(capture(fn, args, image), "A figure.")


def test_svg_keeps_text_as_text():
    outs = capture(draw, (3,), "svg")
    assert "after 3 steps" in outs[1]["data"]["image/svg+xml"]


def test_live_only_positions_say_so_and_compute_when_visited():
    calls = []

    def fn(v):
        calls.append(v)
        print(f"value {v}")

    box = live_slider(fn, [1, 2, 3, 4], description="steps", stored=[1, 3])
    assert calls == [1, 3]
    spec = spec_of(box)
    assert spec.live_only(1) and spec.live_only(3) and not spec.live_only(0)
    assert spec.text(1).startswith(f"{LIVE_ONLY} for steps = 2")
    slider, stack = box.children
    assert not slider.continuous_update  # live-only positions are computed on release, not on every step
    slider.index = 1  # what a reader's move does in a live kernel
    assert stack.children[1].outputs[0]["text"] == "value 2\n"
    assert calls == [1, 3, 2]
    slider.index = 0  # stored positions are not recomputed
    assert calls == [1, 3, 2]


def test_stored_predicate():
    box = live_slider(lambda v: print(v), [1, 2, 3, 4], stored=lambda v: v % 2 == 0)
    spec = spec_of(box)
    assert [spec.live_only(i) for i in range(4)] == [True, False, True, False]


def test_bad_input_gets_a_clear_error():
    with pytest.raises(ValueError, match="must not be empty"):
        live_slider(print, [])
    with pytest.raises(ValueError, match="value=7 is not one of the positions"):
        live_slider(print, [1, 2], value=7)
    with pytest.raises(ValueError, match="share a label"):
        live_slider(print, [0.101, 0.102], fmt="{:.2f}")
    with pytest.raises(ValueError, match=f"over {MAX_STORED}"):
        live_slider(print, list(range(100)), choices=[1, 2])
    with pytest.raises(ValueError, match="use 'svg' or 'png'"):
        live_slider(print, [1], image="jpg")
    with pytest.raises(TypeError, match="fn must be a function"):
        live_slider("print", [1])

    def broken(v):
        raise ZeroDivisionError("boom")

    with pytest.raises(RuntimeError, match=r"broken failed at tau=0\.5: boom"):
        live_slider(broken, [0.5], description="tau")


def load_executor():
    from tools.notebooks import execute

    return execute


@pytest.mark.e2e  # a fresh kernel or process
def test_make_outputs_stores_every_position_in_the_notebook(tmp_path):
    """`make outputs` (tools/notebooks/execute.py) keeps the widget state the book embeds."""
    cell = (
        "import matplotlib.pyplot as plt\n"
        "from labs.classroom.sliders import live_slider\n"
        "def show(t, g):\n"
        "    print(f't={t:.2f} g={g}')\n"
        "def fig(n):\n"
        "    plt.plot(range(n + 2)); plt.title(f'n={n}'); plt.show()\n"
        "live_slider(show, [0.1, 0.2, 0.3], fmt='{:.1f}', choices=['a', 'b'])\n"
    )
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(cell),
        nbformat.v4.new_code_cell("live_slider(fig, [1, 2, 3], stored=[1, 3], alt=lambda n: f'A line of {n + 2} points.')"),
    ])
    path = tmp_path / "demo.ipynb"
    nbformat.write(nb, path)
    load_executor().execute(path, timeout=120)
    stored = json.loads(path.read_text())
    specs = notebook_live_sliders(stored)
    assert len(specs) == 2
    text, figs = specs
    for j, g in enumerate(["a", "b"]):
        for i, t in enumerate([0.1, 0.2, 0.3]):
            assert text.text(i, j) == f"t={t:.2f} g={g}\n"
    assert [figs.images(i) for i in range(3)] == [1, 0, 1]
    assert figs.live_only(1)
    views = [o for c in stored["cells"] for o in c["outputs"]
             if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert {v["data"]["application/vnd.jupyter.widget-view+json"]["model_id"] for v in views} == {
        s.model_id for s in specs}
    # The widgets print nothing into the cell itself: nbval sees only the widget views.
    assert not [o for c in stored["cells"] for o in c["outputs"] if o["output_type"] == "stream"]


# ---- no widget frontend: a script, a terminal -------------------------------------------------

def test_outside_a_kernel_widgets_reach_no_frontend():
    """ipywidgets 8 outside a kernel: the comm is comm.DummyComm, which sends nothing."""
    out = widgets.Output()
    try:
        assert REACHES_A_FRONTEND(out) is False
    finally:
        out.close()


def test_with_no_frontend_one_line_then_the_start_position(monkeypatch, capsys):
    monkeypatch.setattr(sliders, "_reaches_a_frontend", REACHES_A_FRONTEND)
    result = live_slider(lambda steps, run: draw(steps), [0, 5, 10], description="steps", value=5,
                         choices=["a", "b"], choice_description="run", choice_value="b",
                         alt=lambda steps, run: describe_draw(steps))
    assert result is None
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"This slider {NEEDS_A_NOTEBOOK} to move (a notebook with widgets); showing steps = 5, run = b."
    # the figure, as its description: no display here
    assert printed[1:] == ["5 steps", describe_draw(5), "done"]
    assert plt.get_fignums() == []


@pytest.mark.e2e  # a fresh kernel or process
def test_a_script_prints_one_line_and_the_start_position():
    """A plain `python` process: no IPython, no kernel; nothing is left to show but text."""
    script = (
        "from labs.classroom.sliders import live_slider\n"
        "def share(tau):\n"
        "    print(f'tau = {tau:.2f}')\n"
        "print(repr(live_slider(share, [0.1, 0.2, 0.5], description='tau', value=0.2, fmt='{:.1f}')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == (f"This slider {NEEDS_A_NOTEBOOK} to move (a notebook with widgets); showing tau = 0.2.\n"
                           "tau = 0.20\nNone\n")
    assert done.stderr == ""


# ---- in a real kernel: ipywidgets 8 as the course has it, ipywidgets 7 as Colab has it --------

KERNEL_CELLS = [
    # Colab's ipywidgets 7 has no Stack: take it away (IPYWIDGETS_7), or cut the widget comms
    # (NO_COMMS: a kernel whose frontend cannot talk to widgets).
    "import os, ipywidgets\n"
    "if os.environ.get('IPYWIDGETS_7'):\n"
    "    del ipywidgets.Stack\n"
    "if os.environ.get('NO_COMMS'):\n"
    "    import comm\n"
    "    comm.create_comm = comm._create_comm\n"
    "import matplotlib\n"
    "matplotlib.use('module://matplotlib_inline.backend_inline')\n"
    "import matplotlib.pyplot as plt\n"
    "from labs.classroom.sliders import live_slider\n"
    "calls = []\n"
    "def show(steps, run):\n"
    "    calls.append((steps, run))\n"
    "    print(f'{run}: {steps} steps')\n"
    "    fig, ax = plt.subplots(figsize=(2, 1.5))\n"
    "    ax.plot(range(steps + 2))\n"
    "    ax.set_title(f'{run} after {steps}')\n"
    "    plt.show()\n",
    "live_slider(show, [0, 5, 10, 20], description='steps', value=5, choices=['a', 'b', 'c'],\n"
    "            choice_description='run', stored=[0, 5, 10], alt=lambda steps, run: f'Run {run} after {steps} steps.')\n",
]


def run_in_kernel(env: dict, walk: bool = True):
    """Run KERNEL_CELLS in a fresh kernel of this environment and walk the slider through the kernel;
    return the notebook, the client, the sliders found and how often `show` ran in the kernel."""
    import nbformat
    from nbclient import NotebookClient

    from tools.platforms import colab_frontend as frontend
    from tools.notebooks.kernel_client import slice_polls

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in KERNEL_CELLS])
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        client = slice_polls(NotebookClient(nb, kernel_name="python3", timeout=120, store_widget_state=True,
                                            resources={"metadata": {"path": str(ROOT)}}))

        async def go():
            async with client.async_setup_kernel():
                for index, cell in enumerate(nb.cells):
                    await client.async_execute_cell(cell, index)
                found = frontend.sliders_in(client, nb.cells[1])
                for s in found if walk else []:
                    await frontend.walk(client, s, timeout=120)
                return found, int(await frontend.run(client, "print(len(calls))"))

        found, calls = asyncio.run(go())
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return nb, client, found, calls


@pytest.mark.e2e  # a fresh kernel or process
def test_ipywidgets_8_in_a_kernel_keeps_the_stored_positions_and_computes_a_live_one():
    nb, client, (s,), calls = run_in_kernel({"IPYWIDGETS_7": "", "NO_COMMS": ""})
    assert s.kind == "stack" and s.labels == ["0", "5", "10", "20"] and s.choice_labels == ["a", "b", "c"]
    assert s.problems == [], s.problems
    assert s.checked == 1 + 4 + 3 and s.changed >= 5  # start, 4 slider moves, 3 choice moves
    # 9 stored positions computed with the cell; the live-only one (20, a) when visited; each
    # check then ran fn once more in the kernel
    assert calls == 9 + 1 + s.checked


@pytest.mark.e2e  # a fresh kernel or process
def test_ipywidgets_7_in_a_kernel_redraws_one_output_from_python():
    """Colab's case: every move goes to the kernel, which redraws the one Output with what fn
    prints and draws there (a position is computed when first visited)."""
    nb, client, (s,), calls = run_in_kernel({"IPYWIDGETS_7": "1", "NO_COMMS": ""})
    assert s.kind == "output"
    state = client.widget_state[s.box]
    assert [client.widget_state[c[len("IPY_MODEL_"):]]["_model_name"] for c in state["children"]] == [
        "SelectionSliderModel", "DropdownModel", "OutputModel"]
    assert client.widget_state[s.slider]["continuous_update"] is False  # compute on release
    assert s.problems == [], s.problems
    assert s.checked == 1 + 4 + 3 and s.changed >= 5  # start, 4 slider moves, 3 choice moves
    shown = client.widget_state[s.shown]["outputs"]
    assert [o["output_type"] for o in shown] == ["stream", "display_data"]
    assert shown[0]["text"] == "a: 5 steps\n" and stored_figure(shown[1])[0] == "svg"
    assert stored_figure(shown[1])[2] == "Run a after 5 steps."  # its alt text
    # the 6 distinct positions visited, once each (kept), plus fn afresh for each of the 7 checks
    assert calls == 6 + s.checked


@pytest.mark.e2e  # a fresh kernel or process
def test_the_walk_catches_an_output_that_is_not_what_the_code_computes():
    """A function that prints something new at every call: the shown output (first call) never
    equals a fresh computation, and the walk says so."""
    cells = list(KERNEL_CELLS)
    KERNEL_CELLS[0] = KERNEL_CELLS[0].replace("print(f'{run}: {steps} steps')", "print(f'call {len(calls)}')")
    try:
        _, _, (s,), _ = run_in_kernel({"IPYWIDGETS_7": "1", "NO_COMMS": ""})
    finally:
        KERNEL_CELLS[:] = cells
    assert len([p for p in s.problems if "the code computes" in p]) == s.checked


@pytest.mark.e2e  # a fresh kernel or process
def test_a_kernel_without_widget_comms_shows_the_start_position():
    nb, _, found, calls = run_in_kernel({"IPYWIDGETS_7": "", "NO_COMMS": "1"}, walk=False)
    assert found == []
    outs = nb.cells[1].outputs
    text = "".join(o.get("text", "") for o in outs if o["output_type"] == "stream")
    assert text == (f"This slider {NEEDS_A_NOTEBOOK} to move (a notebook with widgets); showing steps = 5, run = a.\n"
                    "a: 5 steps\n")
    figures = [o for o in outs if o["output_type"] == "display_data"]
    assert len(figures) == 1 and stored_figure(figures[0])[0] == "svg"  # the static figure, with its alt
    assert not [o for o in outs if o["output_type"] == "execute_result"]  # None: nothing else shown
    assert calls == 1  # only the start position was computed


def test_an_svg_figure_is_a_data_url_that_gives_back_its_text():
    """image_html escapes only what a data: URL and the quoted src need; the browser gets the SVG back."""
    svg = "<svg id='a#1'>\n\t<text>50% of %23 &amp; 'quoted' #2</text>\r\n</svg>"
    tag = sliders.image_html({"image/svg+xml": [svg[:9], svg[9:]]}, alt='a "bar" <chart>')
    src = re.fullmatch(r"<img class=\"[^\"]+\" alt=\"([^\"]*)\" src='([^']*)'>", tag)
    assert src, tag
    assert html_lib.unescape(src.group(1)) == 'a "bar" <chart>'
    url = html_lib.unescape(src.group(2))
    assert url.startswith("data:image/svg+xml,") and not re.search(r"[#'\n\r\t]", url)
    assert unquote(url.removeprefix("data:image/svg+xml,")) == svg
