"""labs.lessons.duplicates: the shared-score gradient by hand against autograd, the ln n floor, the checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from labs.classroom.exercises.infonce import (
    LESSON_MATRIX, cell_gradient, check_cell_gradient, check_duplicate_floor, check_triplet_batch_loss,
    triplet_batch_loss,
)
from labs.lessons.duplicates import (
    duplicate_floor, row_shares, shared_score_gradient,
)
from labs.lessons.infonce import info_nce, info_nce_rows


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
    hints = capsys.readouterr().out
    assert "1.1" not in hints and "ln 3" not in hints
    assert check_duplicate_floor(math.log(3)) is True
    assert check_duplicate_floor(1.1) is True


def test_cell_gradient_is_autograds_and_the_sliders_finite_difference(capsys):
    S = torch.tensor(LESSON_MATRIX, dtype=torch.float64, requires_grad=True)
    torch.nn.functional.cross_entropy(S / 0.5, torch.arange(3)).backward()
    for r in range(3):
        for c in range(3):
            assert cell_gradient(r + 1, c + 1) == pytest.approx(S.grad[r, c].item(), abs=1e-12)
    bump = np.zeros((3, 3))
    bump[1, 2] = 0.1  # cell (2, 3), as the slider moves it
    table = np.array(LESSON_MATRIX)
    slope = (info_nce(table + bump, 0.5) - info_nce(table - bump, 0.5)) / 0.2
    assert check_cell_gradient(round(slope, 2)) is True  # the slider's road lands inside the tolerance
    capsys.readouterr()
    for wrong in (None, -0.19, 0.57, 0.29, 0.1, 0.5):
        assert check_cell_gradient(wrong) is False
    assert "0.19" not in capsys.readouterr().out


def test_triplet_batch_loss_by_definition(capsys):
    assert triplet_batch_loss(0.2) == 0.0  # every lead of the table is at least 0.3
    assert triplet_batch_loss(0.4) == pytest.approx(0.2 / 6)
    assert triplet_batch_loss(0.8) == pytest.approx((0.3 + 0.1 + 0.3 + 0.5 + 0.2 + 0.5) / 6)
    assert check_triplet_batch_loss(0.033) is True and check_triplet_batch_loss("0.0333") is True
    capsys.readouterr()
    for wrong in (None, 0.0, 0.2, 0.0667, 0.1):
        assert check_triplet_batch_loss(wrong) is False
    assert "0.033" not in capsys.readouterr().out
