"""A new lesson that already keeps the mechanical rules: `make lesson NAME=retrieval_eval`.

    python -m tools.notebooks.lesson NAME [--title "A title"]

Writes notebooks/NN_NAME.ipynb (NN one past the last lesson: title, install cell, setup cell, the
sections in the course's order with a practice exercise), its _toc.yml line, labs/classroom/exercises/
NAME.py with one check to rewrite and that check's CASES row, then runs the notebook once. A name taken
or not lower_case words is refused and nothing is written. README.md, "Writing a lesson", says the rest.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from tools.notebooks.execute import main as run_notebooks
from tools.notebooks.install_cell import TAGS, cell_text

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
KERNEL = {"display_name": "Python 3 (course)", "language": "python", "name": "python3"}

SETUP = """\
# Setup: the imports, then setup(): seeds, threads, figures, glue.
from labs.classroom.exercises.{name} import check_{name}
from labs.classroom.setup import setup

glue = setup(0)  # hands numbers to the book"""

#: The practice exercise: the prose names what to fill in, the cell calls the check with its output
#: hidden (the static book would show "Not answered yet"), the worked solution comes folded after it.
PRACTICE = [
    "## Practice\n\nWrite here the exercise. Put your answer in `answer` below (a number), then run the cell.",
    "answer = None  # replace with a number\ncheck_{name}(answer)",
    "<details>\n<summary>Worked solution</summary>\n\nWrite here the worked solution, step by step.\n\n</details>",
]

EXERCISES = '''"""Answer checks of the {title} lesson: write here what each exercise asks.

Each check takes the reader's answer, prints "Right: ..." or a hint that says how the answer is
wrong (never the answer), and returns True or False.
"""

from __future__ import annotations

import math

from labs.classroom.answers import grade_number, number_answer

__all__ = ["SIDES", "check_{name}"]

#: Write here the exercise's givens: the check computes the answer from them (this one: the length
#: of the vector SIDES).
SIDES = (3.0, 4.0)


def check_{name}(answer: object) -> bool:
    """Exercise: write here what the reader works out (this one: the length of the vector SIDES)."""
    value = number_answer(answer, "Not answered yet: fill in a number.", "Give a number, not {{answer!r}}.")
    if value is None:
        return False
    return grade_number(
        value, math.hypot(*SIDES), "Right: write here why it is right.",
        {{sum(SIDES): "Close: that is the sum of the sides; write here the hint for this mistake."}},
        "Not yet: write here a hint that does not give the answer away.", tol=1e-6)
'''

#: The check's row in tests/classroom/test_exercises.py's CASES: the right answer, a wrong one, and
#: what the wrong one's hint must not show.
CASE = '    "check_{name}": (lambda: 5.0, 7.0, "5.0"),\n'
CASES = Path("tests") / "classroom" / "test_exercises.py"

#: The sections before the practice exercise, then after it.
SECTIONS = [
    "## The everyday picture\n\nWrite here a picture from everyday life that the idea explains, before any formula.",
    "## A tiny example by hand\n\nWrite here an example small enough to work out on paper, step by step.",
    "## The formula\n\nWrite here the formula, a table of its symbols, and the formula in words.",
    "## The code\n\nThe by-hand code comes first, then the `labs` call, then a cell showing that they agree.",
    "**Reading it:** after each figure, write here what the reader should see in it.",
    "## Why it matters\n\nWrite here where the idea shows up in a real embedding model.",
]
AFTER_PRACTICE = [
    "## In 20 seconds\n\nWrite here the lesson in three sentences.",
    "## Self-test\n\n1. Write here a question the lesson answers.\n\n<details>\n<summary>Answers</summary>\n\n"
    "1. Write here its answer.\n\n</details>",
    "## Next\n\nWrite here what the next lesson builds on this one.",
]


def title_cell(title: str, previous: Path) -> str:
    know = f"[{previous.stem[3:].replace('_', ' ').capitalize()}]({previous.name})"
    return (f"# {title}\n\n**The promise:** by the end of this page you can write here what the reader will "
            "be able to do.\n\n*About 30 minutes to read and run.*\n\n**Learning goals**\n\n"
            "- Write here one thing the reader will be able to do.\n\n"
            f"**What to know first:** {know}.")


def scaffold(name: str, title: str | None = None, root: Path = ROOT) -> Path:
    """Write the lesson's notebook, its _toc.yml line, its exercises module and its CASES row; return
    the notebook's path. Everything is checked before anything is written."""
    if not NAME.fullmatch(name):
        raise SystemExit(f"NAME={name!r}: lower-case words joined by '_' (retrieval_eval), no number")
    existing = sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    checks = root / "labs" / "classroom" / "exercises" / f"{name}.py"
    taken = [p for p in existing if p.stem[3:] == name] + ([checks] if checks.exists() else [])
    if taken:
        raise SystemExit(f"NAME={name}: {taken[0].relative_to(root)} exists already")
    number = int(existing[-1].name[:2]) + 1
    path = root / "notebooks" / f"{number:02d}_{name}.ipynb"
    toc = root / "_toc.yml"
    text = toc.read_text(encoding="utf-8")
    last = list(re.finditer(r"^(\s*- file: notebooks/)\S+\n", text, re.M))
    cases = (root / CASES).read_text(encoding="utf-8")
    end = re.search(r"^CASES = \{\n.*?^\}\n", cases, re.M | re.S)
    title = title or name.replace("_", " ").capitalize()
    line = f"{last[-1].group(1)}{path.stem}\n"
    practice, attempt, solution = (cell.format(name=name) for cell in PRACTICE)
    nb = new_notebook(cells=[
        new_markdown_cell(title_cell(title, existing[-1])),
        new_code_cell(cell_text(), metadata={"tags": list(TAGS)}),
        new_code_cell(SETUP.format(name=name), metadata={
            "tags": ["hide-input"], "mystnb": {"code_prompt_show": "Show the setup code (imports, setup())"}}),
        *(new_markdown_cell(section) for section in SECTIONS),
        new_markdown_cell(practice), new_code_cell(attempt, metadata={"tags": ["remove-output"]}),
        new_markdown_cell(solution),
        *(new_markdown_cell(section) for section in AFTER_PRACTICE),
    ], metadata={"kernelspec": KERNEL, "language_info": {"name": "python"}})
    nbformat.write(nb, str(path))
    toc.write_text(text[:last[-1].end()] + line + text[last[-1].end():], encoding="utf-8")
    checks.write_text(EXERCISES.format(name=name, title=title.lower()), encoding="utf-8")
    at = end.end() - 2  # before the closing brace
    (root / CASES).write_text(cases[:at] + CASE.format(name=name) + cases[at:], encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.notebooks.lesson", description=__doc__.split("\n\n")[0])
    parser.add_argument("name", metavar="NAME", help="the lesson's name: lower-case words joined by '_'")
    parser.add_argument("--title", help="its title (default: from the name)")
    args = parser.parse_args(argv)
    path = scaffold(args.name, args.title)
    print(f"{path.relative_to(ROOT)}: written, listed in _toc.yml; its check in "
          f"labs/classroom/exercises/{args.name}.py, with its row in {CASES}")
    if run_notebooks([str(path)]):
        return 1
    print(f"Next: fill in the sections and rewrite the check (README.md, \"Writing a lesson\"), then "
          f"python -m tools.notebooks.execute {path.relative_to(ROOT)} and make test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
