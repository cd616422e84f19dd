"""labs.classroom.sliders.live_slider: every stored position holds exactly what fn prints (and draws) for it."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
from pathlib import Path

import ipywidgets as widgets
import matplotlib
import nbformat
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from tests.book.widget_state import live_sliders, notebook_live_sliders
from labs.classroom.sliders import capture, LIVE_ONLY, live_slider, MAX_STORED

ROOT = Path(__file__).resolve().parents[2]


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


@pytest.mark.parametrize("image, mime", [("svg", "image/svg+xml"), ("png", "image/png")])
def test_figures_are_stored_in_order_as_compact_images(image, mime):
    box = live_slider(draw, [0, 5, 10], description="steps", image=image)
    spec = spec_of(box)
    for i, steps in enumerate([0, 5, 10]):
        outs = spec.outputs[(0, i)]
        assert [o["output_type"] for o in outs] == ["stream", "display_data", "stream"]
        assert outs[0]["text"] == f"{steps} steps\n" and outs[2]["text"] == "done\n"
        data = outs[1]["data"]
        assert mime in data and data["text/plain"] == f"<Figure: after {steps} steps>"
        assert len(data[mime]) < 60_000
    svgs = [spec.outputs[(0, i)][1]["data"][mime] for i in range(3)]
    assert len(set(svgs)) == 3
    assert plt.get_fignums() == []  # every figure closed, none left for the inline backend


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
    spec = importlib.util.spec_from_file_location("execute_notebooks", ROOT / ".ci" / "execute_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_make_outputs_stores_every_position_in_the_notebook(tmp_path):
    """`make outputs` (.ci/execute_notebooks.py) keeps the widget state the book embeds."""
    cell = (
        "# NBVAL_IGNORE_OUTPUT\n"
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
        nbformat.v4.new_code_cell("live_slider(fig, [1, 2, 3], stored=[1, 3])"),
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
