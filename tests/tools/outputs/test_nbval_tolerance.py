"""The tolerance plugin (tools/outputs/nbval_tolerance.py): numbers within a declared tolerance,
everything else exactly; and, end to end, a plain `pytest --nbval` run that uses it."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from tools.outputs import spread
from tools.outputs.nbval_tolerance import (
    DeclarationError,
    Tolerance,
    compare_text,
    declaration,
    split_numbers,
)

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("text, numbers", [
    ("loss 1e-3, 2.5E+04", ["1e-3", "2.5E+04"]),
    ("moves -0.5 and +0.2 (-0.25)", ["-0.5", "+0.2", "-0.25"]),
    ("loss=-0.01, a \u22120.5", ["-0.01", "\u22120.5"]),
    ("95% of 1,797 images", ["95", "1,797"]),
    ("x2 d=384 [0.1, 0.2]", ["384", "0.1", "0.2"]),
    ("Qwen3-Embedding-0.6B at 128 tokens", ["0.6", "128"]),
    ("torch 2.13.0, float32, step_400, digest 3fa9c0", []),
    ("2026-12-01", ["2026", "12", "01"]),
    ("3x 'one', 384d, a .5 share", ["3", "384", ".5"]),
    ("a-b 5-3 = 2.", ["5", "3", "2"]),
])
def test_what_counts_as_a_number_and_the_words_between_rebuild_the_text(text, numbers):
    words, found = split_numbers(text)
    assert [n.raw for n in found] == numbers
    assert "".join(w + n.raw for w, n in zip(words, found)) + words[-1] == text


ATOL = Tolerance(atol=Decimal("0.01"))
BOTH = Tolerance(atol=Decimal("0.01"), rtol=Decimal("0.01"))  # allows 0.01 + 0.01 * 10 = 0.11 at 10, as numpy.isclose
RTOL = Tolerance(rtol=Decimal("0.2"))
COUNTS = Tolerance(rtol=Decimal("0.02"), integers=True)


@pytest.mark.parametrize("stored, new, tolerance, holds", [
    ("spread 0.02\n", "spread 0.03\n", ATOL, True),                    # exactly 0.01: decimals, not floats
    ("loss 1.0\n", "loss 1.1\n", Tolerance(atol=Decimal("0.1")), True),  # 1.1 - 1.0 > 0.1 in floats
    ("10.00", "10.11", BOTH, True),
    ("10.00", "10.12", BOTH, False),
    ("1e-3", "1.2e-3", RTOL, True),
    ("1e-3", "1.3e-3", RTOL, False),
    ("0.0", "0.1", RTOL, False),                                        # nothing relative to zero
    ("gap 0.01", "gap -0.01", ATOL, False),                             # a sign change moves by 0.02
    ("gap 0.00", "gap -0.00", ATOL, True),                              # minus zero is zero
    ("400 steps: 0.42", "401 steps: 0.42", Tolerance(atol=Decimal(5)), False),  # integers exact unless declared
    ("400 steps: 0.42", "401 steps: 0.42", Tolerance(atol=Decimal(5), integers=True), True),
    ("1,797 digits, 95%", "1,800 digits, 96%", COUNTS, True),
    ("1,797 digits, 95%", "1,900 digits, 96%", COUNTS, False),
])
def test_numbers_are_compared_within_the_tolerance(stored, new, tolerance, holds):
    assert (compare_text(stored, new, tolerance) == []) is holds


@pytest.mark.parametrize("stored, new, why", [
    ("loss 0.42", "gain 0.42", "the words changed, line 1:"),
    ("loss 0.42", "loss: 0.42", "the words changed"),            # punctuation
    ("a\nloss  0.42", "a\nloss 0.42", "the words changed, line 2:\n      stored: 'loss  0.42'"),  # spacing
    ("model x2", "model x3", "the words changed"),               # digits glued to a word are words
    ("torch 2.13.0", "torch 2.13.1", "the words changed"),       # so are versions
    ("seen in Qwen3", "seen in Qwen4", "the words changed"),
    ("0.1 0.2", "0.1", "the words changed, line 1:\n      stored: '0.1 0.2'\n      new:    '0.1'"),  # a count
    ("0.1", "0.1 0.2", "the words changed"),
    ("[0.1, 0.2]", "[0.1, 0.2,\n 0.3]", "the words changed, line 1:\n      stored: '[0.1, 0.2]'"),
    ("loss 0.42", "loss 0.42\n", "the words changed, line 2:\n      stored: None\n      new:    ''"),  # a line more
])
def test_changed_words_or_count_fail_whatever_the_tolerance(stored, new, why):
    (problem,) = compare_text(stored, new, Tolerance(atol=Decimal(1000), integers=True))
    assert problem.startswith(why)


@pytest.mark.parametrize("declared, expected", [
    (None, None),
    ({"atol": 0.03}, Tolerance(atol=Decimal("0.03"))),
    ({"rtol": 0.002, "integers": True}, Tolerance(rtol=Decimal("0.002"), integers=True)),
    ({"atol": 1, "rtol": 0.1}, Tolerance(atol=Decimal(1), rtol=Decimal("0.1"))),
    *[(malformed, DeclarationError) for malformed in (
        {"atol": 0.03, "tol": 0.1}, {"atol": -0.1}, {"atol": "0.1"}, {"atol": True}, {"atol": 0}, {}, 0.1,
        {"atol": 0.1, "integers": "yes"}, {"atol": math.inf}, {"rtol": math.nan})],
])
def test_a_declaration_is_read_from_the_cell_metadata(declared, expected):
    cell = {"metadata": {} if declared is None else {"nbval": declared}}
    if expected is DeclarationError:
        with pytest.raises(DeclarationError):
            declaration(cell)
    else:
        assert declaration(cell) == expected


# ---- end to end: pytest --nbval on a notebook, in a subprocess, with the project's settings ---------

def cell(stored: str | None, declared: dict | None = None, printed: str = "1.645") -> nbformat.NotebookNode:
    """A cell printing `loss {printed} after 400 steps`, stored as having printed `stored` there (None: no output)."""
    node = new_code_cell(f"print('loss {printed} after 400 steps')", execution_count=1, outputs=[] if stored is None
                         else [new_output("stream", name="stdout", text=f"loss {stored} after 400 steps\n")])
    node.metadata.update({"nbval": declared} if declared else {})
    return node


@pytest.mark.e2e
def test_plain_pytest_nbval_compares_within_the_declared_tolerance(tmp_path):
    nb = new_notebook(cells=[cell("1.649", {"atol": 0.01}),  # inside its tolerance: passes
                             cell("2.145", {"atol": 0.01}),  # outside: fails
                             cell("1.645"),                  # undeclared, the same text: passes
                             cell("1.646"),                  # undeclared, one digit off: fails (exact)
                             cell("1.649 in 3.1 s", {"atol": 0.01}, "1.645 in 2.5 s"),  # compared sanitized
                             cell("1.645", {"tolerance": 0.01}),  # malformed: fails by name
                             cell(None, {"atol": 1})],       # an output added: nbval compares, and fails
                      metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, str(tmp_path / "tiny.ipynb"))
    run = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-c", "pyproject.toml",
                          "-p", "tools.outputs.spread", "--spread-record", tmp_path / "record.json",  # make spread's
                          "--nbval", tmp_path / "tiny.ipynb"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    outcomes = re.findall(r"::Cell (\d) (PASSED|FAILED)", run.stdout)
    assert [o == "PASSED" for _, o in outcomes] == [True, False, True, False, True, False, False], run.stdout
    assert re.search(r"tiny.ipynb, cell 1 \(id \w+\): outside its declared tolerance \(atol 0.01\):\n.*line 1 'loss "
                     r"2.145 after 400 steps': stored 2.145, new 1.645: off by 0.500, tolerance 0.010", run.stdout)
    assert re.search(r"tiny.ipynb, cell 5 \(id \w+\): metadata \"nbval\": .*'tolerance' was unexpected", run.stdout)
    moved = spread.analyse(json.loads((tmp_path / "record.json").read_text()))["moved"]
    assert {cid: [(m["stored"], m["new"]) for m in cell] for cid, cell in moved.items()} == {
        nb.cells[k].id: [(was, "1.645")] for k, was in ((0, "1.649"), (1, "2.145"), (3, "1.646"), (4, "1.649"))}
