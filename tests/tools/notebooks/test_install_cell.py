"""The Colab install cell: one text (tools/notebooks/install_cell.py), the first code cell of every
lesson, installing from the one repository URL of _config.yml. What it does on Colab's own
runtime is proven by `make colab-twin`; here, its text, the tool that writes it, and its logic."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tools.notebooks import install_cell
from tools.notebooks.install_cell import ENV_VAR, RESTART_LINE, TAGS, apply, cell_text, problems, repository_url

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_lesson_starts_with_the_install_cell(path):
    assert problems(path, cell_text()) == []


def test_the_cell_installs_from_the_one_url_or_from_COURSE_SOURCE():
    text = cell_text()
    url = repository_url()
    assert f'"git+{url}"' in text  # the URL of _config.yml, which the book's Colab button uses too
    assert f'os.environ.get("{ENV_VAR}",' in text and f'"{ENV_VAR}" in os.environ' in text
    assert '"google.colab" in sys.modules' in text
    assert "torch" not in text and "cuda" not in text.lower()  # nothing here can start CUDA
    compile(text, "<install cell>", "exec")
    assert cell_text("https://example.org/fork") != text and "git+https://example.org/fork" in cell_text(
        "https://example.org/fork")


def _edited_copy(tmp_path: Path) -> Path:
    source = next(p for p in NOTEBOOKS if install_cell.first_code_cell(json.loads(p.read_text())))
    path = tmp_path / source.name
    shutil.copy(source, path)
    nb = json.loads(path.read_text())
    cell = install_cell.first_code_cell(nb)
    cell["source"] = ["# an old install cell\n", "print('old')"]
    cell["metadata"]["tags"] = ["hide-input"]
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    return path


def test_apply_replaces_only_the_first_code_cell(tmp_path):
    path = _edited_copy(tmp_path)
    before = json.loads(path.read_text())
    raw_before = path.read_text().splitlines()
    assert problems(path, cell_text())
    assert apply(path, cell_text()) is True
    after = json.loads(path.read_text())
    assert problems(path, cell_text()) == []
    first = next(i for i, c in enumerate(after["cells"]) if c["cell_type"] == "code")
    assert "".join(after["cells"][first]["source"]) == cell_text()
    assert after["cells"][first]["metadata"]["tags"] == TAGS
    # everything else, cell by cell and in the notebook's metadata, is as it was
    for i, (old, new) in enumerate(zip(before["cells"], after["cells"], strict=True)):
        if i == first:
            old = {**old, "source": None, "metadata": {**old["metadata"], "tags": None}}
            new = {**new, "source": None, "metadata": {**new["metadata"], "tags": None}}
        assert old == new
    assert {k: v for k, v in before.items() if k != "cells"} == {k: v for k, v in after.items() if k != "cells"}
    # and the file is written the way nbformat writes it: the lines outside that cell are untouched
    raw_after = path.read_text().splitlines()
    assert raw_after[:10] == raw_before[:10] and raw_after[-10:] == raw_before[-10:]
    assert apply(path, cell_text()) is False  # applying twice changes nothing


def test_the_command_reports_then_applies(tmp_path, capsys):
    path = _edited_copy(tmp_path)
    assert install_cell.main([str(path)]) == 1
    assert "not the install cell" in capsys.readouterr().out
    assert install_cell.main(["--apply", str(path)]) == 0
    assert install_cell.main([str(path)]) == 0


def run_cell(monkeypatch, capsys, *, colab: bool, imported: bool, upgrade: bool = True) -> tuple[list, str]:
    """Run the cell's text with pip and the installed distributions faked: pip "upgrades"
    fake-dist 1.0 -> 2.0, whose module is `fakepkg` (imported before the cell or not)."""
    calls = []
    versions = {"fake-dist": "1.0", "other": "3.0"}

    def fake_run(cmd, check=False, **kwargs):
        calls.append(cmd)
        if upgrade:
            versions["fake-dist"] = "2.0"
        versions["similar-embeddings-course-labs"] = "0.1.0"
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(importlib.metadata, "distributions",
                        lambda: [SimpleNamespace(name=n, version=v) for n, v in list(versions.items())])
    monkeypatch.setattr(importlib.metadata, "packages_distributions",
                        lambda: {"fakepkg": ["fake-dist"], "other": ["other"]})
    monkeypatch.delenv(ENV_VAR, raising=False)
    if colab:
        monkeypatch.setitem(sys.modules, "google.colab", SimpleNamespace())
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    if imported:
        monkeypatch.setitem(sys.modules, "fakepkg", SimpleNamespace())
    else:
        monkeypatch.delitem(sys.modules, "fakepkg", raising=False)
    exec(compile(cell_text(), "<install cell>", "exec"), {"__name__": "__main__"})
    return calls, capsys.readouterr().out


def test_outside_colab_the_cell_does_nothing(monkeypatch, capsys):
    calls, printed = run_cell(monkeypatch, capsys, colab=False, imported=True)
    assert calls == [] and printed == ""


def test_on_colab_it_installs_from_the_repository_url(monkeypatch, capsys):
    calls, printed = run_cell(monkeypatch, capsys, colab=True, imported=False)
    assert calls == [[sys.executable, "-m", "pip", "install", "-q",
                      f"similar-embeddings-course-labs @ git+{repository_url()}"]]
    assert printed == ""  # an upgrade of something not yet imported needs no restart


def test_an_upgrade_of_an_imported_package_asks_for_a_restart_in_one_line(monkeypatch, capsys):
    _, printed = run_cell(monkeypatch, capsys, colab=True, imported=True)
    assert printed.count("\n") == 1 and RESTART_LINE in printed and "fake-dist" in printed
    _, printed = run_cell(monkeypatch, capsys, colab=True, imported=True, upgrade=False)
    assert printed == ""  # pip only added packages


def test_COURSE_SOURCE_replaces_the_url(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    calls = []
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.setenv(ENV_VAR, f"file://{tmp_path}")
    exec(compile(cell_text(), "<install cell>", "exec"), {"__name__": "__main__"})
    assert calls[0][-1] == f"similar-embeddings-course-labs @ file://{tmp_path}"
