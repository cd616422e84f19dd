"""make lesson (tools/notebooks/lesson.py): a new lesson that keeps the mechanical rules of README.md's "Writing a
lesson" before a word of it is written: the lesson rules of tests/notebooks/test_rules.py, the install
cell, its _toc.yml line in course order, and no spread to measure (it prints no number)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.notebooks import test_rules as rules
from tools.notebooks import install_cell, lesson
from tools.outputs import spread

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def course(tmp_path):
    """The course's lesson names and _toc.yml, in a folder of its own."""
    (tmp_path / "notebooks").mkdir()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        (tmp_path / "notebooks" / path.name).write_text("{}")
    shutil.copy(ROOT / "_toc.yml", tmp_path / "_toc.yml")
    return tmp_path


def test_a_scaffolded_lesson_keeps_the_mechanical_rules(course):
    before = (course / "_toc.yml").read_text()
    path = lesson.scaffold("retrieval_eval", root=course)
    last = sorted((ROOT / "notebooks").glob("*.ipynb"))[-1]
    assert path.name == f"{int(last.name[:2]) + 1:02d}_retrieval_eval.ipynb"
    rules.test_lesson_shape(path)
    rules.test_a_lesson_is_read_in_one_sitting(path)
    rules.test_nothing_from_writing_the_book_is_on_the_page(path)
    assert install_cell.problems(path, install_cell.cell_text()) == []
    toc = (course / "_toc.yml").read_text()
    listed = re.findall(r"file:\s*notebooks/(\S+)", toc)
    assert listed == sorted(listed) and listed[-1] == path.stem
    assert toc.replace(f"      - file: notebooks/{path.stem}\n", "", 1) == before  # one line added, nothing else
    assert f"]({last.name})" in rules.prose(rules.load(path))  # what to know first: the lesson before
    assert spread.check_notebook(path, {"notebooks": {}}, root=course) == []  # prints no number: nothing to measure


@pytest.mark.parametrize("name, message", [("retrieval-eval", "lower-case words"), ("11_eval", "lower-case words"),
                                           ("Eval", "lower-case words"), ("pooling", "exists already")])
def test_a_bad_or_taken_name_is_refused_and_nothing_is_written(course, name, message):
    before = sorted(p.name for p in (course / "notebooks").iterdir()), (course / "_toc.yml").read_text()
    with pytest.raises(SystemExit, match=message):
        lesson.scaffold(name, root=course)
    assert (sorted(p.name for p in (course / "notebooks").iterdir()), (course / "_toc.yml").read_text()) == before


@pytest.mark.e2e  # a kernel
def test_a_scaffolded_lesson_runs_cleanly_and_prints_no_number(course):
    from tools.notebooks.execute import execute

    path = lesson.scaffold("retrieval_eval", root=course)
    execute(path)
    rules.test_every_code_cell_ran_cleanly(path)
    assert spread.check_notebook(path, {"notebooks": {}}, root=course) == []
