"""A new lesson that already keeps the mechanical rules: `make lesson NAME=retrieval_eval`.

    python -m tools.notebooks.lesson NAME [--title "A title"] [--no-run]

Writes notebooks/NN_NAME.ipynb (NN one past the last lesson): the title cell with the promise,
the time estimate, the learning goals and what to know first (the previous lesson, by link); the
install cell (tools/notebooks/install_cell.py, tagged remove-cell); the setup cell (``glue = setup(0)``);
then the sections in the course's order, each holding a line that says what goes there, the
"Reading it" after a figure, "In 20 seconds", a self-test with its answers in ``<details>``
and "Next". It adds the lesson's line to _toc.yml after the last lesson, and runs the notebook
once (tools/notebooks/execute.py) so that every code cell has its stored output. It prints no number, so
it needs no measured spread until it does (tests/tools/outputs/test_spread.py then names the `make spread`
to run). What is left is the lesson itself: README.md, "Writing a lesson", says what each part
holds and which test holds it. A name already taken, or one that is not lower_case words, is
refused and nothing is written.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from tools.notebooks.install_cell import TAGS, cell_text

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
KERNEL = {"display_name": "Python 3 (course)", "language": "python", "name": "python3"}

SETUP = """\
# Setup: the imports, then setup(): seeds, threads, figures, glue.
from labs.classroom.setup import setup

glue = setup(0)  # hands numbers to the book"""

SECTIONS = [
    "## The everyday picture\n\nWrite here a picture from everyday life that the idea explains, before any formula.",
    "## A tiny example by hand\n\nWrite here an example small enough to work out on paper, step by step.",
    "## The formula\n\nWrite here the formula, a table of its symbols, and the formula in words.",
    "## The code\n\nThe by-hand code comes first, then the `labs` call, then a cell showing that they agree.",
    "**Reading it:** after each figure, write here what the reader should see in it.",
    "## Why it matters\n\nWrite here where the idea shows up in a real embedding model.",
    "## Practice\n\nWrite here the slider exercise, the answer checks and the break-it exercise, each\n"
    "followed by its worked solution.",
    "## In 20 seconds\n\nWrite here the lesson in three sentences.",
    "## Self-test\n\n1. Write here a question the lesson answers.\n\n<details>\n<summary>Answers</summary>\n\n"
    "1. Write here its answer.\n\n</details>",
]


def lessons(root: Path) -> list[Path]:
    return sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def title_cell(title: str, previous: Path | None) -> str:
    know = (f"[{previous.stem[3:].replace('_', ' ').capitalize()}]({previous.name})" if previous
            else "Python and NumPy arrays")
    return (f"# {title}\n\n**The promise:** by the end of this page you can write here what the reader will "
            "be able to do.\n\n*About 30 minutes to read and run.*\n\n**Learning goals**\n\n"
            "- Write here one thing the reader will be able to do.\n\n"
            f"**What to know first:** {know}.")


def scaffold(name: str, title: str | None = None, root: Path = ROOT) -> Path:
    """Write the lesson's notebook and its _toc.yml line; return the notebook's path."""
    if not NAME.fullmatch(name):
        raise SystemExit(f"NAME={name!r}: lower-case words joined by '_' (retrieval_eval), no number")
    existing = lessons(root)
    taken = [p for p in existing if p.stem[3:] == name]
    if taken:
        raise SystemExit(f"NAME={name}: {taken[0].relative_to(root)} exists already")
    number = int(existing[-1].name[:2]) + 1 if existing else 1
    path = root / "notebooks" / f"{number:02d}_{name}.ipynb"
    toc = root / "_toc.yml"
    text = toc.read_text(encoding="utf-8")
    last = list(re.finditer(r"^(\s*- file: notebooks/)\S+\n", text, re.M))
    if not last:
        raise SystemExit(f"{toc}: no '- file: notebooks/...' line to put the lesson after")
    line = f"{last[-1].group(1)}{path.stem}\n"
    nb = new_notebook(cells=[
        new_markdown_cell(title_cell(title or name.replace("_", " ").capitalize(), existing[-1] if existing else None)),
        new_code_cell(cell_text(), metadata={"tags": list(TAGS)}),
        new_code_cell(SETUP, metadata={"tags": ["hide-input"],
                                       "mystnb": {"code_prompt_show": "Show the setup code (imports, setup())"}}),
        *(new_markdown_cell(section) for section in SECTIONS),
        new_markdown_cell("## Next\n\nWrite here what the next lesson builds on this one."),
    ], metadata={"kernelspec": KERNEL, "language_info": {"name": "python"}})
    nbformat.write(nb, str(path))
    toc.write_text(text[:last[-1].end()] + line + text[last[-1].end():], encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.notebooks.lesson", description=__doc__.split("\n\n")[0])
    parser.add_argument("name", metavar="NAME", help="the lesson's name: lower-case words joined by '_'")
    parser.add_argument("--title", help="its title (default: from the name)")
    parser.add_argument("--no-run", action="store_true", help="write it without running it")
    args = parser.parse_args(argv)
    path = scaffold(args.name, args.title)
    print(f"{path.relative_to(ROOT)}: written, and listed in _toc.yml")
    if not args.no_run:
        from tools.notebooks.execute import main as execute

        if execute([str(path)]):
            return 1
    print("Next: fill in the sections (README.md, \"Writing a lesson\"), then python -m tools.notebooks.execute "
          f"{path.relative_to(ROOT)} and make test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
