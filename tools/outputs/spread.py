"""Measure how far each notebook cell's printed numbers move on other CPUs: `make spread` (--help;
tests/README.md, "Writing a stable output", has the rule and its commands). Each notebook runs under nbval,
niced, once per setting (a knob that makes this machine pick the kernels another CPU would), with this module
loaded as the plugin that records what each cell printed. spread.json keeps the printed numbers that moved, by
notebook, machine, setting and cell id; check_notebook holds a notebook's tolerances to them.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import platform
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from pathlib import Path

import nbformat
import pytest
from nbval.plugin import find_comment_markers, find_metadata_tags, get_sanitize_patterns

from tools.notebooks.execute import QUIET_ENV, write_notebook
from tools.outputs.nbval_tolerance import (
    KEY,
    SANITIZE_FILE,
    DeclarationError,
    Number,
    Tolerance,
    declaration,
    line_at,
    mismatch,
    output_pairs,
    split_numbers,
)

ROOT = Path(__file__).resolve().parents[2]
MEASUREMENT = Path(__file__).resolve().parent / "spread.json"

MARGIN = Decimal(3)   # a tolerance covers 3 x the largest measured move
FAR = Decimal(10)     # ... and stays within 10 x it
DIGITS = Decimal(10)  # a moved number's allowance stays below 10 units of its last digit
TIMEOUT = 3600        # seconds one notebook run may take

# The knobs (tests/README.md); "nbval-alt", the second nbval pass, is added from the Makefile's ALT_CPU.
SETTINGS: dict[str, dict[str, str]] = {
    "here": {},
    "aten-default": {"ATEN_CPU_CAPABILITY": "default"},
    "aten-avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "aten-avx512": {"ATEN_CPU_CAPABILITY": "avx512"},
    "threads-1": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
    "threads-2": {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2"},
    "mkl-sse4_2": {"MKL_ENABLE_INSTRUCTIONS": "SSE4_2"},
    "mkl-avx2": {"MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "mkl-compatible": {"MKL_CBWR": "COMPATIBLE"},
    "openblas-prescott": {"OPENBLAS_CORETYPE": "Prescott"},
    "openblas-haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "conservative": {"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                     "MKL_CBWR": "COMPATIBLE", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
                     "OPENBLAS_CORETYPE": "Prescott"},
}
# Each run starts without any knob the environment sets, so that it measures its setting alone.
KNOBS = {k for env in SETTINGS.values() for k in env} | {"MKL_DEBUG_CPU_TYPE", "OPENBLAS_VERBOSE",
                                                        "NUMEXPR_NUM_THREADS"}


def alt_cpu(makefile: Path = ROOT / "Makefile") -> dict[str, str]:
    """The Makefile's ALT_CPU (the second nbval pass), as a dict."""
    text = makefile.read_text(encoding="utf-8").replace("\\\n", " ")
    found = re.search(r"^ALT_CPU\s*:?=(.*)$", text, re.MULTILINE)
    if not found or "=" not in found.group(1):
        raise SystemExit(f"{makefile}: no ALT_CPU := NAME=value ... line (the setting of make nbval-alt)")
    return dict(word.split("=", 1) for word in shlex.split(found.group(1)))


def settings() -> dict[str, dict[str, str]]:
    return {**SETTINGS, "nbval-alt": alt_cpu()}


# ---- moves -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Move:
    """One printed number that moved under one setting."""
    setting: str
    stored: Number
    new: Number
    line: str
    at: str = ""  # which number of which output

    @property
    def size(self) -> Decimal:
        """|new - stored|; a move by formatting only (-0.00 and 0.00) counts one unit of its last digit."""
        return abs(self.new.value - self.stored.value) or self.stored.unit

    @property
    def relative(self) -> Decimal | None:
        return self.size / abs(self.stored.value) if self.stored.value else None

    def __str__(self) -> str:
        return f"{self.stored.raw} -> {self.new.raw} under {self.setting} (line {self.line.strip()!r})"


def one_number(raw: str) -> Number:
    (number,) = split_numbers(raw)[1]  # a ValueError unless exactly one
    return number


def compare_views(stored: dict, new: dict) -> tuple[list[dict], str | None]:
    """The numbers that moved (as JSON records) and, if the text changed otherwise, how."""
    pairs = output_pairs(stored, new)
    if pairs is None:
        return [], f"outputs { {k: len(v) for k, v in stored.items()} } became { {k: len(v) for k, v in new.items()} }"
    moved = []
    for key, i, s, n in pairs:
        texts = isinstance(s, str) and isinstance(n, str)
        why = mismatch(s, n) if texts else ("changed" if s != n else None)
        if why:
            return [], f"{key}, output {i + 1}: {why}"
        for j, (a, b) in enumerate(zip(split_numbers(s)[1], split_numbers(n)[1]) if texts else []):
            if a.raw != b.raw:
                moved.append({"output": key, "at": [i, j], "line": line_at(s, a.start), "stored": a.raw, "new": b.raw})
    return moved, None


def analyse(record: dict) -> dict:
    """One setting's run: for each cell id, the numbers that moved, the text that changed, the error."""
    out: dict = {"moved": {}, "changed": {}, "errors": {}}
    for cell in record["cells"]:
        cid = cell["id"]
        if cell.get("error"):
            out["errors"][cid] = cell["error"]
        elif "stored" in cell and "new" in cell:
            moved, changed = compare_views(cell["stored"], cell["new"])
            if changed:
                out["changed"][cid] = changed
            elif moved:
                out["moved"][cid] = moved
    return out


def runs_of(measured: dict) -> list[tuple[str, str, dict]]:
    """Every stored run of a notebook, `(setting [machine], setting, run)`, over every machine measured."""
    return [(f"{setting} [{machine}]", setting, run) for machine, runs in sorted(measured.get("machines", {}).items())
            for setting, run in sorted(runs.items())]


def moves_of(measured: dict, cid: str) -> list[Move]:
    """Every move of a cell's numbers, over the stored settings of every machine."""
    return [Move(label, one_number(m["stored"]), one_number(m["new"]), m["line"], f"{m['output']}{m['at']}")
            for label, _, run in runs_of(measured) for m in run.get("moved", {}).get(cid, [])]


def found_in(measured: dict, what: str, cid: str) -> dict[str, str]:
    """The runs in which a cell's words changed (what="changed") or it failed ("errors"), by run name."""
    return {label: run[what][cid] for label, _, run in runs_of(measured) if cid in run.get(what, {})}


# ---- the rule ----------------------------------------------------------------------------------

def moved_summary(moves: list[Move]) -> str:
    """`2 printed numbers moved under 3 settings (a, b, c), the largest ... by 0.01`."""
    count = len({m.at or (m.stored.raw, m.line) for m in moves})
    under = sorted({m.setting for m in moves})
    largest = max(moves, key=lambda m: m.size)
    return (f"{count} printed number{'s' if count > 1 else ''} moved under {len(under)} setting"
            f"{'s' if len(under) > 1 else ''} ({', '.join(under)}), the largest {largest} by {largest.size}")


def round_up_1(x: Decimal) -> Decimal:
    """Round up to one significant digit: 0.0301 -> 0.04, 0.03 -> 0.03, 0.96 -> 1."""
    exponent = x.adjusted()
    return Decimal(math.ceil(x.scaleb(-exponent))).scaleb(exponent).normalize()


@lru_cache(maxsize=1)
def _sanitizers() -> list[tuple[str, str]]:
    return get_sanitize_patterns(SANITIZE_FILE.read_text(encoding="utf-8"))


def sanitize(text: str) -> str:
    """The text as nbval compares it: the sanitize file's patterns applied in order."""
    for pattern, replace in _sanitizers():
        text = re.sub(pattern, replace, text)
    return text


def ignored(cell) -> bool:
    """nbval does not compare this cell's output: its comment markers or tags, as nbval reads them."""
    options = dict(find_metadata_tags(cell.get("metadata", {})))
    options.update(find_comment_markers("".join(cell.get("source", ""))))  # the comments win, as in nbval
    return options.get("check") is False or options.get("skip", False)


def cell_numbers(cell) -> list[Number]:
    """The numbers nbval compares in a cell's stored outputs (none for a cell whose output it ignores)."""
    numbers = []
    for output in [] if ignored(cell) else cell.get("outputs", []):
        texts = [output.get("text", "")] + [v for m, v in output.get("data", {}).items() if m.startswith("text/")]
        for text in texts:
            numbers += split_numbers(sanitize("".join(text) if isinstance(text, list) else text))[1]
    return numbers


def printed(cell) -> list[str]:
    """The numbers a cell prints, as printed: what its spread is measured on."""
    return [n.raw for n in cell_numbers(cell)]


def source_digest(cell) -> str:
    source = cell.get("source", "")
    return hashlib.sha256(("".join(source) if isinstance(source, list) else source).encode()).hexdigest()[:16]


def propose(moves: list[Move], numbers: list[Number]) -> Tolerance | None:
    """The tolerance --declare writes for a cell: MARGIN x its largest move, rounded up to one
    significant digit; absolute or relative, whichever gives its numbers the smaller allowance
    (geometric mean); integers included when an integer moved."""
    if not moves:
        return None
    integers = any(m.stored.integer for m in moves)
    candidates = [Tolerance(atol=round_up_1(MARGIN * max(m.size for m in moves)), integers=integers)]
    if all(m.relative is not None for m in moves):
        candidates.append(Tolerance(rtol=round_up_1(MARGIN * max(m.relative for m in moves)), integers=integers))
    applies = [n.value for n in numbers if (integers or not n.integer) and n.value] or [m.stored.value for m in moves]
    return min(candidates, key=lambda t: sum(math.log10(t.allowance(v)) for v in applies if t.allowance(v)))


def tolerance_problems(tolerance: Tolerance | None, moves: list[Move]) -> list[str]:
    """Why a declared tolerance (or its lack) does not fit the measured moves: what --declare fixes."""
    if not moves:
        if tolerance is not None:
            return [f"declares a tolerance ({tolerance}) but no number moved under any setting: remove it "
                    f"(a cell that never moved is compared exactly)"]
        return []
    if tolerance is None:
        return [f"{moved_summary(moves)}, and it declares no tolerance: "
                f"run make spread SPREAD_ARGS=\"--no-run --declare\", or print fewer digits"]
    problems = []
    for m in moves:
        if not tolerance.applies_to(m.stored):
            problems.append(f"integer {m} moved: declare \"integers\": true")
        elif tolerance.allowance(m.stored.value) < MARGIN * m.size:
            problems.append(f"its tolerance ({tolerance}) allows {tolerance.allowance(m.stored.value)} where "
                            f"{m} moved by {m.size}: it must allow {MARGIN} x that")
    covered = [m for m in moves if tolerance.applies_to(m.stored)]
    if covered:
        widest = max(m.size for m in covered)
        if tolerance.atol > FAR * widest:
            problems.append(f"atol {tolerance.atol} is more than {FAR} x the largest move measured, {widest}: "
                            f"it checks nothing")
        relative = [m.relative for m in covered if m.relative is not None]
        if tolerance.rtol and relative and tolerance.rtol > FAR * max(relative):
            problems.append(f"rtol {tolerance.rtol} is more than {FAR} x the largest relative move measured, "
                            f"{max(relative):.2g}: it checks nothing")
    if tolerance.integers and not any(m.stored.integer for m in moves):
        problems.append("declares \"integers\": true, but no integer moved: remove it")
    return problems


def digit_problems(tolerance: Tolerance | None, moves: list[Move]) -> list[str]:
    """A moved number printed to more digits than its tolerance leaves meaningful."""
    problems = set()
    for m in moves if tolerance is not None else []:
        allowance = tolerance.allowance(m.stored.value)
        if tolerance.applies_to(m.stored) and not m.stored.integer and allowance >= DIGITS * m.stored.unit:
            problems.add(f"{m.stored.raw} is printed to {m.stored.unit}, but its tolerance allows {allowance} "
                         f"({allowance / m.stored.unit:.0f} units of its last digit): print it to "
                         f"{Decimal(1).scaleb(allowance.adjusted())} (line {m.line.strip()!r})")
    return sorted(problems)


def check_cell(cell, measured: dict | None) -> list[str]:
    """Why a cell breaks the rule under its notebook's measurement (None: none that holds); empty when it holds."""
    measured = measured or {}
    moves = moves_of(measured, cell.id)
    changed, errors = (found_in(measured, what, cell.id) for what in ("changed", "errors"))
    problems = []
    if errors:
        problems.append(f"fails under {', '.join(sorted(errors))}: {next(iter(errors.values()))}")
    if changed:
        problems.append(f"its words change under {', '.join(sorted(changed))} ({next(iter(changed.values()))}): "
                        f"a tolerance covers numbers only; print an aggregate over seeds, fewer digits or a figure")
    try:
        tolerance = declaration(cell)
    except DeclarationError as err:
        return problems + [str(err)]
    if ignored(cell):
        if tolerance is not None:
            problems.append("declares a tolerance, but nbval ignores its output: remove one of the two")
        return problems
    return problems + tolerance_problems(tolerance, moves) + digit_problems(tolerance, moves)


def check_notebook(path: Path, measurement: dict, root: Path = ROOT) -> list[str]:
    """Every way the notebook breaks the rule, or its measurement is missing or stale: a cell printing
    other numbers than measured asks for `make spread` on its notebook; one printing none needs none."""
    name = path.resolve().relative_to(root.resolve()).as_posix()
    again = f"run make spread SPREAD_ARGS=\"--notebook {path.stem}\""
    try:
        code = code_cells(path)
    except ValueError as err:
        return [f"{name}: {err}"]
    measured = measurement.get("notebooks", {}).get(name) or {"cells": {}, "machines": {}}
    problems = []
    for i, cell in enumerate(code):
        numbers, entry = printed(cell), measured["cells"].get(cell.id, {})
        if numbers and entry.get("numbers") != numbers:
            problems.append(f"{name}, cell {i} (id {cell.id}) {difference(numbers, entry.get('numbers'))}: {again}")
    if problems:
        return problems
    measuring = any(printed(c) for c in code)  # a notebook printing no number needs no measurement
    want = settings()
    have = {setting for _, setting, run in runs_of(measured) if run.get("env") == want.get(setting)}
    missing = [s for s in want if s not in have]
    if measuring and missing:
        return [f"{name}: measured under {len(want) - len(missing)} of {len(want)} settings; "
                f"missing or changed: {', '.join(missing)}: {again}"]
    for i, cell in enumerate(code):
        holds = measuring and measured["cells"].get(cell.id, {}).get("numbers") == printed(cell)
        problems += [f"{name}, cell {i} (id {cell.id}): {p}" for p in check_cell(cell, measured if holds else None)]
    return problems


def difference(now: list[str], was: list[str] | None) -> str:
    """`prints other numbers than measured (number 2 is 2.47, was 2.45)`; `prints 1 number (300), not measured`."""
    if was is None:
        shown = ", ".join(now[:4]) + (", ..." if len(now) > 4 else "")
        return f"prints {len(now)} number{'s' if len(now) != 1 else ''} ({shown}), not measured"
    k = next((k for k, (a, b) in enumerate(zip(now, was)) if a != b), None)
    how = f"number {k + 1} is {now[k]}, was {was[k]}" if k is not None else f"{len(now)} numbers, were {len(was)}"
    return f"prints other numbers than measured ({how})"


# ---- measuring ------------------------------------------------------------------------------------

def run_setting(notebook: Path, name: str, env_extra: dict[str, str], timeout: float = TIMEOUT) -> dict:
    """One nbval run of a notebook under one setting: what every cell printed."""
    env = {k: v for k, v in os.environ.items() if k not in KNOBS}
    env = {**QUIET_ENV, **env, **env_extra}
    with tempfile.TemporaryDirectory(prefix="spread-") as tmp:
        record = Path(tmp) / "record.json"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "-p", "tools.outputs.nbval_tolerance", "-p", "tools.outputs.spread",
               "--spread-record", str(record), "--nbval", "--nbval-current-env",
               "--nbval-sanitize-with", str(SANITIZE_FILE), str(notebook)]
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        try:
            log, _ = proc.communicate(timeout=timeout)
        except BaseException:  # a timeout or Ctrl-C: stop the run with its kernel (its own process group)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        if not record.exists():
            raise RuntimeError(f"{notebook.name} under {name}: nbval recorded nothing (exit {proc.returncode}):\n"
                               + "\n".join(log.splitlines()[-30:]))
        cells = json.loads(record.read_text(encoding="utf-8"))
    return {"env": env_extra, **analyse(cells)}


@lru_cache(maxsize=1)
def _cpuinfo() -> str:
    with contextlib.suppress(OSError):
        return Path("/proc/cpuinfo").read_text()
    return ""


def unavailable(env_extra: dict[str, str], cpuinfo: str | None = None) -> str | None:
    """Why this CPU cannot run a setting, or None: PyTorch's AVX-512 kernels on a CPU without AVX-512
    stop at an illegal instruction, as no reader's machine runs, so the setting is recorded as skipped."""
    cpuinfo = _cpuinfo() if cpuinfo is None else cpuinfo
    if env_extra.get("ATEN_CPU_CAPABILITY") == "avx512" and cpuinfo and " avx512f" not in cpuinfo:
        return "this CPU has no AVX-512 (PyTorch's avx512 kernels stop at an illegal instruction)"
    return None


def machine() -> str:
    cpu = re.search(r"^model name\s*:(.*)$", _cpuinfo(), re.MULTILINE)
    return f"{cpu.group(1).strip() if cpu else platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"


def find_notebooks(names: list[str]) -> list[Path]:
    every = sorted((ROOT / "notebooks").glob("*.ipynb"))
    chosen = []
    for name in names:
        hits = [p for p in every if p.stem.startswith(Path(name).stem)]
        if len(hits) != 1:
            raise SystemExit(f"--notebook {name}: {'no' if not hits else len(hits)} notebooks match "
                             f"({', '.join(p.name for p in every)})")
        chosen.append(hits[0])
    return chosen or every


def load(path: Path = MEASUREMENT) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"notebooks": {}}


def save(measurement: dict, path: Path = MEASUREMENT, root: Path = ROOT) -> None:
    """Write the measurement, without the notebooks that are gone (renamed or removed)."""
    for name in [name for name in measurement["notebooks"] if not (root / name).is_file()]:
        del measurement["notebooks"][name]
        print(f"{name}: gone from the checkout; its measurement is dropped")
    tmp = path.with_suffix(".tmp")  # an interrupted write leaves the last measurement whole
    tmp.write_text(json.dumps(measurement, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def code_cells(path: Path) -> list:
    """A notebook's code cells, which the measurement keys on their ids (nbformat 4.5 gives every cell one)."""
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    if not all(c.get("id") for c in cells):
        raise ValueError("cells without ids: save it as nbformat 4.5 (nbformat.v4.upgrade, or Jupyter)")
    return cells


def records(path: Path) -> dict[str, dict]:
    """Each code cell as measured: its place, a digest of its source, the numbers it prints."""
    return {c.id: {"index": i, "source": source_digest(c), "numbers": printed(c)}
            for i, c in enumerate(code_cells(path))}


def same_numbers(a: dict[str, dict], b: dict[str, dict]) -> bool:
    """Two records of a notebook's cells print the same numbers (their code may differ)."""
    return {cid: c.get("numbers") for cid, c in a.items()} == {cid: c.get("numbers") for cid, c in b.items()}


def measure(notebooks: list[Path], chosen: dict[str, dict[str, str]], measurement: dict) -> int:
    """Run every notebook under every chosen setting; store what moved. Returns how many runs failed."""
    failed, here = 0, machine()
    for path in notebooks:
        name = path.relative_to(ROOT).as_posix()
        cells = records(path)
        entry = measurement["notebooks"].get(name) or {"machines": {}}
        if entry["machines"] and not same_numbers(entry["cells"], cells):
            print(f"{name}: its cells print other numbers than when last measured; the old measurement is dropped "
                  f"(every machine's: {', '.join(sorted(entry['machines']))})")
            entry = {"machines": {}}
        entry["cells"] = cells
        print(f"{name}: {len(chosen)} settings, {len(cells)} code cells, on {here}", flush=True)
        for setting, env in chosen.items():
            why = unavailable(env)
            try:
                run = ({"env": env, "skipped": why, "moved": {}, "changed": {}, "errors": {}}
                       if why else run_setting(path, setting, env))
            except (RuntimeError, subprocess.TimeoutExpired) as err:
                failed += 1
                print(f"  {setting}: FAILED: {err}", flush=True)
                continue
            run.update(machine=here, when=time.strftime("%Y-%m-%d %H:%M"))
            entry["machines"].setdefault(here, {})[setting] = run
            found = "; ".join(f"{what} in cells {', '.join(str(cells[c]['index']) for c in run[what])}"
                              for what in ("moved", "changed", "errors") if run[what])
            print(f"  {setting:<18} {f'skipped: {why}' if why else found or 'nothing moved'}", flush=True)
        if records(path) != cells:
            print(f"{name}: the notebook changed while it was measured; its measurement is not stored")
            failed += 1
            continue
        measurement["notebooks"][name] = entry
        save(measurement)
    return failed


def report(notebooks: list[Path], measurement: dict) -> None:
    """Where each notebook was measured, the cells whose code changed since, and what breaks the rule."""
    for path in notebooks:
        name = path.relative_to(ROOT).as_posix()
        measured = measurement["notebooks"].get(name, {"cells": {}, "machines": {}})
        machines = ", ".join(f"{m} ({len(runs)} settings)" for m, runs in sorted(measured["machines"].items()))
        print(f"{name}: measured on {machines or 'no machine'}")
        now = records(path)
        for cid, info in measured["cells"].items():
            if cid in now and now[cid]["source"] != info.get("source") and now[cid]["numbers"] == info.get("numbers"):
                print(f"  cell {now[cid]['index']} (id {cid}): its code changed since it was measured; "
                      f"it prints the numbers measured")
        for problem in check_notebook(path, measurement, ROOT):
            print(f"  {problem}")


def declare(path: Path, measurement: dict, root: Path = ROOT) -> list[str]:
    """Write each cell's tolerance from the measurement into the notebook's cell metadata: one that fits
    the measured moves is kept, one that does not is replaced, one on a cell that never moved is removed."""
    name = path.resolve().relative_to(root.resolve()).as_posix()
    measured = measurement["notebooks"].get(name)
    if measured is None or not same_numbers(measured.get("cells", {}), records(path)):
        return [f"{name}: no current measurement to declare from: "
                f"run make spread SPREAD_ARGS=\"--notebook {path.stem}\""]
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    notes = []  # one per cell changed
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        where = f"{name}, cell {i} (id {cell.id})"
        moves = [] if ignored(cell) else moves_of(measured, cell.id)
        try:
            current = declaration(cell)
            fits = not tolerance_problems(current, moves)
        except DeclarationError:
            current, fits = None, False
        if not fits:
            proposed = propose(moves, cell_numbers(cell))
            if proposed is None:
                cell.metadata.pop(KEY, None)
                notes.append(f"{where}: tolerance removed (no number moved)")
            else:
                cell.metadata[KEY] = proposed.as_metadata()
                notes.append(f"{where}: declared {proposed}" + (f" (was {current})" if current else ""))
    if notes:
        write_notebook(nb, path)
    return notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.outputs.spread", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notebook", action="append", default=[], metavar="NAME",
                        help="a notebook (path, name or the start of its name: 03); repeat for more; default all")
    parser.add_argument("--settings", default="", metavar="A,B",
                        help=f"comma-separated settings, of {', '.join(SETTINGS)}, nbval-alt; default all")
    parser.add_argument("--no-run", action="store_true", help="run nothing: use the stored measurement")
    parser.add_argument("--declare", action="store_true",
                        help="write each cell's tolerance from the measurement into the notebook (metadata only)")
    args = parser.parse_args(argv)

    every = settings()
    notebooks = find_notebooks(args.notebook)
    names = [s.strip() for s in args.settings.split(",") if s.strip()] or list(every)
    unknown = [s for s in names if s not in every]
    if unknown:
        parser.error(f"unknown settings {unknown}; known: {', '.join(every)}")
    measurement = load()
    if any(not (ROOT / name).is_file() for name in measurement["notebooks"]):
        save(measurement)  # drops the notebooks that are gone
    failed = 0
    if not args.no_run:
        os.nice(15)  # a background job on a busy machine
        failed = measure(notebooks, {s: every[s] for s in names}, measurement)  # stores each notebook measured
    for path in notebooks if args.declare else []:
        for note in declare(path, measurement):
            print(note)
    report(notebooks, measurement)  # what is left to fix by hand
    return 1 if failed else 0


# ---- the pytest plugin each run loads (-p tools.outputs.spread --spread-record FILE) --------------

_cells: list[dict] = []


def pytest_addoption(parser):
    parser.addoption("--spread-record", metavar="FILE", default=None,
                     help="write what each notebook cell printed, as nbval compared it, to FILE (JSON)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Record, never change, a cell's result: the outputs as nbval compared them, or its error."""
    report = yield
    if call.when == "call" and hasattr(item, "cell_num"):
        entry = {"id": item.cell.get("id"), "index": item.cell_num, "skipped": report.skipped}
        view = getattr(item, "nbval_text_view", None)  # set by nbval_tolerance's comparison
        if view is not None:
            entry.update(view)
        elif call.excinfo is not None and not report.skipped:
            raised = [o for o in getattr(item, "test_outputs", None) or [] if o.get("output_type") == "error"]
            error = (f"{raised[-1].get('ename')}: {raised[-1].get('evalue')}" if raised
                     else f"{call.excinfo.typename}: {str(call.excinfo.value).strip()}")
            entry["error"] = error[:500]
        _cells.append(entry)
    return report


def pytest_sessionfinish(session, exitstatus):
    path = session.config.getoption("spread_record")
    if path:
        Path(path).write_text(json.dumps({"cells": _cells}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
