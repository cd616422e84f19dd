"""A lesson's slider works in JupyterLab, where readers run the notebooks (tests/book/lab.py says how).

    pytest tests/book/test_lab.py [--lab-notebook notebooks/NN_temperature.ipynb]
"""

from __future__ import annotations

from pathlib import Path

from tests.book import lab


def test_a_slider_moved_in_jupyterlab_shows_what_the_code_computes(request):
    chosen = request.config.getoption("lab_notebook")
    print(lab.run(Path(chosen).resolve() if chosen else lab.DEFAULT))


def test_a_figure_for_another_slider_position_is_told_apart():
    """The comparison itself, without a browser: the figure drawn for one position passes against
    itself and fails against the next position's, in SVG (its words) and PNG (its pixels)."""
    import pytest

    setup, slider_cell = lab.plan(__import__("json").loads(lab.DEFAULT.read_text(encoding="utf-8")))
    here, there = [0.3, 0.2], [0.2, 0.2]
    text, figures = lab.expected_output(setup, slider_cell, here)
    assert figures, "the slider cell draws no figure"
    for kind in ("svg", "png"):
        page = (text, [(kind, figure[kind]) for figure in figures])
        lab.compare(page, (text, figures), here)
        with pytest.raises(lab.LabCheckFailed, match="not what the code draws"):
            lab.compare(page, lab.expected_output(setup, slider_cell, there), there)
