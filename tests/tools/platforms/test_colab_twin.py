"""`make colab-twin` (tools/platforms/colab_twin.py): what it rebuilds of Colab's runtime, and the package's
ranges that let the notebooks' first cell keep Colab's own packages. The twin itself runs in CI
after make test (.ci/run); these are its quick checks."""

from __future__ import annotations

import json
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement

from tools.platforms import colab_frontend as frontend, colab_twin as twin
from tools.platforms.pins import canonical, constraints

ROOT = Path(__file__).resolve().parents[3]

# Colab's runtime as the issue quotes googlecolab/backend-info (2026-08-19), and Colab's versions of what
# the course needs and Colab preinstalls (the install cell must find them, as on Colab).
COLAB = {"torch": "2.11.0", "sentence-transformers": "5.7.0", "transformers": "5.15.0", "numpy": "2.1.3",
         "scikit-learn": "1.6.1", "matplotlib": "3.10.0", "ipywidgets": "7.7.1", "widgetsnbextension": "3.6.10",
         "notebook": "6.5.7", "ipykernel": "6.17.1", "datasets": "4.0.0", "pandas": "2.2.3", "pyarrow": "18.1.0",
         "accelerate": "1.14.0", "scipy": "1.16.3", "huggingface-hub": "1.27.0"}


def test_the_twin_pins_colabs_versions_each_once():
    pins = constraints(twin.RUNTIME)
    assert {name: pins.get(name) for name in COLAB} == COLAB
    assert twin.COLAB_PYTHON == (3, 13)
    names = [line.split("#")[0].strip().partition("==")[0] for line in twin.RUNTIME.read_text().splitlines()]
    assert len([n for n in names if n]) == len(pins)


def test_the_ranges_admit_colabs_packages_and_the_tested_set():
    """Colab keeps its widget library, numpy, scikit-learn, matplotlib, torch, sentence-transformers
    and transformers: pip has nothing to replace. The course's own pinned set stays inside too."""
    deps = {canonical(Requirement(d).name): Requirement(d)
            for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    for name in ("ipywidgets", "numpy", "scikit-learn", "matplotlib"):  # the "done when"
        assert name in deps
    tested = constraints()
    for name, version in constraints(twin.RUNTIME).items():
        if name in deps:
            assert deps[name].specifier.contains(version), f"{deps[name]} refuses Colab's {name} {version}"
            assert deps[name].specifier.contains(tested[name]), f"{deps[name]} refuses the tested {tested[name]}"
    assert deps["ipywidgets"].specifier.contains("8.1.9") and not deps["ipywidgets"].specifier.contains("9.0")


def test_without_python_313_the_twin_takes_the_cpu_wheel_on_disk():
    reqs = twin.requirements((3, 11))
    assert twin.FALLBACK_TORCH in reqs and "torch==2.11.0" not in reqs
    assert "torch==2.11.0" in twin.requirements((3, 13))
    assert len(reqs) == len(constraints(twin.RUNTIME))


def test_make_colab_twin_runs_the_twin_and_ci_runs_it_after_make_test():
    makefile = (ROOT / "Makefile").read_text()
    target = makefile.split("\ncolab-twin:", 1)[1].split("\n\n", 1)[0]
    assert "-m tools.platforms.colab_twin" in target and "nice" in target
    assert "make colab-twin" in makefile.split("\nhelp:", 1)[1].split("\n\n", 1)[0]
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    assert ci.index("make colab-twin") > ci.index("make test")


def test_the_frontend_joins_text_as_a_frontend_shows_it():
    shown = [{"output_type": "stream", "name": "stdout", "text": "a"},
             {"output_type": "stream", "name": "stdout", "text": "b\n"},
             {"output_type": "display_data", "data": {"text/plain": "<Figure>"}, "metadata": {"x": 1}},
             {"output_type": "stream", "name": "stdout", "text": "c\n"}]
    assert frontend.normal(shown) == [
        {"output_type": "stream", "name": "stdout", "text": "ab\n"},
        {"output_type": "display_data", "data": {"text/plain": "<Figure>"}},
        {"output_type": "stream", "name": "stdout", "text": "c\n"}]


def test_without_a_python_313_that_runs_the_twin_picks_311(tmp_path, monkeypatch):
    """A python3.13 that does not run (an inactive pyenv shim) and no pyenv 3.13: Python 3.11."""
    if sys.version_info[:2] != (3, 11):
        pytest.skip("needs this test to run on Python 3.11 (it stands in for python3.11)")
    (tmp_path / "python3.13").write_text("#!/bin/sh\necho 'pyenv: python3.13: command not found' >&2\nexit 127\n")
    (tmp_path / "python3.11").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    for script in tmp_path.iterdir():
        script.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    monkeypatch.delenv("COLAB_TWIN_PYTHON", raising=False)
    python, version = twin.find_python()
    assert version == (3, 11) and python == str(tmp_path / "python3.11")


# The twin's comparison is nbval's own, run on the twin's kernel (a stand-in here: this environment's
# Python, named as the twin's kernel). Each cell prints one fixed thing, its stored output differs from
# it in one chosen way: (source, stored output, cell metadata, output kind) -> nbval passes it?
COMPARED = [
    ('print("loss 0.4213")', "loss 0.4213\n", {}, "stdout", True),
    ('print("loss 0.4213")', "loss 0.4210\n", {"nbval": {"atol": 0.001}}, "stdout", True),
    ('print("loss 0.4213")', "loss 0.4100\n", {"nbval": {"atol": 0.001}}, "stdout", False),
    ('print("loss 0.4213")', "loss 0.4210\n", {}, "stdout", False),  # an edited stored number
    ('print("took 2.5 s")', "took 0.7 s\n", {}, "stdout", True),
    ('print("a")', "b\n", {"tags": ["nbval-ignore-output"]}, "stdout", True),
    ('import sys\nprint("WARNING: Location \'file:///opt/pypi/simple/x/\' is ignored: no folder", file=sys.stderr)\n'
     'print("installed")', "installed\n", {}, "stdout", True),  # this machine's pip note: left out
    ('import sys\nprint("WARNING: Location \'file:///opt/pypi/simple/x/\' is ignored: no folder\\na real warning",'
     ' file=sys.stderr)\nprint("installed")', "installed\n", {}, "stdout", False),  # a real warning stays
    ("2 + 3", "4", {}, "result", False),
]


@pytest.mark.e2e
def test_the_twin_compares_with_nbval_on_its_kernel(tmp_path, monkeypatch):
    """nbval's comparison on the twin's kernel, with this machine's pip notes and glue records left out."""
    cells = []
    for count, (source, text, metadata, kind, _) in enumerate(COMPARED, start=1):
        cell = nbformat.v4.new_code_cell(source, metadata=metadata, execution_count=count)
        cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": text}, execution_count=count)
                        if kind == "result" else nbformat.v4.new_output("stream", name=kind, text=text)]
        cells.append(cell)
    glued = nbformat.v4.new_code_cell("print('glued')", execution_count=len(cells) + 1)
    glued.outputs = [nbformat.v4.new_output("stream", name="stdout", text="glued\n"), nbformat.v4.new_output(
        "display_data", data={"application/papermill.record/text/plain": "0.5"}, metadata={"scrapbook": {"name": "x"}})]
    path = tmp_path / "compared.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells + [glued]), path)
    spec = tmp_path / "twin" / "kernels" / twin.KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f",
                                                           "{connection_file}"], "language": "python"}))
    monkeypatch.setattr(twin, "HOME", tmp_path / "twin")
    monkeypatch.setenv("PYTEST_ADDOPTS", f"--junitxml={tmp_path / 'nbval.xml'}")
    assert twin.nbval(ROOT, [path], timeout=120) == 1
    passed = {case.get("name"): not list(case) for case in ET.parse(tmp_path / "nbval.xml").iter("testcase")}
    assert passed == {f"Cell {i}": case[-1] for i, case in enumerate(COMPARED)} | {f"Cell {len(COMPARED)}": True}
    assert "plugin exception" not in (tmp_path / "nbval.xml").read_text()  # each failure is nbval's comparison
