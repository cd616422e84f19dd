"""make lesson (tools/notebooks/lesson.py): a new lesson keeps the mechanical rules of README.md's "Writing a
lesson" (test_rules.py's, the install cell, _toc.yml, test_exercises.py's, no spread) before a word is written."""

from __future__ import annotations

import ast
import inspect
import re
import runpy
import shutil
from pathlib import Path

import pytest

from tests.notebooks import test_rules as rules
from tools.notebooks import install_cell, lesson
from tools.notebooks.execute import execute
from tools.outputs import spread

ROOT = Path(__file__).resolve().parents[3]
# Every rule test_rules.py holds a lesson's file to; the frame keeps all but the stored outputs before it runs.
RULES = [test for name, test in vars(rules).items()
         if name.startswith("test_") and "path" in inspect.signature(test).parameters]


@pytest.fixture
def course(tmp_path):
    """The course's lesson names, _toc.yml, the labs package and the exercise CASES, in a folder of its own."""
    (tmp_path / "notebooks").mkdir()
    for path in rules.NOTEBOOKS:
        (tmp_path / "notebooks" / path.name).write_text("{}")
    shutil.copy(ROOT / "_toc.yml", tmp_path / "_toc.yml")
    shutil.copytree(ROOT / "labs", tmp_path / "labs", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / lesson.CASES).parent.mkdir(parents=True)
    shutil.copy(ROOT / lesson.CASES, tmp_path / lesson.CASES)
    return tmp_path


def test_a_scaffolded_lesson_keeps_the_mechanical_rules(course, capsys):
    toc_before, cases_before = (course / "_toc.yml").read_text(), (course / lesson.CASES).read_text()
    path = lesson.scaffold("retrieval_eval", root=course)
    last = rules.NOTEBOOKS[-1]
    assert path.name == f"{int(last.name[:2]) + 1:02d}_retrieval_eval.ipynb"
    for rule in RULES:
        if rule is not rules.test_every_code_cell_ran_cleanly:
            rule(path)
    assert install_cell.problems(path, install_cell.cell_text()) == []
    toc = (course / "_toc.yml").read_text()
    listed = re.findall(r"file:\s*notebooks/(\S+)", toc)
    assert listed == sorted(listed) and listed[-1] == path.stem
    assert toc.replace(f"      - file: notebooks/{path.stem}\n", "", 1) == toc_before  # one line added, nothing else
    assert f"]({last.name})" in rules.prose(rules.load(path))  # what to know first: the lesson before
    assert spread.check_notebook(path, {"notebooks": {}}, root=course) == []  # prints no number: nothing to measure

    # The rules tests/classroom/test_exercises.py holds every check to: a row in CASES; the right answer
    # passes; a wrong one fails without showing the answer; no answer asks for one; the lesson calls it.
    check = runpy.run_path(str(course / "labs/classroom/exercises/retrieval_eval.py"))["check_retrieval_eval"]
    tree = ast.parse((course / lesson.CASES).read_text())
    cases = next(n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "CASES")
    row = next(v for k, v in zip(cases.keys, cases.values) if k.value == "check_retrieval_eval")
    right, wrong, secret = eval(compile(ast.Expression(row), "CASES", "eval"))  # noqa: S307
    assert check(right()) is True and capsys.readouterr().out.startswith("Right")
    assert check(wrong) is False
    out = capsys.readouterr().out
    assert out.strip() and not out.startswith("Right") and secret not in out
    assert check(None) is False and "fill in" in capsys.readouterr().out.lower()
    cells = rules.load(path)["cells"]
    assert "check_retrieval_eval(" in "\n".join(rules.source(c) for c in cells if c["cell_type"] == "code")
    cases_after = (course / lesson.CASES).read_text()
    assert cases_after.replace(lesson.CASE.format(name="retrieval_eval"), "", 1) == cases_before  # one row added


@pytest.mark.parametrize("name, message", [("retrieval-eval", "lower-case words"), ("11_eval", "lower-case words"),
                                           ("Eval", "lower-case words"), ("pooling", "exists already"),
                                           ("spare", "exercises/spare.py exists already")])
def test_a_bad_or_taken_name_is_refused_and_nothing_is_written(course, name, message):
    def state():
        return (sorted(p.name for p in (course / "notebooks").iterdir()), (course / "_toc.yml").read_text(),
                sorted(p.name for p in (course / "labs" / "classroom" / "exercises").iterdir()),
                (course / lesson.CASES).read_text())

    if name == "spare":  # a check module of that name, but no lesson
        (course / "labs" / "classroom" / "exercises" / "spare.py").write_text("")
    before = state()
    with pytest.raises(SystemExit, match=message):
        lesson.scaffold(name, root=course)
    assert state() == before


@pytest.mark.e2e  # a kernel
def test_a_scaffolded_lesson_runs_cleanly_and_prints_no_number(course, monkeypatch):
    path = lesson.scaffold("retrieval_eval", root=course)
    monkeypatch.setenv("PYTHONPATH", str(course))  # the kernel imports the course folder's labs, new check included
    execute(path)
    for rule in RULES:
        rule(path)
    assert spread.check_notebook(path, {"notebooks": {}}, root=course) == []
