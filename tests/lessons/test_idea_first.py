"""The lessons' code reads idea first: every public function's idea starts within the first three
statements of its body, and the wing holds few guards (its checks are the words of `labs.checks`).

A statement is a check when it only checks: ``require(...)``, a call of a `labs.checks` word (or of
a private rule of the module that calls one) whose result may be kept (``k = integer(k, "k", 1)``),
or a loop or ``with`` block holding nothing else. Anything else, a ``return`` included, is the idea.
Arguments declared in ``@arguments(...)`` are checked before the body and count as no statement.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import labs.checks

LESSONS = Path(__file__).resolve().parents[2] / "labs" / "lessons"
MODULES = sorted(p for p in LESSONS.glob("*.py") if p.name != "__init__.py")

#: Words of labs.checks that compute rather than check (normalising, stepping an optimizer, S / tau).
COMPUTING = {"unit_rows", "optimizer_step", "scaled_scores"}
#: Builtins a check statement may call while it checks (to collect or count what it checks).
COLLECTING = {"set", "list", "tuple", "sorted", "len", "isinstance", "range", "enumerate", "zip", "int", "float",
              "bool", "str", "next", "all", "any"}
MOST_RAISES = 150


def _called(node: ast.AST) -> list[str]:
    names = []
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            f = call.func
            names.append(f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "?")
    return names


def _checks(tree: ast.Module) -> set[str]:
    """The names that check, in one module: the labs.checks words it imports and its private rules."""
    words = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "labs.checks"
             for a in n.names} - COMPUTING
    rules = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("_")
             and set(_called(n)) & (words | {"require"})}
    return words | rules


def _is_check(stmt: ast.stmt, checks: set[str]) -> bool:
    if isinstance(stmt, (ast.For, ast.With)):
        return all(_is_check(s, checks) for s in stmt.body)
    if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign)) and stmt.value is not None:
        called = _called(stmt.value)
        return bool(set(called) & checks) and set(called) <= checks | COLLECTING
    return False


def _public_functions():
    for path in MODULES:
        tree = ast.parse(path.read_text())
        exported = next((ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                         and any(getattr(t, "id", "") == "__all__" for t in n.targets)), [])
        checks = _checks(tree)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name in exported:
                body = node.body[1:] if ast.get_docstring(node) else node.body
                yield f"{path.stem}.{node.name}", body, checks


FUNCTIONS = list(_public_functions())


@pytest.mark.parametrize("name, body, checks", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_the_idea_starts_within_three_statements(name, body, checks):
    first_idea = next((i for i, stmt in enumerate(body) if not _is_check(stmt, checks)), None)
    assert first_idea is not None, f"{name} only checks"
    assert first_idea < 3, (f"{name}: the idea starts at statement {first_idea + 1} (line {body[first_idea].lineno}); "
                            "state rules between arguments in one line each, or declare argument checks in @arguments")


def test_the_lessons_wing_holds_few_raises_and_no_private_check_doors():
    raises = {p.name: sum(isinstance(n, ast.Raise) for n in ast.walk(ast.parse(p.read_text()))) for p in MODULES}
    assert sum(raises.values()) < MOST_RAISES, raises
    doors = [f"{p.name}: {n.name}" for p in MODULES for n in ast.walk(ast.parse(p.read_text()))
             if isinstance(n, ast.FunctionDef) and n.name.startswith("_check")]
    assert not doors, doors


def test_every_check_word_is_documented_and_exported():
    for name in labs.checks.__all__:
        assert getattr(labs.checks, name).__doc__, f"labs.checks.{name} has no docstring"
