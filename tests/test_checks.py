"""Every exercise check, against a right and a wrong answer; wrong answers never reveal the right one."""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import pytest

import labs.checks as checks
from labs.clip import steps_to_reach
from labs.finetune import FIRST_JUMP_B
from labs.hard_negatives_checks import best_in_batch_accuracy
from labs.infonce import positive_share
from labs.margin_toy import pull, push
from labs.rerank import PARAPHRASE_RANK

ROOT = Path(__file__).resolve().parents[1]


def sharper_tau():
    return max(t / 100 for t in range(1, 100) if positive_share(0.8, [0.6] * 3, t / 100) >= 0.9)


# check name -> (a function giving the right answer, a wrong answer, text the wrong answer's hint must not show)
CASES = {
    "check_unmasked_mean": (lambda: 3.0, 4.0, None),
    "check_padding_safe_mode": (lambda: "cls", "mean", "cls"),
    "check_cross_encoder_reason": (lambda: "b", "a", None),
    "check_best_cell": (lambda: (2, 2), (1, 2), "(2, 2)"),
    "check_duplicate_floor": (lambda: math.log(3), math.log(2), "1.10"),
    "check_twin_push": (lambda: "push", "pull", None),
    "check_sharper_tau": (sharper_tau, 0.5, None),
    "check_share_threshold": (lambda: "down", "up", "down"),
    "check_scale_for_tau": (lambda: 1 / 0.07, 0.07, "14.3"),
    "check_pull": (lambda: pull, lambda a, b, rate: (a, b), None),
    "check_push": (lambda: push, pull, None),
    "check_best_in_batch": (lambda: best_in_batch_accuracy(0.1), 0.0, None),
    "check_chance_loss": (lambda: math.log(16), 1 / 16, f"{math.log(16):.2f}"),
    "check_kept_epoch": (lambda: 2, 3, None),
    "check_first_jump": (lambda: FIRST_JUMP_B, FIRST_JUMP_B - 1, None),  # the batch: notebook 05 asserts it
    "check_uniform_table_loss": (lambda: math.log(3), 1 / 3, f"{math.log(3):.2f}"),
    "check_steps_to_90": (lambda: steps_to_reach(0.9, tau=1.0, seed=0), 0, None),
    "check_false_negative_floor": (lambda: math.log(2) / 2, math.log(2), "0.35"),
    "check_short_vector_bytes": (lambda: 64 * 4, 64, "256"),
    "check_smallest_shortlist": (lambda: PARAPHRASE_RANK, 6, None),  # the rank: tests/test_rerank.py
    "check_rerank_ceiling": (lambda: 70 / 100, 1.0, "0.7"),
}

ALL = {check.__name__: check for lesson in checks.EXERCISES.values() for check in lesson}


def test_every_check_has_a_case():
    assert set(ALL) == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_right_answer_passes(name, capsys):
    right, _, _ = CASES[name]
    assert ALL[name](right()) is True
    assert capsys.readouterr().out.startswith("Right")


@pytest.mark.parametrize("name", sorted(CASES))
def test_wrong_answer_fails_without_revealing(name, capsys):
    _, wrong, secret = CASES[name]
    assert ALL[name](wrong) is False
    out = capsys.readouterr().out
    assert out.strip() and not out.startswith("Right")
    if secret:
        assert secret not in out


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_answer_yet_asks_for_one(name, capsys):
    assert ALL[name](None) is False
    assert "fill in" in capsys.readouterr().out.lower()


def test_every_check_in_labs_is_gathered():
    """An exercise check is a top-level ``check_*`` returning ``bool``; argument validators
    (``check_tau``, ``check_int``, ...) return the checked value or nothing."""
    defined = set()
    for path in (ROOT / "labs").glob("*.py"):
        tree = ast.parse(path.read_text())
        defined |= {
            n.name
            for n in tree.body
            if isinstance(n, ast.FunctionDef)
            and n.name.startswith("check_")
            and n.returns is not None
            and ast.unparse(n.returns) == "bool"
        }
    assert defined == set(ALL)


@pytest.mark.parametrize("lesson", sorted(checks.EXERCISES))
def test_each_lesson_calls_its_checks_with_no_committed_solution(lesson):
    nb = json.loads((ROOT / "notebooks" / f"{lesson}.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    for check in checks.EXERCISES[lesson]:
        assert f"{check.__name__}(" in code, f"{lesson} never calls {check.__name__}"
