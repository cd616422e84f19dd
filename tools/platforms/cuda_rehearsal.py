"""A GPU runtime rehearsed on the CPU: what each lesson's first two cells do before CUDA starts.

cuBLAS reads ``CUBLAS_WORKSPACE_CONFIG`` when CUDA starts, and the TF32 switches govern float32 matmuls
from the first one, so each lesson's second code cell makes them through ``setup()``. `rehearse` runs
those two cells with ``torch.cuda`` faking a GPU, settings reset to torch's defaults per notebook, and
records each ``torch.cuda._lazy_init`` with the cell line that made it; `problems` says what is wrong.

    python -m tools.platforms.cuda_rehearsal notebooks/*.ipynb     # one JSON line per notebook
"""

from __future__ import annotations

import contextlib
import io
import json
import linecache
import os
import sys
import traceback
from pathlib import Path

import nbformat

DETERMINISTIC_WORKSPACES = (":4096:8", ":16:8")


class CudaMocked(RuntimeError):
    """Raised where real CUDA would have started: the rehearsal has no GPU."""


def rehearse(paths: list[Path]) -> list[dict]:
    import torch

    import labs.classroom.setup as setup_module

    state = {"cell": None, "in_setup": False, "setup_calls": 0, "events": []}

    def snapshot() -> dict:
        return {"workspace": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
                "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
                "tf32_cudnn": torch.backends.cudnn.allow_tf32,
                "deterministic": torch.are_deterministic_algorithms_enabled()}

    def lazy_init() -> None:
        frames = [f for f in traceback.extract_stack()[:-1] if f.filename.startswith("<cell ")]
        where = f"line {frames[-1].lineno}: {frames[-1].line}" if frames else "(inside a library call)"
        state["events"].append({"event": "cuda start", "cell": state["cell"], "in_setup": state["in_setup"],
                                "where": where, **snapshot()})
        raise CudaMocked("the rehearsal has no GPU: CUDA would start here")

    real_setup = setup_module.setup

    def recorded_setup(*args, **kwargs):
        state["in_setup"] = True
        state["setup_calls"] += 1
        try:
            return real_setup(*args, **kwargs)
        finally:
            state["in_setup"] = False

    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: 1
    torch.cuda.is_initialized = lambda: False
    torch.cuda._lazy_init = lazy_init
    torch.cuda.init = lazy_init
    setup_module.setup = recorded_setup

    results = []
    home = os.getcwd()
    for path in paths:
        os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)  # torch's defaults: the lesson must set them
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.use_deterministic_algorithms(False)
        state.update(cell=None, setup_calls=0, events=[])
        cells = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        result = {"notebook": path.name, "error": None}
        namespace = {"__name__": "__main__"}
        os.chdir(path.parent)
        try:
            for index, source in enumerate(cells[:2], start=1):
                state["cell"] = index
                filename = f"<cell {index}>"
                linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
                with contextlib.redirect_stdout(io.StringIO()):  # stdout carries the results
                    exec(compile(source, filename, "exec"), namespace)
        except CudaMocked:
            pass  # recorded above, with its line
        except Exception as err:  # noqa: BLE001 - reported, not hidden
            result["error"] = f"cell {state['cell']}: {type(err).__name__}: {err}"
        finally:
            os.chdir(home)
        result.update(setup_calls=state["setup_calls"], events=list(state["events"]), after=snapshot())
        results.append(result)
    return results


def problems(result: dict) -> list[str]:
    """What a rehearsal result says is wrong (an empty list: CUDA would start in a prepared kernel)."""
    name = result["notebook"]
    found = []
    if result["error"]:
        found.append(f"{name}: {result['error']}")
    for e in result["events"]:
        ready = e["workspace"] in DETERMINISTIC_WORKSPACES and (e["in_setup"] or not (e["tf32_matmul"]
                                                                                    or e["tf32_cudnn"]))
        if e["cell"] == 1:
            found.append(f"{name}: the install cell starts CUDA ({e['where']})")
        elif not ready:
            found.append(f"{name}: CUDA starts in cell {e['cell']} before setup() has made its settings "
                         f"({e['where']}; workspace {e['workspace']!r}, TF32 matmul {e['tf32_matmul']})")
    if result["setup_calls"] != 1:
        found.append(f"{name}: the second code cell calls labs.classroom.setup.setup() "
                     f"{result['setup_calls']} times (once, please)")
    after = result["after"]
    if after["workspace"] not in DETERMINISTIC_WORKSPACES:
        found.append(f"{name}: after the setup cell CUBLAS_WORKSPACE_CONFIG is {after['workspace']!r}")
    if after["tf32_matmul"] or after["tf32_cudnn"]:
        found.append(f"{name}: after the setup cell TF32 is still on (matmul {after['tf32_matmul']}, "
                     f"cuDNN {after['tf32_cudnn']})")
    return found


if __name__ == "__main__":
    os.environ.setdefault("TQDM_DISABLE", "1")
    for result in rehearse([Path(p).resolve() for p in sys.argv[1:]]):
        print(json.dumps(result))
