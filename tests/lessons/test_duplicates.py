"""labs.lessons.duplicates: the shared-score gradient by hand against autograd, the ln n floor, the checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from labs.classroom.exercises.infonce import (
    check_duplicate_floor, check_twin_push,
)
from labs.lessons.duplicates import (
    duplicate_floor, row_shares, shared_score_gradient,
)
from labs.lessons.infonce import info_nce_rows


@pytest.mark.parametrize("tau", [1.0, 0.5, 0.05])
@pytest.mark.parametrize("copies", [[0, 2], [1, 0], [2, 0, 3]])
def test_shared_score_gradient_matches_autograd(tau, copies):
    rng = np.random.default_rng(len(copies))
    base = rng.uniform(-0.5, 0.5, 5)
    s = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    others = torch.tensor(base, dtype=torch.float64)
    row = torch.stack([s if j in copies else others[j] for j in range(5)])  # one score in every copy's cell
    loss = -torch.log_softmax(row / tau, dim=0)[copies[0]]
    loss.backward()
    scores = row.detach().numpy()
    assert shared_score_gradient(scores, copies, tau) == pytest.approx(s.grad.item(), rel=1e-10, abs=1e-12)
    assert shared_score_gradient(scores, copies, tau) < 0  # a pull, whatever the shares


def test_twin_score_is_pushed():
    """A distinct right text has its own score: its derivative is its share / tau > 0."""
    scores = torch.tensor([0.8, 0.3, 0.75], dtype=torch.float64, requires_grad=True)
    loss = -torch.log_softmax(scores / 0.5, dim=0)[0]
    loss.backward()
    assert scores.grad[2].item() == pytest.approx(row_shares([0.8, 0.3, 0.75], 0.5)[2] / 0.5)
    assert scores.grad[2].item() > 0


def test_duplicate_floor_is_where_the_pull_vanishes():
    for n in (1, 2, 3):
        row = [5.0] * n + [-5.0, -5.0]  # copies far ahead of the negatives
        assert info_nce_rows(np.array([row]), 0.1)[0] == pytest.approx(duplicate_floor(n), abs=1e-12)
        assert abs(shared_score_gradient(row, list(range(n)), 0.1)) < 1e-12
    assert duplicate_floor(2) == pytest.approx(math.log(2))


def test_bad_input():
    with pytest.raises(ValueError, match="same"):
        shared_score_gradient([0.8, 0.3, 0.7], [0, 2], 0.5)
    with pytest.raises(ValueError, match="copies"):
        shared_score_gradient([0.8, 0.3, 0.8], [0, 5], 0.5)
    with pytest.raises(ValueError, match="copies"):
        shared_score_gradient([0.8, 0.3, 0.8], [0, 0], 0.5)
    with pytest.raises(ValueError, match="scores"):
        row_shares([0.8], 0.5)
    with pytest.raises(ValueError, match="tau"):
        row_shares([0.8, 0.1], 0)
    with pytest.raises(ValueError, match="n_copies"):
        duplicate_floor(0)


def test_checks(capsys):
    for wrong in (None, "x", 0.0, math.log(2), 1 / 3, 2.0):
        assert check_duplicate_floor(wrong) is False
    for wrong in (None, "pull", "left"):
        assert check_twin_push(wrong) is False
    hints = capsys.readouterr().out
    assert "1.1" not in hints and "ln 3" not in hints and "push" not in hints.replace('"push"', "")
    assert check_duplicate_floor(math.log(3)) is True
    assert check_duplicate_floor(1.1) is True
    assert check_twin_push("push") is True and check_twin_push(" Push ") is True
