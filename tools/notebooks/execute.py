"""Re-execute notebooks in place, keeping widget state: `make outputs`.

Each notebook runs in a fresh kernel from its own folder; its file is replaced only when every cell
ran. Widget state goes into its metadata, so the HTML book shows the sliders without a kernel.

Usage: python -m tools.notebooks.execute notebooks/*.ipynb
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from tools.notebooks.kernel_client import slice_polls

# The same quiet, offline environment as `make test`: no hub, no progress bars.
QUIET_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TQDM_DISABLE": "1",
    "PYTHONHASHSEED": "0",
    "OMP_WAIT_POLICY": "PASSIVE",
}


def write_notebook(nb, path: Path) -> None:
    """Write ``nb`` beside ``path``, then put it in the notebook's place in one step: an interrupted
    write leaves the notebook as it was."""
    tmp = path.with_name(f".{path.name}.tmp")
    nbformat.write(nb, tmp)
    tmp.replace(path)


def execute(path: Path, timeout: int = 600) -> float:
    """Run the notebook at ``path`` (each cell within ``timeout`` s) and write it back; its seconds."""
    nb = nbformat.read(path, as_version=4)
    client = slice_polls(NotebookClient(nb, timeout=timeout, kernel_name="python3", store_widget_state=True,
                                        resources={"metadata": {"path": str(path.parent)}}, record_timing=False))
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    for cell in nb.cells:  # keep diffs quiet: no per-run metadata
        cell.metadata.pop("execution", None)
    write_notebook(nb, path)
    return elapsed


def main(argv: list[str]) -> int:
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    if not argv:
        print(__doc__)
        return 2
    failed = 0
    for name in argv:
        try:
            print(f"{name}: executed in {execute(Path(name)):.1f} s")
        except (OSError, CellExecutionError) as err:  # no such file, or a cell failed
            print(f"{name}: not written: {err}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
