"""A lesson's slider works in JupyterLab, where readers run the notebooks (tools/book/lab.py says how).

    pytest tests/book/test_lab.py [--lab-notebook notebooks/NN_temperature.ipynb]
"""

from __future__ import annotations

from pathlib import Path

from tools.book import lab


def test_a_slider_moved_in_jupyterlab_shows_what_the_code_computes(request):
    chosen = request.config.getoption("lab_notebook")
    print(lab.run(Path(chosen).resolve() if chosen else lab.DEFAULT))

