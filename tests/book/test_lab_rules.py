"""The JupyterLab check (tests/book/lab.py) finds the cells a slider needs and computes its output."""

from __future__ import annotations

import ast
import json

import pytest

from tests.book import lab as lab_check


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


def test_the_default_lesson_has_a_slider_cell_with_one_function():
    setup, slider = lab_check.plan(json.loads(lab_check.DEFAULT.read_text(encoding="utf-8")))
    assert setup and all("google.colab" not in cell for cell in setup)
    functions = [n for n in ast.parse(lab_check.python_lines(slider)).body if isinstance(n, ast.FunctionDef)]
    assert len(functions) == 1


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
