"""The first code cell of every lesson: on Colab, it installs the course. One text, kept here.

The cell runs before `labs` is installed, so its text (``TEMPLATE``) cannot live in the package. It
installs from ``_config.yml``'s ``repository.url`` or from ``COURSE_SOURCE`` (``make colab-twin``), and
asks in one line for a restart only if pip replaced a package the session had already imported.

    python -m tools.notebooks.install_cell            # which notebooks differ (exit 1 if any)
    python -m tools.notebooks.install_cell --apply    # write the cell into every notebook
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
import yaml

from tools.notebooks.execute import write_notebook

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
TAGS = ["remove-cell"]
ENV_VAR = "COURSE_SOURCE"  # a pip location (git+https://..., file:///...) that replaces the URL
DISTRIBUTION = "similar-embeddings-course-labs"
RESTART_LINE = "restart the session"  # what the one restart line says (the twin looks for it)

TEMPLATE = '''\
# On Colab: install the course package and what Colab lacks.
# Elsewhere this cell does nothing.
import importlib.metadata as md, os, subprocess, sys
SOURCE = os.environ.get("{env}",
                        "git+{url}")
if "google.colab" in sys.modules or "{env}" in os.environ:
    before = {{d.name: d.version for d in md.distributions()}}
    subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                    f"{dist} @ {{SOURCE}}"], check=True)
    changed = {{d.name for d in md.distributions()
               if before.get(d.name, d.version) != d.version}}
    stale = sorted(changed & {{n for m, ns in md.packages_distributions().items()
                              if m in sys.modules for n in ns}})
    if stale:  # pip replaced a package this session had already imported
        print(f"pip changed {{', '.join(stale)}}, already imported here: "
              "{restart} (Runtime > Restart session), then run all cells.")
'''


def repository_url() -> str:
    """repository.url in _config.yml: the one setting for the repository URL."""
    return yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]


def cell_text() -> str:
    """The install cell's source, with the repository URL filled in."""
    return TEMPLATE.format(url=repository_url(), env=ENV_VAR, dist=DISTRIBUTION, restart=RESTART_LINE).rstrip("\n")


def first_code_cell(nb: dict) -> dict | None:
    return next((c for c in nb.get("cells", []) if c.get("cell_type") == "code"), None)


def problems(path: Path, text: str) -> list[str]:
    """What is wrong with a notebook's install cell (an empty list when it is the canonical one)."""
    cell = first_code_cell(nbformat.read(path, as_version=4))
    if cell is None:
        return [f"{path.name}: no code cell; its first code cell must be the install cell"]
    found = []
    if cell.source != text:
        found.append(f"{path.name}: the first code cell is not the install cell of "
                     "tools/notebooks/install_cell.py (python -m tools.notebooks.install_cell --apply)")
    if cell.metadata.get("tags", []) != TAGS:
        found.append(f"{path.name}: the install cell must be tagged {TAGS} (off the page, there on Colab)")
    return found


def apply(path: Path, text: str) -> bool:
    """Write the install cell (its source and tags) into a notebook's first code cell; True if the file
    changed. The file is written as nbformat writes every notebook, so nothing else in it changes."""
    nb = nbformat.read(path, as_version=4)
    cell = first_code_cell(nb)
    if cell is None:
        raise SystemExit(f"{path.name}: no code cell to replace; add one first (the install cell)")
    if cell.source == text and cell.metadata.get("tags") == TAGS:
        return False
    cell.source, cell.metadata["tags"] = text, list(TAGS)
    write_notebook(nb, path)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apply", action="store_true", help="write the install cell into every notebook")
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
    text = cell_text()
    if args.apply:
        for path in paths:
            print(f"{path.name}: {'install cell written' if apply(path, text) else 'already the install cell'}")
        return 0
    found = [problem for path in paths for problem in problems(path, text)]
    print("\n".join(found) or f"{len(paths)} notebooks: the first code cell is the install cell ({repository_url()})")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
