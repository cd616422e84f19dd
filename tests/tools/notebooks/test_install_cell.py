"""The Colab install cell: one text (tools/notebooks/install_cell.py), the first code cell of every
lesson, installing from the one repository URL of _config.yml. What it does on Colab's own
runtime is proven by `make colab-twin`; here, its text, the tool that writes it, and its logic."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest

from tests.notebooks.test_rules import NOTEBOOKS
from tools.notebooks import install_cell
from tools.notebooks.install_cell import DISTRIBUTION, ENV_VAR, RESTART_LINE, cell_text, problems, repository_url


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_lesson_starts_with_the_install_cell(path):
    assert problems(path, cell_text()) == []


def test_nothing_in_the_cell_can_start_cuda():
    assert "torch" not in cell_text() and "cuda" not in cell_text().lower()


def test_the_command_names_a_stale_cell_and_apply_writes_back_only_that_cell(tmp_path, capsys):
    path = tmp_path / NOTEBOOKS[0].name
    shutil.copy(NOTEBOOKS[0], path)
    nb = json.loads(path.read_text())
    cell = install_cell.first_code_cell(nb)
    cell["source"], cell["metadata"]["tags"] = ["# an old install cell\n", "print('old')"], ["hide-input"]
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    assert install_cell.main([str(path)]) == 1
    out = capsys.readouterr().out
    assert "not the install cell" in out and "must be tagged ['remove-cell']" in out
    assert install_cell.main(["--apply", str(path)]) == 0
    assert path.read_text() == NOTEBOOKS[0].read_text()  # that cell's source and tags, nothing else
    assert install_cell.apply(path, cell_text()) is False  # applying twice changes nothing
    assert install_cell.main([str(path)]) == 0


@pytest.mark.parametrize("colab, source, imported, upgrade, installs, restart", [
    (False, False, True, True, None, False),  # outside Colab the cell does nothing
    (True, False, False, True, "url", False),  # an upgrade of something not yet imported needs no restart
    (True, False, True, False, "url", False),  # pip only added packages
    (True, False, True, True, "url", True),  # pip upgraded an imported package: one line, restart
    (False, True, True, True, "source", True),  # COURSE_SOURCE replaces the URL, in or out of Colab
])
def test_the_cell_installs_on_colab_and_asks_for_a_restart_only_when_needed(
        monkeypatch, capsys, tmp_path, colab, source, imported, upgrade, installs, restart):
    """The cell's text run with pip and the installed distributions faked: pip "upgrades"
    fake-dist 1.0 -> 2.0 (or not), whose module is `fakepkg` (imported before the cell or not)."""
    calls = []
    versions = {"fake-dist": "1.0", "other": "3.0"}

    def fake_run(cmd, check=False, **kwargs):
        calls.append(cmd)
        if upgrade:
            versions["fake-dist"] = "2.0"
        versions[DISTRIBUTION] = "0.1.0"
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(importlib.metadata, "distributions",
                        lambda: [SimpleNamespace(name=n, version=v) for n, v in list(versions.items())])
    monkeypatch.setattr(importlib.metadata, "packages_distributions",
                        lambda: {"fakepkg": ["fake-dist"], "other": ["other"]})
    for name, present in [("google.colab", colab), ("fakepkg", imported)]:
        if present:
            monkeypatch.setitem(sys.modules, name, SimpleNamespace())
        else:
            monkeypatch.delitem(sys.modules, name, raising=False)
    if source:
        monkeypatch.setenv(ENV_VAR, f"file://{tmp_path}")
    else:
        monkeypatch.delenv(ENV_VAR, raising=False)
    exec(compile(cell_text(), "<install cell>", "exec"), {"__name__": "__main__"})
    printed = capsys.readouterr().out
    where = {"url": f"git+{repository_url()}", "source": f"file://{tmp_path}"}.get(installs)
    assert calls == ([[sys.executable, "-m", "pip", "install", "-q", f"{DISTRIBUTION} @ {where}"]] if where else [])
    if restart:
        assert printed.count("\n") == 1 and RESTART_LINE in printed and "fake-dist" in printed
    else:
        assert printed == ""
