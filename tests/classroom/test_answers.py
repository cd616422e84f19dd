"""labs.retrieval.files's exercise-answer helpers: what each answer prints and gives back."""

from __future__ import annotations

import pytest

from labs.classroom.answers import (
    grade_number, number_answer, ONE_NUMBER, word_answer,
)


@pytest.mark.parametrize("answer, value", [(3, 3.0), ("2.5", 2.5), (" 1e3 ", 1000.0), (True, 1.0)])
def test_number_answer_gives_the_float_silently(capsys, answer, value):
    assert number_answer(answer, "unused") == value
    assert capsys.readouterr().out == ""


def test_number_answer_not_answered_prints_the_given_line(capsys):
    assert number_answer(None, "Not answered yet: a number") is None
    assert capsys.readouterr().out == "Not answered yet: a number\n"


@pytest.mark.parametrize("answer", ["x", "", [1], (2, 2), object])
def test_number_answer_not_a_number_prints_the_hint_with_the_answer(capsys, answer):
    assert number_answer(answer, "unused") is None
    assert capsys.readouterr().out == f"Hint: the answer is one number, got {answer!r}\n"
    assert number_answer(answer, "unused", "Give a number, not {answer!r}.") is None
    assert capsys.readouterr().out == f"Give a number, not {answer!r}.\n"


def test_number_answer_refuses_a_bool_only_when_asked(capsys):
    assert number_answer(False, "unused", refuse_bool=True) is None
    assert capsys.readouterr().out == ONE_NUMBER.format(answer=False) + "\n"
    assert number_answer(False, "unused") == 0.0


def test_word_answer(capsys):
    words = ("up", "down")
    assert word_answer(" Down ", words, "unused", "unused") == "down"
    assert capsys.readouterr().out == ""
    assert word_answer(None, words, "Not answered yet", "unused") is None
    assert capsys.readouterr().out == "Not answered yet\n"
    assert word_answer("sideways", words, "unused", 'Answer with "up" or "down", got {answer!r}') is None
    assert capsys.readouterr().out == "Answer with \"up\" or \"down\", got 'sideways'\n"


def test_grade_number_right_known_miss_or_otherwise(capsys):
    misses = {4.0: "masked", 0.0: "zero"}
    assert grade_number(3.0000001, 3.0, "right", misses, "other", tol=1e-6) is True
    assert capsys.readouterr().out == "right\n"
    for value, said in ((4.0, "masked"), (-1e-7, "zero"), (2.0, "other"), (float("nan"), "other")):
        assert grade_number(value, 3.0, "right", misses, "other", tol=1e-6) is False
        assert capsys.readouterr().out == said + "\n"
