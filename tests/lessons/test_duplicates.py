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


# ---- input that is not one row of real numbers, copies that are not columns ----------------


@pytest.mark.parametrize("scores, message", [
    ([1 + 2j, 0.5], "scores holds complex numbers"),
    ([True, False], "scores must hold real numbers, got booleans"),
    (["0.1", "0.2"], "scores must hold real numbers, got text"),
    ([[0.1, 0.2], [0.3]], "scores is ragged"),
    (None, "scores must hold real numbers, got None"),
    ([], "scores must be one row of at least 2 cosines"),
    (np.float64(0.3), "scores must be one row of at least 2 cosines"),
    ([[0.8, 0.3], [0.8, 0.1]], "scores must be one row"),
    ([np.nan, 0.1], "scores contains NaN or infinite entries"),
    ([np.inf, 0.1], "scores contains NaN or infinite entries"),
    (torch.tensor([0.1, 0.2], requires_grad=True),
     r"scores is a torch tensor that requires grad: .* scores.detach\(\)"),
    (np.ma.masked_array([0.5, 9.0, 0.1], mask=[0, 1, 0]), "scores is a masked array"),
    ([10**400, 0], "too large for a float"),
], ids=["complex", "bools", "strings", "ragged", "none", "empty", "0-d", "2-d", "nan", "inf", "requires-grad",
        "masked", "huge-int"])
def test_scores_that_are_not_one_row_of_real_numbers_are_refused_by_name(scores, message):
    with pytest.raises(ValueError, match=message):
        row_shares(scores, 0.5)
    with pytest.raises(ValueError, match=message):
        shared_score_gradient(scores, [0, 1], 0.5)


@pytest.mark.parametrize("copies", [[0, 2.0], [False, True], "02", 0, None, [0, -1], np.array([0.0, 2.0])],
                         ids=["float", "bools", "string", "int", "none", "negative", "float-array"])
def test_copies_that_are_not_column_indices_are_refused_by_name(copies):
    with pytest.raises(ValueError, match="copies must be distinct column indices of the row"):
        shared_score_gradient([0.8, 0.3, 0.8], copies, 0.5)


def test_numpy_and_torch_rows_and_indices_give_the_same_answer():
    want = shared_score_gradient([0.8, 0.3, 0.8], [0, 2], 0.5)
    assert shared_score_gradient(np.array([0.8, 0.3, 0.8]), np.array([0, 2]), np.float32(0.5)) == pytest.approx(want)
    assert shared_score_gradient(torch.tensor([0.8, 0.3, 0.8]), [0, 2], 0.5) == pytest.approx(want, rel=1e-6)
    half = torch.tensor([0.5, 0.25], dtype=torch.bfloat16)  # NumPy has no bfloat16: read as float32
    np.testing.assert_array_equal(row_shares(half, 0.5), row_shares([0.5, 0.25], 0.5))
    assert duplicate_floor(np.int64(2)) == pytest.approx(math.log(2))
    for bad in (2.0, True, "2"):
        with pytest.raises(ValueError, match="n_copies"):
            duplicate_floor(bad)


def test_a_tau_too_small_for_the_scores_is_named_and_far_apart_scores_are_fine():
    with pytest.raises(ValueError, match=r"tau=0.001 is too small for these scores: scores / tau overflows"):
        row_shares([1e308, -1e308], 1e-3)
    np.testing.assert_array_equal(row_shares([1e308, -1e308], 1.0), [1.0, 0.0])
