"""environment.yml (conda) and constraints.txt (pip) describe the same environment."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

from tools.platforms.pins import canonical, constraints

ROOT = Path(__file__).resolve().parents[1]
CONDA_TO_PIP = {"pytorch": "torch"}
NOT_PYTHON_PACKAGES = {"python", "pip", "nodejs"}


def environment() -> dict[str, str | None]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["channels"] == ["conda-forge"]
    found: dict[str, str | None] = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for spec in dep["pip"]:
                if spec.startswith("-e"):
                    continue
                name, _, version = spec.partition("==")
                found[canonical(name)] = version or None
            continue
        name, _, version = dep.partition("=")
        if name in NOT_PYTHON_PACKAGES:
            continue
        found[canonical(CONDA_TO_PIP.get(name, name))] = version or None
    return found


def test_every_environment_package_is_pinned_to_the_same_version():
    pins, env = constraints(), environment()
    for name, version in env.items():
        assert name in pins, f"environment.yml names {name}, which constraints.txt does not pin"
        assert version == pins[name], f"{name}: environment.yml has {version}, constraints.txt has {pins[name]}"


def test_every_direct_dependency_is_in_the_environment():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    direct = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        direct += extra
    env = environment()
    pins = constraints()
    for spec in direct:
        name = canonical(re.split(r"[<>=!~ ;]", spec, maxsplit=1)[0])
        assert name in pins, f"pyproject.toml needs {name}, which constraints.txt does not pin"
        assert name in env, f"pyproject.toml needs {name}, which environment.yml does not list"


def test_torch_is_pinned_for_the_cpu_install_path_only():
    assert constraints()["torch"] == "2.13.0"
    makefile = (ROOT / "Makefile").read_text()
    assert "torch==2.13.0" in makefile
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    torch_spec = next(d for d in deps if canonical(re.split(r"[<>=]", d)[0]) == "torch")
    assert "==" not in torch_spec, "the package must not force one torch build on every platform"


def test_jupyterlab_4_is_in_the_environment_and_make_lab_opens_it():
    """Readers run the notebooks in JupyterLab: the 4.x line, the same pin everywhere."""
    assert constraints()["jupyterlab"].startswith("4."), "constraints.txt must pin jupyterlab 4.x"
    assert environment()["jupyterlab"] == constraints()["jupyterlab"]
    book = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["book"]
    assert any(canonical(re.split(r"[<>=!~ ;]", spec, maxsplit=1)[0]) == "jupyterlab" for spec in book)
    makefile = (ROOT / "Makefile").read_text()
    lab = makefile.split("\nlab:", 1)[1].split("\n\n", 1)[0]
    assert "--ServerApp.ip=127.0.0.1" in lab and "--ServerApp.root_dir=notebooks" in lab
    assert "default_kernel_name=python3" in lab


def test_the_makefile_picks_the_first_python_that_runs(tmp_path):
    """python3.13 exists but does not run (an inactive pyenv shim), python3.12 runs: 3.12 is picked."""
    (tmp_path / "python3.13").write_text("#!/bin/sh\necho 'pyenv: python3.13: command not found' >&2\nexit 127\n")
    (tmp_path / "python3.12").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    for script in tmp_path.iterdir():
        script.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHON", None)
    picked = subprocess.run(["make", "-s", "-C", str(ROOT), "python"], env=env, capture_output=True, text=True)
    assert picked.returncode == 0, picked.stderr
    assert picked.stdout.startswith("Python: python3.12 (Python 3."), picked.stdout
    chosen = subprocess.run(["make", "-s", "-C", str(ROOT), "python", f"PYTHON={sys.executable}"],
                            env=env, capture_output=True, text=True)
    assert chosen.stdout.startswith(f"Python: {sys.executable} "), chosen.stdout


def test_the_repository_url_is_one_setting():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    url = config["repository"]["url"]
    readme = (ROOT / "README.md").read_text()
    assert url in readme
    import json

    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = json.loads(path.read_text())
        first_code = next(c for c in nb["cells"] if c["cell_type"] == "code")
        source = "".join(first_code["source"])
        assert f"git+{url}" in source, f"{path.name}: the Colab install cell does not use {url}"


def test_every_package_folder_is_installed_and_the_results_ship_with_it():
    """The wheel's package list names every folder of labs/, and the experiment's results file
    ships as package data (the lessons read it wherever the course is installed)."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "labs").rglob("__init__.py")}
    assert set(setuptools["packages"]) == folders | {"labs.classroom.experiment"}
    assert setuptools["package-dir"] == {"labs.classroom.experiment": "benchmarks/results"}
    for name in setuptools["package-data"]["labs.classroom.experiment"]:
        assert (ROOT / "benchmarks" / "results" / name).is_file()
