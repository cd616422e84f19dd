"""`make colab-twin`: the lessons on a twin of Colab's runtime, sliders moved through the kernel.

1. **Build** (kept in .cache/colab-twin until colab_runtime.txt, `BUILD_STEPS` or the Python change): a
   venv with Colab's versions of colab_runtime.txt's packages, from the package registries only, on
   Python 3.13 as on Colab (else 3.11 with the CPU torch wheel; the report says so), and its kernel spec.
2. **Reset** to the built state (its pip freeze), as a fresh Colab session.
3. **nbval on the twin's kernel**, every notebook of a copy of the working tree (tracked and untracked
   files), with the tolerance plugin and the sanitize file as ``make nbval``; the install cell installs
   the course from that copy (``COURSE_SOURCE``). As its plugin (``-p tools.platforms.colab_twin``)
   this module leaves out what Colab cannot print: myst-nb's glue records and pip's notes about this
   machine's package folders. The install cells must change none of Colab's packages (`KEEP`).
4. **Sliders**: each notebook again in nbclient, every live slider moved through the kernel
   (colab_frontend.py) and compared at each position with what its function computes afresh.
5. **Two processes** (ddp_probe.py) on Colab's torch: one DDP step and ``train`` under torchrun
   (gloo, CPU) equal one process.
6. **Restart rehearsal**: the install cell upgrades an older sentence-transformers quietly in a fresh
   kernel, and prints the one restart line after ``import sentence_transformers``.
7. **Report**: the versions the kernels ran with and what differs from Colab; exit status 1 on any problem.

    python -m tools.platforms.colab_twin [--notebooks 01,04] [--rebuild] [--timeout S]
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from nbformat import NotebookNode

from tools.notebooks.install_cell import (ENV_VAR, RESTART_LINE, apply, cell_text, first_code_cell,
                                          problems as cell_problems)
from tools.notebooks.execute import QUIET_ENV
from tools.notebooks.kernel_client import slice_polls
from tools.platforms import colab_frontend as frontend
from tools.platforms.pins import canonical, constraints

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "tools" / "platforms" / "colab_runtime.txt"
HOME = Path(os.environ.get("COLAB_TWIN_DIR", ROOT / ".cache" / "colab-twin"))
VENV = HOME / "venv"
KERNELS = HOME / "kernels"
KERNEL = "colab-twin"
SNAPSHOT = HOME / "built-freeze.txt"
STAMP = HOME / "built.json"
EXECUTED = HOME / "executed"  # the notebooks as the slider run executed them
BUILD_STEPS = 1  # bump when the build below changes: a kept twin is then rebuilt
COLAB_PYTHON = (3, 13)
FALLBACK_PYTHON = (3, 11)
FALLBACK_TORCH = "torch==2.13.0"  # the CPU wheel on this kind of machine's disk, for Python 3.11
# Colab's packages that the install cell must leave as they are (it may add others).
KEEP = ("torch", "sentence-transformers", "transformers", "numpy", "scikit-learn", "matplotlib",
        "ipywidgets", "widgetsnbextension", "jupyterlab-widgets", "notebook", "ipykernel", "ipython",
        "jupyter-client", "traitlets")
# For the restart rehearsal: a sentence-transformers below the course's range.
OLD_ST = "sentence-transformers==5.6.1"
COURSE = "similar-embeddings-course-labs"


# ---- 1. build ------------------------------------------------------------------------------

def _runs(python: str) -> tuple[int, ...] | None:
    """The (major, minor) of a Python that runs and can make a venv; None for one that does not."""
    try:
        out = subprocess.run([python, "-c", "import sys, venv, ensurepip; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):  # not there, a failing shim, no answer
        return None
    return tuple(map(int, out.stdout.split()))


def find_python() -> tuple[str, tuple[int, int]]:
    """Python 3.13 as Colab has, else 3.11 (the CPU torch wheel on disk)."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    for want in (COLAB_PYTHON, FALLBACK_PYTHON):
        name = f"python{want[0]}.{want[1]}"
        candidates = [os.environ.get("COLAB_TWIN_PYTHON", ""), name]
        candidates += sorted(glob.glob(str(pyenv / "versions" / f"{want[0]}.{want[1]}*" / "bin" / name)), reverse=True)
        for candidate in filter(None, candidates):
            found = shutil.which(candidate) or candidate
            if _runs(found) == want:
                return found, want
    raise SystemExit("colab-twin: no Python 3.13 (Colab's) nor 3.11 found; set COLAB_TWIN_PYTHON=/path/to/python")


def requirements(version: tuple[int, int]) -> list[str]:
    reqs = [f"{name}=={v}" for name, v in constraints(RUNTIME).items()]
    if version != COLAB_PYTHON:  # PyPI's torch 2.11 exists for 3.11 too, but only as a CUDA build to download
        reqs = [FALLBACK_TORCH if r.startswith("torch==") else r for r in reqs]
    return reqs


def pip(*args: str) -> None:
    cmd = [str(VENV / "bin" / "python"), "-m", "pip", *args, "-q"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"colab-twin: {' '.join(cmd[2:])} failed:\n{_less_notes(done.stderr)[-4000:]}")


def freeze() -> dict[str, str]:
    out = subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "list", "--format=json"],
                         capture_output=True, text=True, check=True).stdout
    return {canonical(p["name"]): p["version"] for p in json.loads(out)}


def build(rebuild: bool) -> tuple[float | None, tuple[int, int]]:
    """Build the twin unless a matching one is kept; return (seconds spent or None, Python version)."""
    python, version = find_python()
    want = {"runtime": hashlib.sha256(RUNTIME.read_bytes()).hexdigest(), "build_steps": BUILD_STEPS,
            "python": python, "version": list(version)}
    if not rebuild and STAMP.is_file() and json.loads(STAMP.read_text()) == want and (VENV / "bin" / "python").exists():
        return None, version
    start = time.monotonic()
    shutil.rmtree(HOME, ignore_errors=True)
    HOME.mkdir(parents=True)
    print(f"Building the twin in {HOME} with {python}: Colab's packages from the package registries")
    subprocess.run([python, "-m", "venv", str(VENV)], check=True)
    pip("install", "--upgrade", "pip>=24")
    pip("install", *requirements(version))
    # A kernel spec for the twin's Python (the driver runs in the course's .venv).
    spec = KERNELS / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(VENV / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Colab twin", "language": "python"}, indent=1))
    # Compile what the kernels import, once (a fresh Colab has compiled modules).
    subprocess.run([str(VENV / "bin" / "python"), "-c",
                    "import torch, transformers, sentence_transformers, sklearn, matplotlib.pyplot, ipywidgets, ipykernel"],
                   check=True, capture_output=True)
    SNAPSHOT.write_text(json.dumps(freeze(), indent=1, sort_keys=True))
    STAMP.write_text(json.dumps(want))
    return time.monotonic() - start, version


# ---- 2. reset --------------------------------------------------------------------------------

def reset() -> list[str]:
    """Put the twin back to its built state; return what had to change."""
    built = json.loads(SNAPSHOT.read_text())
    now = freeze()
    extra = sorted(set(now) - set(built))
    changed = sorted(n for n in built if now.get(n) != built[n])
    if extra:
        pip("uninstall", "-y", *extra)
    if changed:
        pip("install", "--no-deps", *[f"{n}=={built[n]}" for n in changed])
    return extra + changed


def source_copy() -> Path:
    """A checkout as a clone would have it (tracked and untracked files, not ignored ones)."""
    dest = HOME / "src"
    shutil.rmtree(dest, ignore_errors=True)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


# ---- 3. notebooks ----------------------------------------------------------------------------

#: myst-nb's glue records: the book build reads them. Colab has no myst-nb, so setup()'s stand-in
#: glues nothing there, and no Colab reader sees a record.
GLUE = "application/papermill.record/"
# pip's note about this machine's own local package folders (its pip configuration), not Colab's.
LOCAL_INDEX = re.compile(r"^WARNING: Location 'file:///opt/.*' is ignored")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


class _Skipped(tuple):
    """nbval's skipped keys, and every glue record (nbval asks ``key in skip_compare``)."""

    def __contains__(self, key) -> bool:
        return tuple.__contains__(self, key) or str(key).startswith(GLUE)


def _less_notes(text: str) -> str:
    """What pip said on stderr, less this machine's local-folder notes."""
    return "".join(line for line in text.splitlines(keepends=True) if not LOCAL_INDEX.match(line))


def _without_local_notes(outputs: list) -> list:
    """A cell's new outputs less this machine's pip notes; a stream left empty goes."""
    kept = []
    for out in outputs:
        if out.get("output_type") == "stream" and out.get("name") == "stderr":
            text = _less_notes("".join(out["text"]))
            if not text:
                continue
            out = NotebookNode({**out, "text": text})  # nbval reads outputs by attribute
        kept.append(out)
    return kept


@pytest.hookimpl(trylast=True)  # after the tolerance plugin's: it wraps that comparison
def pytest_configure(config):
    """The twin's nbval run (-p tools.platforms.colab_twin): nbval's comparison, behind the tolerance plugin,
    as Colab can print: glue records and this machine's pip notes left out."""
    from nbval.plugin import IPyNbCell

    compare = IPyNbCell.compare_outputs

    def compare_outputs(self, test, ref, skip_compare=None):
        return compare(self, _without_local_notes(test), ref, _Skipped(skip_compare or self.parent.skip_compare))

    IPyNbCell.compare_outputs = compare_outputs


def nbval(src: Path, paths: list[Path], timeout: int) -> int:
    """nbval on the twin's kernel, as make nbval runs it (the copy's own pytest settings load the
    tolerance plugin); its report goes to the output. Returns pytest's exit status."""
    env = {**os.environ, "JUPYTER_PATH": str(HOME)}  # the kernel spec in HOME/kernels
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tools.platforms.colab_twin",
                           "--nbval", "--nbval-kernel-name", KERNEL, "--nbval-cell-timeout", str(timeout),
                           "--nbval-sanitize-with", str(src / "tools" / "outputs" / "nbval_sanitize.cfg"),
                           *map(str, paths)], cwd=src, env=env).returncode


def install_changes() -> list[str]:
    """The install cell may add packages; it must not change Colab's."""
    built = json.loads(SNAPSHOT.read_text())
    now = freeze()
    problems = [f"the install cell changed {n} {built[n]} -> {now.get(n, 'removed')} (Colab's own)"
                for n in KEEP if n in built and now.get(n) != built[n]]
    if not problems:
        print(f"  the install cell added {len(set(now) - set(built))} packages Colab's set lacks here and changed "
              f"none of Colab's {len(KEEP)} pinned ones")
    return problems


def _client(nb, cwd: Path, timeout: int):
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    km = AsyncKernelManager(kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(KERNELS)]))
    return slice_polls(NotebookClient(nb, km=km, timeout=timeout, resources={"metadata": {"path": str(cwd)}},
                                      store_widget_state=True, record_timing=False, allow_errors=False))


def _text(outputs, name: str = "stdout") -> str:
    return "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream" and o.get("name") == name)


# ---- 4. sliders ------------------------------------------------------------------------------

async def run_notebook(path: Path, timeout: int) -> dict:
    """A notebook top to bottom in the twin's kernel, every live slider walked as each appears."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    client = _client(nb, path.parent, timeout)
    result = {"cells": 0, "sliders": 0, "positions": 0, "problems": []}
    async with client.async_setup_kernel(cleanup_kc=True):  # we made km: stop its kernel here
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            try:
                await client.async_execute_cell(cell, index)
            except Exception as err:  # CellExecutionError, timeouts, a dead kernel
                first = ANSI.sub("", str(err)).strip().splitlines()
                result["problems"].append(f"cell {index} failed: {first[-1] if first else type(err).__name__}")
                break
            result["cells"] += 1
            for s in frontend.sliders_in(client, cell):
                try:
                    await frontend.walk(client, s, timeout)
                except Exception as err:  # a move the kernel never answered, a dead kernel
                    s.problems.append(f"{s.name}: the walk stopped: {type(err).__name__}: {err}")
                result["sliders"] += 1
                result["positions"] += s.checked
                result["problems"] += [f"cell {index}: {p}" for p in s.problems]
    EXECUTED.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, EXECUTED / path.name)  # to read what the twin printed (not the committed outputs)
    return result


# ---- 5. two processes ------------------------------------------------------------------------

def ddp_check(src: Path, timeout: int) -> list[str]:
    """tools/platforms/ddp_probe.py's whole check in the twin's Python (its torch). The course is
    installed as the install cell installs it, if no notebook did."""
    if COURSE not in freeze():
        pip("install", f"{COURSE} @ file://{src}")
    folder = HOME / "ddp"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TQDM_DISABLE": "1"}
    try:
        done = subprocess.run([str(VENV / "bin" / "python"), "-m", "tools.platforms.ddp_probe", str(folder)],
                              cwd=src, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return [f"two processes: no answer within {timeout} s"]
    print(textwrap.indent(done.stdout.strip(), "  "))
    if not done.returncode:
        return []
    return [line for line in done.stdout.splitlines() if line.startswith("two processes on torch")] or [
        f"two processes: the check exited {done.returncode}: {done.stderr.strip()[-800:]}"]


# ---- 6. restart rehearsal --------------------------------------------------------------------

async def rehearse_restart(cwd: Path, cell_source: str) -> list[str]:
    """An upgrade before any import works quietly; after one, the cell says restart, once."""
    import nbformat

    problems = []
    old = OLD_ST.split("==")[1]
    for imported_first in (False, True):
        pip("install", "--no-deps", OLD_ST)
        cells = ([nbformat.v4.new_code_cell("import sentence_transformers")] if imported_first else [])
        cells += [nbformat.v4.new_code_cell(cell_source),
                  nbformat.v4.new_code_cell("from importlib.metadata import version\n"
                                            "print(version('sentence-transformers'))")]
        nb = nbformat.v4.new_notebook(cells=cells)
        client = _client(nb, cwd, 900)
        async with client.async_setup_kernel(cleanup_kc=True):  # we made km: stop its kernel here
            for index, cell in enumerate(nb.cells):
                await client.async_execute_cell(cell, index)
        outputs = nb.cells[-2].outputs
        printed = [line for line in (_text(outputs) + "\n" + _less_notes(_text(outputs, "stderr"))).splitlines()
                   if line.strip()]
        upgraded = _text(nb.cells[-1].outputs).strip()
        if upgraded == old:
            problems.append(f"restart rehearsal: the install cell left sentence-transformers at {old}")
        if imported_first:
            if len(printed) != 1 or RESTART_LINE not in printed[0]:
                problems.append(f"restart rehearsal: after an import, the cell printed {printed!r}, "
                                "not one restart line")
            else:
                print(f"  after `import sentence_transformers`: {printed[0]}")
        elif printed:
            problems.append(f"restart rehearsal: with nothing imported, the cell printed {printed!r}")
        else:
            print(f"  sentence-transformers {old} -> {upgraded} before any import: the cell printed nothing")
    return problems


# ---- 7. report -------------------------------------------------------------------------------

def differences(version: tuple[int, int], ran: dict) -> list[str]:
    want = constraints(RUNTIME)
    if version != COLAB_PYTHON:
        out = [f"Python {version[0]}.{version[1]}, not Colab's {COLAB_PYTHON[0]}.{COLAB_PYTHON[1]}: the CPU "
               f"{FALLBACK_TORCH} wheel on disk stands in for Colab's torch {want['torch']}"]
    else:
        out = [f"torch {want['torch']} is PyPI's CUDA 13 build running on this CPU (Colab's is +cu128, "
               "on a GPU when one is chosen): no CUDA kernel runs here"]
    out += [f"{name} {ran[name]}, not Colab's {want[name]}" for name in want
            if name != "torch" and ran.get(name) is not None and ran[name].split("+")[0] != want[name]]
    return out + ["the packages Colab preinstalls beyond colab_runtime.txt, torch's CUDA libraries, pip and setuptools; "
                  "Colab's google.colab frontend (here nbclient's widget mimic, driven by colab_frontend.py); the hub "
                  "(HF_HUB_OFFLINE and the Makefile's quiet settings are set)"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebooks", nargs="+", default=[], help="prefixes (01 04, or 01,04); default: all")
    parser.add_argument("--rebuild", action="store_true", help="build the twin again even if one is kept")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell (and per slider move)")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # in order with the subprocesses' output
    for key, value in QUIET_ENV.items():  # as make runs it: no hub, no progress bars (run alone too)
        os.environ.setdefault(key, value)

    built_s, version = build(args.rebuild)
    print(f"Twin: {'built in %.0f s' % built_s if built_s is not None else 'kept from an earlier run'} ({HOME})")
    if undone := reset():
        print(f"Reset to the built state: {len(undone)} packages removed or put back")
    src = source_copy()
    os.environ[ENV_VAR] = f"file://{src}"  # the install cell installs from the copy, not the URL
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # ipykernel 6's debugger, on 3.13

    wanted = [p for item in args.notebooks for p in item.split(",") if p]
    paths = [p for p in sorted((src / "notebooks").glob("*.ipynb")) if not wanted or p.name.startswith(tuple(wanted))]
    # The twin runs the canonical install cell (tools/notebooks/install_cell.py); a notebook whose
    # own differs is named (its test fails too) and runs with the canonical one here.
    stale = [p for p in paths if cell_problems(p, cell_text()) and first_code_cell(json.loads(p.read_text()))]
    for p in stale:
        apply(p, cell_text())
    if stale:
        print(f"Not yet the canonical install cell, run with it here: {', '.join(p.stem for p in stale)} "
              "(python -m tools.notebooks.install_cell --apply)")
    print(f"nbval on the twin's kernel ({KERNEL}): {len(paths)} notebooks")
    problems = []
    if compared := nbval(src, paths, args.timeout):
        problems.append(f"nbval on the twin's kernel failed (exit {compared}): a cell prints other text than the "
                        "committed output, beyond any declared tolerance, or fails (its report is above)")
    problems += install_changes()
    positions = 0
    for path in paths:
        started = time.monotonic()
        result = asyncio.run(run_notebook(path, args.timeout))
        positions += result["positions"]
        problems += [f"{path.stem}: {p}" for p in result["problems"]]
        print(f"{path.stem}: {time.monotonic() - started:.0f} s, {result['cells']} cells"
              + (f", {result['positions']} slider positions checked on {result['sliders']} sliders" if result["sliders"] else "")
              + (f", {len(result['problems'])} problem(s)" if result["problems"] else ""))
    now = freeze()  # what the kernels ran with
    ran = {"python": "%d.%d" % version, **{name: now.get(name) for name in (*KEEP, COURSE)}}

    print("Two processes (torchrun, gloo) against one, on the twin's torch:")
    problems += ddp_check(src, args.timeout)
    print("Restart rehearsal (the install cell after an upgrade):")
    try:
        problems += asyncio.run(rehearse_restart(src / "notebooks", cell_text()))
    except Exception as err:  # a cell of the rehearsal failed
        problems.append(f"restart rehearsal: {type(err).__name__}: {ANSI.sub('', str(err))[-500:]}")
    reset()

    print("\nColab twin: versions the kernels ran with")
    for name, got in ran.items():
        print(f"  {name:32} {got or '-'}")
    print("\nWhat differs from Colab:")
    for line in differences(version, ran):
        print(f"  - {line}")
    if problems:
        print(f"\ncolab-twin: {len(problems)} problem(s):")
        for p in problems:
            print(f"  {p}")
        return 1
    print(f"\ncolab-twin: {len(paths)} notebooks ran top to bottom and printed what is stored (within declared "
          f"tolerances); {positions} slider positions matched what the code computes; two processes trained as one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
