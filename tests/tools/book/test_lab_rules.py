"""The JupyterLab check (tools/book/lab.py) finds the cells a slider needs and computes its output."""

from __future__ import annotations

import ast
import json

import pytest

from tools.book import lab as lab_check


def notebook(*cells: str) -> dict:
    return {"cells": [{"cell_type": "code", "source": c} for c in cells]}


def test_plan_keeps_only_the_cells_the_slider_needs():
    nb = notebook(
        "import math\nimport ipywidgets as widgets",
        "big = [math.sqrt(i) for i in range(10**6)]  # slow, unrelated",
        "offset = 2",
        "s = widgets.IntSlider(value=1)\ndef show(k):\n    print(k + offset)\nwidgets.interactive_output(show, {'k': s})",
    )
    setup, slider = lab_check.plan(nb)
    assert setup == ["import math\nimport ipywidgets as widgets", "offset = 2"]
    assert "IntSlider" in slider
    assert lab_check.expected_output(setup, slider, [3.0]) == ("5.0\n", [])


def test_a_notebook_without_a_slider_is_refused():
    with pytest.raises(lab_check.LabCheckFailed, match="no slider cell"):
        lab_check.plan(notebook("import math", "print(math.pi)"))


def test_the_default_lesson_has_a_slider_cell_defining_the_function_it_shows():
    setup, slider = lab_check.plan(json.loads(lab_check.DEFAULT.read_text(encoding="utf-8")))
    assert setup and all("google.colab" not in cell for cell in setup)
    tree = ast.parse(lab_check.python_lines(slider))
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    shown = [n.args[0].id for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "live_slider"]
    assert shown and shown[0] in functions  # its alt= function may sit beside it


def test_the_function_the_slider_shows_is_the_one_computed():
    """With alt=, the cell defines two functions: the check computes the one live_slider shows."""
    cell = ("def show(x):\n    print(f'x is {helper(x)}')\n\n\ndef helper(x):\n    return x + 1\n\n\n"
            "def describe(x):\n    return f'At {x}.'\n\n\nlive_slider(show, [1, 2], alt=describe)\n")
    text, figures = lab_check.expected_output([], cell, [2])
    assert text == "x is 3\n" and figures == []
    with pytest.raises(lab_check.LabCheckFailed, match="the function its live_slider shows"):
        lab_check.expected_output([], cell.replace("live_slider(show", "live_slider(nothing"), [2])


def test_a_figure_for_another_slider_position_is_told_apart():
    """The comparison itself, without a browser: the figure drawn for one position passes against
    itself and fails against the next position's, in SVG (its words) and PNG (its pixels)."""
    setup, slider_cell = lab_check.plan(json.loads(lab_check.DEFAULT.read_text(encoding="utf-8")))
    here, there = [0.3, 0.2], [0.2, 0.2]
    text, figures = lab_check.expected_output(setup, slider_cell, here)
    assert figures, "the slider cell draws no figure"
    for kind in ("svg", "png"):
        page = (text, [(kind, figure[kind]) for figure in figures])
        lab_check.compare(page, (text, figures), here)
        with pytest.raises(lab_check.LabCheckFailed, match="not what the code draws"):
            lab_check.compare(page, lab_check.expected_output(setup, slider_cell, there), there)
