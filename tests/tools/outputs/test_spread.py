"""Every notebook's declared tolerances against its measured spread (tools/outputs/spread.json,
written by `make spread`), and the rule itself (tools/outputs/spread.py, tests/README.md) on made-up
cells: a cell printing numbers other than measured, or a setting not measured, asks for `make spread`;
a cell printing no number, or the numbers measured from changed code, does not."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from tools.outputs import spread
from tools.outputs.nbval_tolerance import Tolerance, declaration, split_numbers

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
assert NOTEBOOKS, f"no notebooks in {ROOT / 'notebooks'}"  # fails the collection


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_declared_tolerances_fit_the_measured_spread(path):
    problems = spread.check_notebook(path, spread.load())
    assert not problems, "\n".join(problems)


def test_the_stored_measurement_is_what_spread_writes_of_notebooks_that_exist():
    for name, entry in spread.load()["notebooks"].items():
        assert (ROOT / name).is_file(), f"{spread.MEASUREMENT.name} measures {name}, which is gone (remove it)"
        assert set(entry) == {"cells", "machines"}, name
        for machine, runs in entry["machines"].items():
            for setting, run in runs.items():
                assert {"env", "moved", "changed", "errors"} <= set(run) and run["machine"] == machine, (name, setting)
                for m in (m for cell in run["moved"].values() for m in cell):
                    spread.one_number(m["stored"]), spread.one_number(m["new"])


def test_saving_drops_the_notebooks_that_are_gone(tmp_path, capsys):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "01_here.ipynb").write_text("{}")
    measurement = {"notebooks": {"notebooks/01_here.ipynb": {"cells": {}}, "notebooks/02_gone.ipynb": {"cells": {}}}}
    spread.save(measurement, tmp_path / "spread.json", root=tmp_path)
    assert list(json.loads((tmp_path / "spread.json").read_text())["notebooks"]) == ["notebooks/01_here.ipynb"]
    assert "notebooks/02_gone.ipynb: gone from the checkout" in capsys.readouterr().out


def test_the_settings_include_the_second_nbval_pass():
    assert spread.settings()["nbval-alt"] == spread.alt_cpu() != {}
    assert "$(ALT_CPU)" in (ROOT / "Makefile").read_text()


# ---- the rule on a made-up notebook ------------------------------------------------------------

MACHINE = "Made-up CPU, 2 CPUs"
NAME = "notebooks/01_lesson.ipynb"
AGAIN = 'run make spread SPREAD_ARGS="--notebook 01_lesson"'


def printed(*losses: float) -> str:
    return "tau   loss\n0.05  {:.2f}\n0.5   {:.2f}\n".format(*losses)


def write_notebook(root: Path, cells: list[tuple[str, dict | None]]) -> Path:
    """A notebook of code cells c000, c001, ... with the given stored stdout and declarations."""
    nb = new_notebook(cells=[new_markdown_cell("# A lesson")])
    for i, (text, declared) in enumerate(cells):
        cell = new_code_cell(f"print({i})", execution_count=i + 1, id=f"c{i:03d}",
                             outputs=[new_output("stream", name="stdout", text=text)])
        cell.metadata.update({"nbval": declared} if declared else {})
        nb.cells.append(cell)
    (root / "notebooks").mkdir(exist_ok=True)
    nbformat.write(nb, str(root / NAME))
    return root / NAME


def runs_on(path: Path, runs: dict[str, dict[str, str]], chosen=None) -> dict:
    """One machine's runs: under each setting (all, or the chosen), cell id -> the stdout it printed instead."""
    code = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    return {name: {"env": env, **spread.analyse({"cells": [
                {"id": c.id, "stored": {"stdout": [c.outputs[0].text]},
                 "new": {"stdout": [runs.get(name, {}).get(c.id, c.outputs[0].text)]}} for c in code]})}
            for name, env in spread.settings().items() if chosen is None or name in chosen}


def measurement_of(path: Path, runs: dict[str, dict[str, str]]) -> dict:
    return {"notebooks": {NAME: {"cells": spread.records(path), "machines": {MACHINE: runs_on(path, runs)}}}}


def problems(path, measurement, root) -> str:
    return "\n".join(spread.check_notebook(path, measurement, root))


L0, L1 = printed(2.45, 0.42), printed(1.5, 0.25)
MOVED = {"nbval-alt": {"c000": printed(2.45, 0.43)}}  # c000 moves 0.42 -> 0.43 under nbval-alt, c001 never moves
MISREAD = {"threads-1": {"c000": "misread: 13 of 300\n"}}


@pytest.mark.parametrize("cells, runs, found", [
    pytest.param([(L0, None), (L1, None)], MOVED, "cell 0 (id c000): 1 printed number moved under 1 setting (nbval-alt "
                 "[Made-up CPU, 2 CPUs]), the largest 0.42 -> 0.43 under nbval-alt [Made-up CPU, 2 CPUs] (line '0.5   "
                 "0.42') by 0.01, and it declares no tolerance", id="moved-must-declare"),
    pytest.param([(L0, {"atol": 0.03}), (L1, None)], MOVED, "", id="three-times-the-move-holds"),
    pytest.param([(L0, {"atol": 0.02}), (L1, None)], MOVED, "must allow 3 x that", id="less-than-the-margin"),
    pytest.param([(L0, {"atol": 0.2}), (L1, None)], MOVED, "atol 0.2 is more than 10 x", id="atol-far-wider"),
    pytest.param([(L0, {"rtol": 1.0}), (L1, None)], MOVED, "rtol 1.0 is more than 10 x", id="rtol-far-wider"),
    pytest.param([(L0, {"atol": 0.03}), (L1, {"atol": 0.03})], MOVED, "cell 1 (id c001): declares a tolerance (atol "
                 "0.03) but no number moved", id="never-moved-declares-nothing"),
    pytest.param([(L0, {"atol": 0.03}), (L1, None)], {"nbval-alt": {"c000": "most often read as 'nine'\n"}},
                 "its words change under nbval-alt", id="words-change"),
    pytest.param([(L0, {"atol": 0.03}), (L1, None)], None, f"cell 0 (id c000) prints 4 numbers (0.05, 2.45, 0.5, "
                 f"0.42), not measured: {AGAIN}", id="not-measured"),
    pytest.param([("misread: 12 of 300\n", {"atol": 3})], MISREAD, 'declare "integers": true', id="integer-moved"),
    pytest.param([("misread: 12 of 300\n", {"atol": 3, "integers": True})], MISREAD, "", id="integers-declared"),
    pytest.param([("loss 2.4513\n", {"atol": 0.002})], {"aten-default": {"c000": "loss 2.4519\n"}},
                 "print it to 0.001", id="more-digits-than-the-tolerance-keeps"),
])
def test_the_rule(tmp_path, cells, runs, found):
    path = write_notebook(tmp_path, cells)
    result = problems(path, measurement_of(path, runs) if runs is not None else {"notebooks": {}}, tmp_path)
    assert (found in result) if found else result == ""


@pytest.fixture
def lesson(tmp_path):
    """The two-cell lesson, c000 declaring atol 0.03, and its measurement on MACHINE."""
    path = write_notebook(tmp_path, [(L0, {"atol": 0.03}), (L1, None)])
    measured = measurement_of(path, MOVED)
    return path, measured, measured["notebooks"][NAME]["machines"]


def edit(path: Path, index: int, source: str | None = None, stdout: str | None = None, cell=None) -> None:
    """Change a code cell's source and/or stored stdout, as re-executing an edited cell would; or append `cell`."""
    nb = nbformat.read(path, as_version=4)
    if cell is not None:
        nb.cells.append(cell)
    code = [c for c in nb.cells if c.cell_type == "code"][index]
    code.source = code.source if source is None else source
    if stdout is not None:
        code.outputs = [new_output("stream", name="stdout", text=stdout)] if stdout else []
    nbformat.write(nb, str(path))


# The item 3: a changed cell asks for `make spread` only when it prints a number not measured.
@pytest.mark.parametrize("change, found", [
    pytest.param(dict(index=1, source="print('the losses, side by side')", stdout="the losses, side by side\n"), "",
                 id="changed-cell-printing-words"),
    pytest.param(dict(index=1, source="plt.plot(losses)", stdout=""), "", id="changed-cell-printing-nothing"),
    pytest.param(dict(index=2, cell=new_code_cell("import numpy as np", id="new")), "", id="new-cell-printing-nothing"),
    pytest.param(dict(index=0, source="print(table(losses))  # a refactor"), "", id="changed-code-same-numbers"),
    pytest.param(dict(index=1, source="print(table(losses, digits=3))", stdout=printed(1.5, 0.25) + "mean 0.875\n"),
                 f"{NAME}, cell 1 (id c001) prints other numbers than measured (5 numbers, were 4): {AGAIN}",
                 id="changed-cell-printing-a-new-number"),
    pytest.param(dict(index=0, stdout=printed(2.47, 0.42)),  # labs or a pinned package moved it
                 f"{NAME}, cell 0 (id c000) prints other numbers than measured (number 2 is 2.47, was 2.45): {AGAIN}",
                 id="unchanged-cell-whose-numbers-moved"),
    pytest.param(dict(index=2, cell=new_code_cell("print(len(corpus))", id="new", outputs=[
                 new_output("stream", name="stdout", text="300\n")])),
                 f"{NAME}, cell 2 (id new) prints 1 number (300), not measured: {AGAIN}", id="new-cell-printing-300"),
    pytest.param(dict(index=0, stdout=""), f"{NAME}, cell 0 (id c000): declares a tolerance (atol 0.03) but no number "
                 "moved under any setting: remove it (a cell that never moved is compared exactly)",
                 id="cell-that-stops-printing-numbers-drops-its-tolerance"),
    pytest.param(dict(index=1, source="print(f'trained in {t:.1f} s')", stdout="trained in 3.1 s\n"), "",
                 id="a-sanitized-timing-is-not-a-printed-number"),
])
def test_an_edit_asks_for_a_new_measurement_only_when_it_prints_numbers_not_measured(lesson, tmp_path, change, found):
    path, measured, _ = lesson
    edit(path, **change)
    assert problems(path, measured, tmp_path) == found


def test_the_report_names_cells_whose_code_changed_and_the_problems(lesson, tmp_path, monkeypatch, capsys):
    path, measured, machines = lesson
    edit(path, 0, source="print(table(losses))")
    del machines[MACHINE]["aten-avx2"]
    monkeypatch.setattr(spread, "ROOT", tmp_path)
    spread.report([path], measured)
    out = capsys.readouterr().out
    assert "cell 0 (id c000): its code changed since it was measured; it prints the numbers measured" in out
    assert "missing or changed: aten-avx2" in out  # and what breaks the rule


def test_a_setting_not_measured_fails(lesson, tmp_path):
    path, measured, machines = lesson
    del machines[MACHINE]["aten-avx2"]
    assert "missing or changed: aten-avx2" in problems(path, measured, tmp_path)


def test_a_move_on_another_machine_must_be_covered_too(lesson, tmp_path):
    """MKL takes other code paths on AMD and Intel under the same setting: a number that held on one
    CPU and moved on another needs its tolerance, and a setting measured on either machine counts."""
    path, measured, machines = lesson
    machines["Other CPU, 2 CPUs"] = runs_on(path, {"nbval-alt": {"c001": printed(1.5, 0.26)}}, chosen={"nbval-alt"})
    del machines[MACHINE]["nbval-alt"]
    found = problems(path, measured, tmp_path)
    assert "cell 1 (id c001)" in found and "declares no tolerance" in found
    assert "nbval-alt [Other CPU, 2 CPUs]" in found and "missing" not in found


def test_measuring_on_a_new_machine_keeps_the_other_machines_runs(lesson, tmp_path, monkeypatch):
    path, measured, machines = lesson
    monkeypatch.setattr(spread, "ROOT", tmp_path)
    monkeypatch.setattr(spread, "save", lambda m: None)
    monkeypatch.setattr(spread, "machine", lambda: "Other CPU, 2 CPUs")
    monkeypatch.setattr(spread, "run_setting", lambda nb, name, env: {
        "env": env, "moved": {}, "changed": {}, "errors": {}})
    assert spread.measure([path], {"here": {}}, measured) == 0
    machines = measured["notebooks"][NAME]["machines"]
    assert set(machines) == {MACHINE, "Other CPU, 2 CPUs"} and set(machines["Other CPU, 2 CPUs"]) == {"here"}
    assert len(machines[MACHINE]) == len(spread.settings())


# ---- what --declare writes -----------------------------------------------------------------------

@pytest.mark.parametrize("x, rounded", [("0.0301", "0.04"), ("0.03", "0.03"), ("0.96", "1"), ("12", "20"),
                                        ("0.00012", "0.0002")])
def test_round_up_to_one_significant_digit(x, rounded):
    assert spread.round_up_1(Decimal(x)) == Decimal(rounded)


def moves(text_before: str, text_after: str) -> list[spread.Move]:
    moved, changed = spread.compare_views({"stdout": [text_before]}, {"stdout": [text_after]})
    assert changed is None
    return [spread.Move("here", spread.one_number(m["stored"]), spread.one_number(m["new"]), m["line"]) for m in moved]


@pytest.mark.parametrize("before, after, proposed", [
    (printed(2.45, 0.42), printed(2.45, 0.43), Tolerance(atol=Decimal("0.03"))),       # 3 x 0.01
    ("loss 245.31, share 0.0213\n", "loss 245.36, share 0.0213\n", Tolerance(rtol=Decimal("0.0007"))),  # sizes differ
    ("gap -0.00\n", "gap 0.00\n", Tolerance(atol=Decimal("0.03"))),  # a move by formatting only: one unit, 0.01
])
def test_declare_writes_margin_times_the_move_rounded_up(before, after, proposed):
    assert spread.propose(moves(before, after), split_numbers(before)[1]) == proposed
    assert not spread.tolerance_problems(proposed, moves(before, after))


def test_declare_writes_only_metadata_and_what_it_writes_holds(tmp_path):
    path = write_notebook(tmp_path, [(L0, None), (L1, {"atol": 0.5})])  # c000 moved, c001 never did
    measured = measurement_of(path, MOVED)
    before = nbformat.read(path, as_version=4)
    notes = spread.declare(path, measured, root=tmp_path)
    after = nbformat.read(path, as_version=4)
    assert [(c.source, c.get("outputs")) for c in after.cells] == [(c.source, c.get("outputs")) for c in before.cells]
    assert declaration(after.cells[1]) is not None and declaration(after.cells[2]) is None
    assert any("declared" in n for n in notes) and any("removed" in n for n in notes)
    assert problems(path, measured, tmp_path) == ""
    text = path.read_text()
    assert spread.declare(path, measured, root=tmp_path) == [] and path.read_text() == text  # idempotent


def test_a_setting_this_cpu_cannot_run_is_recorded_as_skipped():
    """PyTorch's AVX-512 kernels on a CPU without AVX-512 die at an illegal instruction: skipped, with why."""
    avx512 = spread.SETTINGS["aten-avx512"]
    assert "no AVX-512" in spread.unavailable(avx512, cpuinfo="flags\t: fpu sse2 avx2 fma\n")
    assert spread.unavailable(avx512, cpuinfo="flags\t: fpu sse2 avx2 avx512f avx512bw\n") is None
    assert spread.unavailable(spread.SETTINGS["aten-avx2"], cpuinfo="flags\t: fpu sse2\n") is None
