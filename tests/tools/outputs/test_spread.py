"""Every notebook's declared tolerances against its measured spread (tools/outputs/spread.json,
written by `make spread`), and the rule itself (tools/outputs/spread.py) on made-up cells.

A declared tolerance must cover MARGIN (3) x the largest move measured in its cell and stay within
FAR (10) x it; a cell whose numbers moved must declare one, a cell that never moved must not; a
moved number's allowance stays below 10 units of its last printed digit. A cell printing numbers
other than those measured (a new cell, or an edit that moved them), or a setting not measured,
is a failure too: run `make spread`. A cell printing no number, or the numbers measured, needs
no new measurement, whatever its code.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from tools.outputs import spread
from tools.outputs.nbval_tolerance import Tolerance, cell_fingerprint, declaration, split_numbers

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks_to_check():
    assert NOTEBOOKS, f"no notebooks in {ROOT / 'notebooks'}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_declared_tolerances_fit_the_measured_spread(path):
    problems = spread.check_notebook(path, spread.load())
    assert not problems, "\n".join(problems)


def test_the_measurement_names_only_notebooks_that_exist():
    gone = [name for name in spread.load()["notebooks"] if not (ROOT / name).is_file()]
    assert not gone, f"{spread.MEASUREMENT.name} measures notebooks that are gone: {gone} (remove them)"


def test_saving_drops_the_notebooks_that_are_gone(tmp_path, capsys):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "01_here.ipynb").write_text("{}")
    measurement = {"notebooks": {"notebooks/01_here.ipynb": {"cells": {}}, "notebooks/02_gone.ipynb": {"cells": {}}}}
    spread.save(measurement, tmp_path / "spread.json", root=tmp_path)
    assert list(json.loads((tmp_path / "spread.json").read_text())["notebooks"]) == ["notebooks/01_here.ipynb"]
    assert "notebooks/02_gone.ipynb: gone from the checkout" in capsys.readouterr().out


def test_the_settings_include_the_second_nbval_pass():
    alt = spread.settings()["nbval-alt"]
    assert alt and alt == spread.alt_cpu()
    assert "$(ALT_CPU)" in (ROOT / "Makefile").read_text()


# ---- the rule on a made-up notebook ------------------------------------------------------------

LOSS = "tau   loss\n0.05  {:.2f}\n0.5   {:.2f}\n"


def printed(*losses: float) -> str:
    return LOSS.format(*losses)


def write_notebook(root: Path, cells: list[tuple[str, dict | None]]) -> Path:
    """A notebook of code cells with the given stored stdout and declarations."""
    nb = new_notebook(cells=[new_markdown_cell("# A lesson")])
    for i, (text, declared) in enumerate(cells):
        cell = new_code_cell(f"print({i})", execution_count=i + 1, id=f"c{i:03d}")
        cell.outputs = [new_output("stream", name="stdout", text=text)]
        if declared:
            cell.metadata["nbval"] = declared
        nb.cells.append(cell)
    (root / "notebooks").mkdir(exist_ok=True)
    path = root / "notebooks" / "01_lesson.ipynb"
    nbformat.write(nb, str(path))
    return path


MACHINE = "Made-up CPU, 2 CPUs"


def runs_on(path: Path, runs: dict[str, dict[str, str]], chosen=None) -> dict:
    """One machine's runs: under each setting (all, or the chosen), cell id -> the stdout it printed instead."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    settings = {}
    for name, env in spread.settings().items():
        if chosen is not None and name not in chosen:
            continue
        cells = []
        for c in code:
            new = runs.get(name, {}).get(c.id, c.outputs[0].text)
            cells.append({"id": c.id, "stored": {"stdout": [c.outputs[0].text]}, "new": {"stdout": [new]}})
        settings[name] = {"env": env, "seconds": 1.0, **spread.analyse({"cells": cells})}
    return settings


def measurement_of(path: Path, root: Path, runs: dict[str, dict[str, str]]) -> dict:
    """A measurement on one machine in which, under each setting, cell id -> the stdout it printed instead."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    name = path.relative_to(root).as_posix()
    return {"notebooks": {name: {"cells": spread.records(path), "machines": {MACHINE: runs_on(path, runs)}}}}


@pytest.fixture
def lesson(tmp_path):
    """Cell c000 moves 0.42 -> 0.43 under one setting, c001 never moves."""
    def make(first: dict | None = None, second: dict | None = None, moved: str | None = None):
        path = write_notebook(tmp_path, [(printed(2.45, 0.42), first), (printed(1.5, 0.25), second)])
        runs = {"nbval-alt": {"c000": moved if moved is not None else printed(2.45, 0.43)}}
        return path, measurement_of(path, tmp_path, runs)
    return make


def problems(path, measurement, root) -> str:
    return "\n".join(spread.check_notebook(path, measurement, root))


def test_a_cell_whose_numbers_moved_must_declare_a_tolerance(lesson, tmp_path):
    path, measured = lesson()
    found = problems(path, measured, tmp_path)
    assert "cell 0 (id c000)" in found and "declares no tolerance" in found and "0.42 -> 0.43" in found


def test_a_tolerance_covering_three_times_the_move_holds(lesson, tmp_path):
    path, measured = lesson(first={"atol": 0.03})
    assert problems(path, measured, tmp_path) == ""


def test_a_tolerance_that_does_not_cover_the_spread_with_margin_fails(lesson, tmp_path):
    path, measured = lesson(first={"atol": 0.02})
    assert "must allow 3 x that" in problems(path, measured, tmp_path)


def test_a_tolerance_far_wider_than_the_spread_fails(lesson, tmp_path):
    path, measured = lesson(first={"atol": 0.2})
    assert "checks nothing" in problems(path, measured, tmp_path)
    path, measured = lesson(first={"rtol": 1.0})
    assert "checks nothing" in problems(path, measured, tmp_path)


def test_a_cell_that_never_moved_declares_nothing(lesson, tmp_path):
    path, measured = lesson(first={"atol": 0.03}, second={"atol": 0.03})
    found = problems(path, measured, tmp_path)
    assert "cell 1 (id c001)" in found and "no number moved" in found


def test_a_moved_integer_needs_integers_declared(tmp_path):
    path = write_notebook(tmp_path, [("misread: 12 of 300\n", {"atol": 3})])
    measured = measurement_of(path, tmp_path, {"threads-1": {"c000": "misread: 13 of 300\n"}})
    assert "declare \"integers\": true" in problems(path, measured, tmp_path)
    path = write_notebook(tmp_path, [("misread: 12 of 300\n", {"atol": 3, "integers": True})])
    assert problems(path, measurement_of(path, tmp_path, {"threads-1": {"c000": "misread: 13 of 300\n"}}),
                    tmp_path) == ""


def test_a_moved_number_printed_to_more_digits_than_its_tolerance_keeps_fails(tmp_path):
    path = write_notebook(tmp_path, [("loss 2.4513\n", {"atol": 0.002})])
    measured = measurement_of(path, tmp_path, {"aten-default": {"c000": "loss 2.4519\n"}})
    assert "print it to 0.001" in problems(path, measured, tmp_path)


def test_words_that_change_cannot_be_covered(lesson, tmp_path):
    path, measured = lesson(first={"atol": 0.03}, moved="most often read as 'nine'\n")
    assert "words change under nbval-alt" in problems(path, measured, tmp_path)


def test_a_notebook_without_measurement_fails_telling_to_run_make_spread(lesson, tmp_path):
    path, _ = lesson()
    found = problems(path, {"notebooks": {}}, tmp_path)
    assert "never measured" not in found and "not measured" in found and "make spread" in found


def edit(path: Path, index: int, source: str | None = None, stdout: str | None = None) -> None:
    """Change a code cell's source and/or stored stdout, as re-executing an edited cell would."""
    nb = nbformat.read(path, as_version=4)
    cell = [c for c in nb.cells if c.cell_type == "code"][index]
    if source is not None:
        cell.source = source
    if stdout is not None:
        cell.outputs = [new_output("stream", name="stdout", text=stdout)] if stdout else []
    nbformat.write(nb, str(path))


def test_a_changed_cell_that_prints_no_number_needs_no_measurement(lesson, tmp_path):
    path, measured = lesson(first={"atol": 0.03})
    edit(path, 1, source="print('the losses, side by side')", stdout="the losses, side by side\n")
    assert problems(path, measured, tmp_path) == ""
    edit(path, 1, source="plt.plot(losses)", stdout="")
    assert problems(path, measured, tmp_path) == ""


def test_a_new_cell_that_prints_no_number_needs_no_measurement(lesson, tmp_path):
    path, measured = lesson(first={"atol": 0.03})
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(new_code_cell("import numpy as np", id="new"))
    nbformat.write(nb, str(path))
    assert problems(path, measured, tmp_path) == ""


def test_a_changed_cell_printing_the_numbers_measured_holds(lesson, tmp_path):
    """Its code changed (a rename, a refactor, a comment) but every number it prints is as measured: the
    measurement is of those numbers under other CPU settings, and nbval-alt and the twin still compare
    them on every run. The report names the cell, so the next measurement is known to be due."""
    path, measured = lesson(first={"atol": 0.03})
    edit(path, 0, source="print(table(losses))  # same numbers, new code")
    assert problems(path, measured, tmp_path) == ""


def test_a_changed_cell_printing_a_new_number_fails_in_one_line(lesson, tmp_path):
    path, measured = lesson(first={"atol": 0.03})
    edit(path, 1, source="print(table(losses, digits=3))", stdout=printed(1.5, 0.25) + "mean 0.875\n")
    (line,) = spread.check_notebook(path, measured, tmp_path)
    assert line == ('notebooks/01_lesson.ipynb, cell 1 (id c001) prints other numbers than measured (5 numbers, '
                    'were 4): run make spread SPREAD_ARGS="--notebook 01_lesson"')


def test_an_unchanged_cell_whose_numbers_moved_fails(lesson, tmp_path):
    """Code the cell calls changed (labs, a pinned package), the notebook was re-executed, the cell prints
    other numbers: its spread is measured again."""
    path, measured = lesson(first={"atol": 0.03})
    edit(path, 0, stdout=printed(2.47, 0.42))
    found = problems(path, measured, tmp_path)
    assert "cell 0 (id c000) prints other numbers than measured (number 2 is 2.47, was 2.45)" in found
    assert "make spread" in found


def test_a_new_cell_printing_a_number_fails(lesson, tmp_path):
    path, measured = lesson(first={"atol": 0.03})
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(new_code_cell("print(len(corpus))", id="new", outputs=[new_output("stream", name="stdout", text="300\n")]))
    nbformat.write(nb, str(path))
    assert problems(path, measured, tmp_path) == ('notebooks/01_lesson.ipynb, cell 2 (id new) prints 1 number (300), '
                                                  'not measured: run make spread SPREAD_ARGS="--notebook 01_lesson"')


def test_a_cell_that_stops_printing_numbers_drops_its_tolerance(lesson, tmp_path):
    path, measured = lesson(first={"atol": 0.03})
    edit(path, 0, stdout="")
    assert "declares a tolerance" in problems(path, measured, tmp_path)


def test_a_sanitized_timing_is_not_a_printed_number(tmp_path):
    path = write_notebook(tmp_path, [("trained in 2.5 s\n", None)])
    measured = measurement_of(path, tmp_path, {})
    edit(path, 0, stdout="trained in 3.1 s\n")
    assert spread.printed(nbformat.read(path, as_version=4).cells[1]) == []
    assert problems(path, measured, tmp_path) == ""


def test_the_report_names_cells_whose_code_changed(lesson, tmp_path, monkeypatch, capsys):
    path, measured = lesson(first={"atol": 0.03})
    edit(path, 0, source="print(table(losses))")
    monkeypatch.setattr(spread, "ROOT", tmp_path)
    spread.report([path], measured)
    assert "cell 0 (id c000): its code changed since it was measured; it prints the numbers measured" in capsys.readouterr().out


def test_a_setting_not_measured_fails(lesson, tmp_path):
    path, measured = lesson(first={"atol": 0.03})
    del next(iter(measured["notebooks"].values()))["machines"][MACHINE]["aten-avx2"]
    assert "missing or changed: aten-avx2" in problems(path, measured, tmp_path)


def test_a_move_on_another_machine_must_be_covered_too(lesson, tmp_path):
    """MKL takes other code paths on AMD and Intel under the same setting: a number that held on one
    CPU and moved on another needs its tolerance, and a setting measured on either machine counts."""
    path, measured = lesson(first={"atol": 0.03})
    entry = next(iter(measured["notebooks"].values()))
    entry["machines"]["Other CPU, 2 CPUs"] = runs_on(path, {"nbval-alt": {"c001": printed(1.5, 0.26)}},
                                                     chosen={"nbval-alt"})
    del entry["machines"][MACHINE]["nbval-alt"]
    found = problems(path, measured, tmp_path)
    assert "cell 1 (id c001)" in found and "declares no tolerance" in found
    assert "nbval-alt [Other CPU, 2 CPUs]" in found and "missing" not in found


def test_measuring_on_a_new_machine_keeps_the_other_machines_runs(lesson, tmp_path, monkeypatch):
    path, measured = lesson(first={"atol": 0.03})
    monkeypatch.setattr(spread, "ROOT", tmp_path)
    monkeypatch.setattr(spread, "save", lambda m: None)
    monkeypatch.setattr(spread, "machine", lambda: "Other CPU, 2 CPUs")
    monkeypatch.setattr(spread, "run_setting", lambda nb, name, env, timeout: {
        "env": env, "seconds": 1.0, "moved": {}, "changed": {}, "errors": {}})
    assert spread.measure([path], {"here": {}}, measured, jobs=1, timeout=60) == 0
    machines = next(iter(measured["notebooks"].values()))["machines"]
    assert set(machines) == {MACHINE, "Other CPU, 2 CPUs"} and set(machines["Other CPU, 2 CPUs"]) == {"here"}
    assert len(machines[MACHINE]) == len(spread.settings())


def test_a_measurement_written_with_digests_takes_the_numbers_of_the_cells_it_still_matches(lesson, tmp_path):
    path, measured = lesson(first={"atol": 0.03})
    nb = nbformat.read(path, as_version=4)
    entry = next(iter(measured["notebooks"].values()))
    code = [c for c in nb.cells if c.cell_type == "code"]
    entry["cells"] = {c.id: {"index": i, "fingerprint": cell_fingerprint(c)} for i, c in enumerate(code)}
    entry["cells"]["c001"]["fingerprint"] = "0" * 16                     # that cell changed since
    (tmp_path / "spread.json").write_text(json.dumps(measured))
    cells = spread.load(tmp_path / "spread.json", root=tmp_path)["notebooks"]["notebooks/01_lesson.ipynb"]["cells"]
    assert cells["c000"]["numbers"] == ["0.05", "2.45", "0.5", "0.42"] and "numbers" not in cells["c001"]


# ---- what --declare writes -----------------------------------------------------------------------

@pytest.mark.parametrize("x, rounded", [("0.0301", "0.04"), ("0.03", "0.03"), ("0.96", "1"), ("12", "20"),
                                        ("0.00012", "0.0002")])
def test_round_up_to_one_significant_digit(x, rounded):
    assert spread.round_up_1(Decimal(x)) == Decimal(rounded)


def moves(text_before: str, text_after: str) -> list[spread.Move]:
    moved, changed = spread.compare_views({"stdout": [text_before]}, {"stdout": [text_after]})
    assert changed is None
    return [spread.Move("here", spread.one_number(m["stored"]), spread.one_number(m["new"]), m["line"]) for m in moved]


def test_declare_writes_margin_times_the_move_rounded_up():
    found = moves(printed(2.45, 0.42), printed(2.45, 0.43))
    proposed = spread.propose(found, split_numbers(printed(2.45, 0.42))[1])
    assert proposed == Tolerance(atol=spread.round_up_1(spread.MARGIN * Decimal("0.01")))


def test_declare_writes_a_relative_tolerance_when_the_sizes_differ():
    before, after = "loss 245.31, share 0.0213\n", "loss 245.36, share 0.0213\n"
    proposed = spread.propose(moves(before, after), split_numbers(before)[1])
    assert proposed.rtol and not proposed.atol
    assert not spread.tolerance_problems(proposed, moves(before, after))


def test_a_formatting_only_move_counts_one_unit_of_the_last_digit():
    (move,) = moves("gap -0.00\n", "gap 0.00\n")
    assert move.size == Decimal("0.01")


def test_declare_writes_only_metadata_and_what_it_writes_holds(lesson, tmp_path, monkeypatch):
    path, measured = lesson(second={"atol": 0.5})      # c000 undeclared but moved, c001 declared but never moved
    before = nbformat.read(path, as_version=4)
    notes = spread.declare(path, measured, root=tmp_path)
    after = nbformat.read(path, as_version=4)
    assert [c.get("outputs") for c in after.cells] == [c.get("outputs") for c in before.cells]
    assert [c.source for c in after.cells] == [c.source for c in before.cells]
    assert declaration(after.cells[1]) is not None and declaration(after.cells[2]) is None
    assert any("declared" in n for n in notes) and any("removed" in n for n in notes)
    assert problems(path, measured, tmp_path) == ""
    text = path.read_text()
    assert spread.declare(path, measured, root=tmp_path) == [] and path.read_text() == text  # idempotent


def test_the_stored_measurement_is_what_spread_writes():
    measured = spread.load()
    for name, entry in measured["notebooks"].items():
        assert set(entry) == {"cells", "machines"}, name
        for setting, machine, run in spread.runs_of(entry):
            assert {"env", "moved", "changed", "errors", "machine"} <= set(run), (name, setting)
            assert run["machine"] == machine, (name, setting)
            for moves_of_cell in run["moved"].values():
                for m in moves_of_cell:
                    spread.one_number(m["stored"]), spread.one_number(m["new"])


def test_a_setting_this_cpu_cannot_run_is_recorded_as_skipped():
    """PyTorch's AVX-512 kernels on a CPU without AVX-512 die at an illegal instruction: skipped, with why."""
    avx512 = spread.SETTINGS["aten-avx512"]
    assert "no AVX-512" in spread.unavailable(avx512, cpuinfo="flags\t: fpu sse2 avx2 fma\n")
    assert spread.unavailable(avx512, cpuinfo="flags\t: fpu sse2 avx2 avx512f avx512bw\n") is None
    assert spread.unavailable(spread.SETTINGS["aten-avx2"], cpuinfo="flags\t: fpu sse2\n") is None
