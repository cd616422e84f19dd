"""`make colab-twin`: the lessons on a twin of Colab's runtime, sliders moved through the kernel.

1. **Build** (once; kept in .cache/colab-twin until tools/platforms/colab_runtime.txt, this file's build
   steps or the Python change): a virtual environment with Colab's versions of the packages in
   tools/platforms/colab_runtime.txt (the lesson and widget stacks, and Colab's versions of everything else
   they and the course need that Colab preinstalls), from the package registries only. Python 3.13 as on Colab (the
   first ``python3.13`` that runs, or pyenv's); without one, the nearest Python that has the CPU
   torch wheel (3.11, torch 2.13.0), and the report says so. A kernel spec points at it.
2. **Reset**: every run starts from the built state (pip freeze taken after the build): what a
   previous run installed is removed, what it changed is put back, as on a fresh Colab session.
3. **nbval on the twin's kernel**, every notebook, from a copy of the working tree (tracked and
   untracked files, not ignored ones): ``pytest --nbval --nbval-kernel-name colab-twin`` with
   the tolerance plugin and the sanitize file, as ``make nbval`` compares. The first code cell
   installs the course exactly as on Colab, from that copy instead of the repository URL: the
   cell reads ``COURSE_SOURCE``. Loaded as a plugin (``-p tools.platforms.colab_twin``), this module
   leaves out of the comparison what Colab cannot print: myst-nb's glue records (Colab has no
   myst-nb) and pip's notes about this machine's local package folders. Then the twin checks
   that the install cells changed none of Colab's packages (they may add what Colab lacks).
4. **Sliders**: each notebook top to bottom again (nbclient, which keeps the widget state a
   frontend would), and every live slider it shows moved through the kernel
   (tools/platforms/colab_frontend.py): each position is compared with what the slider's function
   computes afresh there.
5. **Two processes** (tools/platforms/ddp_probe.py, the check tests/retrieval/test_scaling.py
   makes here): on Colab's torch, ``torchrun --nproc_per_node 2`` (gloo, CPU) runs one DDP step
   and the ``train`` command; the step's loss and gradients and the run's losses are compared
   with one process's.
6. **Restart rehearsal**: with an older sentence-transformers installed, the install cell run in
   a fresh kernel upgrades it and prints nothing (nothing had imported it); run after
   ``import sentence_transformers`` it prints the one restart line.
7. **Report**: the versions the kernels ran with, each notebook's time (and its install cell's,
   and its sliders'), what differs from Colab; exit status 1 on any failure.

    python -m tools.platforms.colab_twin [--notebooks 01,04] [--rebuild] [--no-ddp] [--no-rehearsal]
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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run as a script too

from tools.platforms import colab_frontend as frontend  # noqa: E402
from tools.notebooks.kernel_client import slice_polls  # noqa: E402
from tools.notebooks.install_cell import (ENV_VAR, RESTART_LINE, apply, cell_text,  # noqa: E402
                                          first_code_cell, problems as cell_problems)
from tools.platforms.pins import canonical  # noqa: E402

import pytest  # noqa: E402

RUNTIME = ROOT / "tools" / "platforms" / "colab_runtime.txt"
HOME = Path(os.environ.get("COLAB_TWIN_DIR", ROOT / ".cache" / "colab-twin"))
VENV = HOME / "venv"
KERNELS = HOME / "kernels"
KERNEL = "colab-twin"
SNAPSHOT = HOME / "built-freeze.txt"
STAMP = HOME / "built.json"
EXECUTED = HOME / "executed"  # the notebooks as the twin ran them
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
VERSIONS = ("python", "torch", "sentence-transformers", "transformers", "numpy", "scikit-learn", "matplotlib",
            "ipywidgets", "widgetsnbextension", "ipykernel", "ipython", "notebook", "similar-embeddings-course-labs")


def say(text: str = "") -> None:
    print(text, flush=True)


def pins() -> dict[str, str]:
    out = {}
    for line in RUNTIME.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            out[canonical(name)] = version
    return out


# ---- 1. build ------------------------------------------------------------------------------

def _runs(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([python, "-c", "import sys, venv, ensurepip; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode:
        return None
    major, minor = out.stdout.split()
    return int(major), int(minor)


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
    reqs = [f"{name}=={v}" for name, v in pins().items()]
    if version != COLAB_PYTHON:  # PyPI's torch 2.11 exists for 3.11 too, but only as a CUDA build to download
        reqs = [FALLBACK_TORCH if r.startswith("torch==") else r for r in reqs]
    return reqs


def pip(*args: str, quiet: bool = True) -> subprocess.CompletedProcess:
    cmd = [str(VENV / "bin" / "python"), "-m", "pip", *args] + (["-q"] if quiet else [])
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        noise = re.compile(r"^WARNING: Location .* is ignored")
        err = "\n".join(line for line in done.stderr.splitlines() if not noise.match(line))
        raise SystemExit(f"colab-twin: {' '.join(cmd[2:])} failed:\n{err[-4000:]}")
    return done


def freeze() -> dict[str, str]:
    out = subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "list", "--format=json"],
                         capture_output=True, text=True, check=True).stdout
    return {canonical(p["name"]): p["version"] for p in json.loads(out)}


def stamp_for(python: str, version: tuple[int, int]) -> dict:
    return {"runtime": hashlib.sha256(RUNTIME.read_bytes()).hexdigest(), "build_steps": BUILD_STEPS,
            "python": python, "version": list(version)}


def build(rebuild: bool) -> tuple[float | None, tuple[int, int]]:
    """Build the twin unless a matching one is kept; return (seconds spent or None, Python version)."""
    python, version = find_python()
    want = stamp_for(python, version)
    if not rebuild and STAMP.is_file() and json.loads(STAMP.read_text()) == want and (VENV / "bin" / "python").exists():
        return None, version
    start = time.monotonic()
    shutil.rmtree(HOME, ignore_errors=True)
    HOME.mkdir(parents=True)
    say(f"Building the twin in {HOME.relative_to(ROOT) if HOME.is_relative_to(ROOT) else HOME} "
        f"with {python} (Python {version[0]}.{version[1]}): Colab's packages from the package registries")
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


def source_copy(tree: Path = ROOT) -> Path:
    """A checkout as a clone would have it (tracked and untracked files, not ignored ones)."""
    dest = HOME / "src"
    shutil.rmtree(dest, ignore_errors=True)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=tree, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = tree / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


# ---- 3. notebooks ----------------------------------------------------------------------------

#: myst-nb's glue records: the book build reads them. Colab has no myst-nb, so setup()'s stand-in
#: glues nothing there, and no Colab reader sees a record.
GLUE = "application/papermill.record/"


class _Skipped(tuple):
    """nbval's skipped keys, and every glue record (nbval asks ``key in skip_compare``)."""

    def __contains__(self, key) -> bool:
        return tuple.__contains__(self, key) or str(key).startswith(GLUE)


def _without_local_notes(outputs: list) -> list:
    """A cell's new outputs less pip's notes about this machine's local package folders (its pip
    configuration, not Colab's); a stream left empty goes."""
    kept = []
    for out in outputs:
        if out.get("output_type") == "stream" and out.get("name") == "stderr":
            text = "".join(line for line in "".join(out["text"]).splitlines(keepends=True) if not LOCAL_INDEX.match(line))
            if not text:
                continue
            out = {**out, "text": text}
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


def _client(nb, cwd: Path, timeout: int):
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    km = AsyncKernelManager(kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(KERNELS)]))
    return slice_polls(NotebookClient(nb, km=km, timeout=timeout, resources={"metadata": {"path": str(cwd)}},
                                      store_widget_state=True, record_timing=False, allow_errors=False))


ANSI = re.compile(r"\x1b\[[0-9;]*m")


# pip's note about this machine's own local package folders (its pip configuration), not Colab's.
LOCAL_INDEX = re.compile(r"^WARNING: Location 'file:///opt/.*' is ignored")


def _text(outputs, name: str = "stdout") -> str:
    return "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream" and o.get("name") == name)


def _warnings(outputs) -> list[str]:
    """What pip said on stderr, less this machine's local-folder notes."""
    return [line for line in _text(outputs, "stderr").splitlines() if line.strip() and not LOCAL_INDEX.match(line)]


async def run_notebook(path: Path, cwd: Path, timeout: int) -> dict:
    """A notebook top to bottom in the twin's kernel, every live slider walked as each appears."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    client = _client(nb, cwd, timeout)
    result = {"name": path.stem, "cells": 0, "install_s": 0.0, "sliders": 0, "positions": 0, "slider_s": 0.0,
              "problems": [], "versions": {}}
    install = first_code_cell(nb)
    start = time.monotonic()
    async with client.async_setup_kernel(cleanup_kc=True):  # we made km: stop its kernel here
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            began = time.monotonic()
            try:
                await client.async_execute_cell(cell, index)
            except Exception as err:  # CellExecutionError, timeouts, a dead kernel
                first = ANSI.sub("", str(err)).strip().splitlines()
                result["problems"].append(f"cell {index} failed: {first[-1] if first else type(err).__name__}")
                break
            result["cells"] += 1
            if cell is install:
                result["install_s"] = time.monotonic() - began
            for s in frontend.sliders_in(client, cell):
                moved = time.monotonic()
                try:
                    await frontend.walk(client, s, timeout)
                except Exception as err:  # a move the kernel never answered, a dead kernel
                    s.problems.append(f"{s.name}: the walk stopped: {type(err).__name__}: {err}")
                result["sliders"] += 1
                result["positions"] += s.checked
                result["slider_s"] += time.monotonic() - moved
                result["problems"] += [f"cell {index}: {p}" for p in s.problems]
        if result["cells"]:
            result["versions"] = json.loads(await frontend.run(client, VERSION_CODE))
    result["seconds"] = time.monotonic() - start
    result["skipped"] = result["cells"] == 0 and not result["problems"]
    EXECUTED.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, EXECUTED / path.name)  # to read what the twin printed (not the committed outputs)
    return result


VERSION_CODE = """\
import json as _json, platform as _platform
from importlib.metadata import version as _version, PackageNotFoundError as _Missing
_found = {"python": _platform.python_version()}
for _name in %r:
    if _name != "python":
        try:
            _found[_name] = _version(_name)
        except _Missing:
            _found[_name] = None
print(_json.dumps(_found))
""" % (VERSIONS,)


def install_changes() -> list[str]:
    """The install cell may add packages; it must not change Colab's."""
    built = json.loads(SNAPSHOT.read_text())
    now = freeze()
    problems = [f"the install cell changed {n} {built[n]} -> {now.get(n, 'removed')} (Colab's own)"
                for n in KEEP if n in built and now.get(n) != built[n]]
    added = sorted(set(now) - set(built))
    say(f"  the install cell added {len(added)} packages Colab's set lacks here and changed none of Colab's "
        f"{len(KEEP)} pinned ones" if not problems else "  the install cell changed Colab's packages:")
    for p in problems:
        say(f"    {p}")
    return problems


# ---- 4. two processes ------------------------------------------------------------------------

COURSE = "similar-embeddings-course-labs"


def ddp_check(src: Path, timeout: int) -> dict:
    """tools/platforms/ddp_probe.py's whole check in the twin's Python (its torch): a torchrun launch of
    2 gloo processes (one DDP step, then ``train``) against one process. The course is installed as
    the install cell installs it, if no notebook did."""
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
        return {"problems": [f"two processes: no answer within {timeout} s"]}
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        return {"problems": [f"two processes: the check exited {done.returncode}: {done.stderr.strip()[-800:]}"]}
    found = json.loads(lines[-1])
    found["problems"] = [f"two processes on torch {found['torch']}: {p}" for p in found["problems"]]
    return found


# ---- 5. restart rehearsal --------------------------------------------------------------------

async def rehearse_restart(cwd: Path, cell_source: str) -> list[str]:
    """An upgrade before any import works quietly; after one, the cell says restart, once."""
    import nbformat

    problems = []
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
        printed = _text(nb.cells[-2].outputs).strip().splitlines() + _warnings(nb.cells[-2].outputs)
        upgraded = _text(nb.cells[-1].outputs).strip()
        old = OLD_ST.split("==")[1]
        if upgraded == old:
            problems.append(f"restart rehearsal: the install cell left sentence-transformers at {old}")
        if imported_first:
            if len(printed) != 1 or RESTART_LINE not in printed[0]:
                problems.append(f"restart rehearsal: after an import, the cell printed {printed!r}, "
                                "not one restart line")
            else:
                say(f"  after `import sentence_transformers`: {printed[0]}")
        elif printed:
            problems.append(f"restart rehearsal: with nothing imported, the cell printed {printed!r}")
        else:
            say(f"  sentence-transformers {old} -> {upgraded} before any import: the cell printed nothing")
    return problems


# ---- 6. report -------------------------------------------------------------------------------

def differences(version: tuple[int, int], ran: dict) -> list[str]:
    want = pins()
    out = []
    if version != COLAB_PYTHON:
        out.append(f"Python {version[0]}.{version[1]} (Colab: {COLAB_PYTHON[0]}.{COLAB_PYTHON[1]}): no Python "
                   f"{COLAB_PYTHON[0]}.{COLAB_PYTHON[1]} here, so the CPU {FALLBACK_TORCH} wheel on disk stands in "
                   f"for Colab's torch {want['torch']}")
    else:
        out.append(f"torch {want['torch']} is PyPI's CUDA 13 build running on this CPU (Colab's is +cu128, "
                   "on a GPU when one is chosen): no CUDA kernel runs here")
    for name, v in want.items():
        got = ran.get(name)
        if got is not None and got.split("+")[0] != v and name != "torch":
            out.append(f"{name} {got}, not Colab's {v}")
    out.append("every package the twin holds that Colab holds too is at Colab's version (tools/platforms/colab_runtime.txt), "
               "but torch's CUDA libraries, pip and setuptools; Colab preinstalls hundreds more, and its own "
               "google.colab frontend")
    out.append("the widget frontend is nbclient's Output-widget mimic driven by tools/platforms/colab_frontend.py, not "
               "Colab's; HF_HUB_OFFLINE and the quiet settings of the Makefile are set (no hub here)")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebooks", nargs="+", default=[], help="prefixes (01 04, or 01,04); default: all")
    parser.add_argument("--rebuild", action="store_true", help="build the twin again even if one is kept")
    parser.add_argument("--no-ddp", action="store_true", help="skip the two-process training check")
    parser.add_argument("--no-rehearsal", action="store_true", help="skip the restart rehearsal")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell (and per slider move)")
    parser.add_argument("--source", type=Path, default=ROOT,
                        help="the checkout to install and run (a git work tree; default: this one)")
    args = parser.parse_args(argv)
    began = time.monotonic()

    built_s, version = build(args.rebuild)
    say(f"Twin: {'built in %.0f s' % built_s if built_s is not None else 'kept from an earlier run'} "
        f"({HOME})")
    undone = reset()
    if undone:
        say(f"Reset to the built state: {len(undone)} packages removed or put back")
    src = source_copy(args.source.resolve())
    os.environ[ENV_VAR] = f"file://{src}"  # the install cell installs from the copy, not the URL
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # ipykernel 6's debugger, on 3.13

    wanted = [p for item in args.notebooks for p in item.split(",") if p]
    paths = sorted((src / "notebooks").glob("*.ipynb"))
    if wanted:
        paths = [p for p in paths if any(p.name.startswith(w) for w in wanted)]
    # The twin runs the canonical install cell (tools/notebooks/install_cell.py); a notebook whose
    # own differs is named (its test fails too): python -m tools.notebooks.install_cell --apply.
    stale = [p.stem for p in paths if cell_problems(p, cell_text()) and first_code_cell(json.loads(p.read_text()))]
    for p in paths:
        if p.stem in stale:
            apply(p, cell_text())
    if stale:
        say(f"Not yet the canonical install cell, run with it here: {', '.join(stale)} "
            "(python -m tools.notebooks.install_cell --apply)")
    results, problems = [], []
    say(f"nbval on the twin's kernel ({KERNEL}): {len(paths)} notebooks")
    started = time.monotonic()
    compared = nbval(src, paths, args.timeout)
    nbval_s = time.monotonic() - started
    if compared:
        problems.append(f"nbval on the twin's kernel failed (exit {compared}): a cell prints other text than the "
                        "committed output, beyond any declared tolerance, or fails (its report is above)")
    problems += install_changes()
    for path in paths:
        say(f"{path.stem}: sliders")
        result = asyncio.run(run_notebook(path, path.parent, args.timeout))
        results.append(result)
        problems += [f"{path.stem}: {p}" for p in result["problems"]]
        say(f"{path.stem}: {result['seconds']:.0f} s, {result['cells']} cells"
            + (f", {result['positions']} slider positions checked on {result['sliders']} sliders" if result["sliders"] else "")
            + (f", {len(result['problems'])} problem(s)" if result["problems"] else ""))
    ddp: dict = {}
    if not args.no_ddp:
        say("Two processes (torchrun, gloo) against one, on the twin's torch:")
        started = time.monotonic()
        ddp = ddp_check(src, args.timeout)
        ddp["seconds"] = time.monotonic() - started
        problems += ddp["problems"]
        if "train_losses" in ddp:
            say(f"  one DDP step: loss {ddp['step_loss']:.4f}; train losses "
                f"{', '.join(f'{x:.4f}' for x in ddp['train_losses'])} in {ddp['processes']} processes, "
                f"{', '.join(f'{x:.4f}' for x in ddp['one_process_losses'])} in one"
                + ("" if ddp["problems"] else ": they agree"))
    rehearsal_problems = []
    if not args.no_rehearsal:
        say("Restart rehearsal (the install cell after an upgrade):")
        try:
            rehearsal_problems = asyncio.run(rehearse_restart(src / "notebooks", cell_text()))
        except Exception as err:  # a cell of the rehearsal failed
            rehearsal_problems = [f"restart rehearsal: {type(err).__name__}: {ANSI.sub('', str(err))[-500:]}"]
        problems += rehearsal_problems
    reset()

    ran = next((r["versions"] for r in results if r["versions"]), {})
    say("")
    say("Colab twin: versions the kernels ran with")
    for name in VERSIONS:
        say(f"  {name:32} {ran.get(name) or '-'}")
    say("")
    say(f"  {'notebook':26} {'total s':>8} {'install s':>10} {'sliders s':>10} {'positions':>10}")
    for r in results:
        note = " (no code cell yet)" if r["skipped"] else ""
        say(f"  {r['name']:26} {r['seconds']:8.1f} {r['install_s']:10.1f} {r['slider_s']:10.1f} "
            f"{r['positions']:10d}{note}")
    if ddp:
        say(f"  {'two processes':26} {ddp['seconds']:8.1f}")
    say(f"  {'nbval, every notebook':26} {nbval_s:8.1f}")
    say(f"  {'twin build':26} {built_s if built_s is not None else 0:8.1f}"
        + ("" if built_s is not None else "   (kept)"))
    say(f"  {'whole run':26} {time.monotonic() - began:8.1f}")
    say("")
    say("What differs from Colab:")
    for line in differences(version, ran):
        say(f"  - {line}")
    say("")
    ran_nb = [r for r in results if not r["skipped"]]
    failed = ([r["name"] for r in ran_nb if r["problems"]] + (["nbval"] if compared else [])
              + (["two processes"] if ddp.get("problems") else []) + (["restart rehearsal"] if rehearsal_problems else []))
    passed = len(ran_nb) + 1 + (0 if args.no_ddp else 1) + (0 if args.no_rehearsal else 1) - len(failed)
    if problems:
        say(f"{len(problems)} problem(s):")
        for p in problems:
            say(f"  {p}")
    else:
        say(f"{len(ran_nb)} notebooks ran top to bottom and printed what is stored (within declared tolerances); "
            f"{sum(r['positions'] for r in results)} slider positions matched what the code computes"
            + ("" if args.no_ddp else "; two processes trained as one"))
    say(f"colab-twin: {passed} passed, {len(failed)} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
