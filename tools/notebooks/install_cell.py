"""The first code cell of every lesson: on Colab, it installs the course. One text, kept here.

The cell runs before `labs` is installed, so its text cannot live in the package: this module
holds it (``TEMPLATE``), with the repository URL taken from ``_config.yml`` (``repository.url``,
the same setting the book's Colab, Binder and repository buttons use). ``make colab-twin``
installs the course through the same cell, from the checkout: it sets ``COURSE_SOURCE``.

    python -m tools.notebooks.install_cell            # which notebooks differ (exit 1 if any)
    python -m tools.notebooks.install_cell --apply    # write the cell into every notebook

``--apply`` replaces exactly the source of each notebook's first code cell (and keeps it
tagged ``remove-cell``: off the web page, there for Colab readers); nothing else in the file
changes. ``tests/tools/notebooks/test_install_cell.py`` fails while a notebook's first code cell
differs from the text here.

What the cell does on Colab: ``pip install`` the course from the repository. pip installs what
Colab lacks and keeps what it has, since the package's ranges admit Colab's versions
(ipywidgets 7, numpy, scikit-learn, matplotlib, torch, sentence-transformers, transformers). If
pip ever has to change a package this session had already imported, the cell says so in one
line: restart the session and run the notebook again.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

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


def repository_url(root: Path = ROOT) -> str:
    """repository.url in _config.yml: the one setting for the repository URL."""
    return yaml.safe_load((root / "_config.yml").read_text())["repository"]["url"]


def cell_text(url: str | None = None) -> str:
    """The install cell's source, with the repository URL filled in."""
    return TEMPLATE.format(url=url or repository_url(), env=ENV_VAR, dist=DISTRIBUTION,
                           restart=RESTART_LINE).rstrip("\n")


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def first_code_cell(nb: dict) -> dict | None:
    return next((c for c in nb.get("cells", []) if c.get("cell_type") == "code"), None)


def problems(path: Path, text: str) -> list[str]:
    """What is wrong with a notebook's install cell (an empty list when it is the canonical one)."""
    nb = json.loads(path.read_text())
    cell = first_code_cell(nb)
    if cell is None:
        return [f"{path.name}: no code cell; its first code cell must be the install cell"]
    found = []
    if _source(cell) != text:
        found.append(f"{path.name}: the first code cell is not the install cell of "
                     "tools/notebooks/install_cell.py (python -m tools.notebooks.install_cell --apply)")
    if cell.get("metadata", {}).get("tags", []) != TAGS:
        found.append(f"{path.name}: the install cell must be tagged {TAGS} (off the page, there on Colab)")
    return found


def _as_lines(text: str) -> list[str]:
    """nbformat's on-disk form of a source: a list of lines, each but the last ending in a newline."""
    return text.splitlines(keepends=True)


def apply(path: Path, text: str) -> bool:
    """Write the install cell into a notebook's first code cell; True if the file changed.

    Only that cell's source and tags change; the rest of the JSON, its key order and indentation
    stay as they were (the file is re-serialised the way nbformat writes it)."""
    raw = path.read_text()
    nb = json.loads(raw)
    cell = first_code_cell(nb)
    if cell is None:
        raise ValueError(f"{path.name}: no code cell to replace; add one first (the install cell)")
    old_source, old_tags = cell.get("source"), cell.get("metadata", {}).get("tags")
    cell["source"] = _as_lines(text)
    cell.setdefault("metadata", {})["tags"] = list(TAGS)
    if cell["source"] == old_source and old_tags == TAGS:
        return False
    indent = _indent_of(raw)
    out = json.dumps(nb, indent=indent, ensure_ascii=False, sort_keys=False) + "\n"
    path.write_text(out)
    return True


def _indent_of(raw: str) -> int:
    match = re.search(r"\n( +)\"", raw)
    return len(match.group(1)) if match else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apply", action="store_true", help="write the install cell into every notebook")
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
    text = cell_text()
    bad = 0
    for path in paths:
        if args.apply:
            try:
                changed = apply(path, text)
            except ValueError as err:
                print(err, file=sys.stderr)
                bad += 1
                continue
            print(f"{path.name}: {'install cell written' if changed else 'already the install cell'}")
        else:
            for problem in problems(path, text):
                print(problem)
                bad += 1
    if not args.apply and not bad:
        print(f"{len(paths)} notebooks: the first code cell is the install cell ({repository_url()})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
