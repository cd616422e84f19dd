"""The temperature module: its gradient formula, its toy data and the training claims the lesson makes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from labs.classroom.exercises.temperature import check_batch_tau, check_halved_gap_tau, check_pull_ratio
from labs.lessons.infonce import info_nce_torch, positive_share
from labs.lessons.temperature import (
    make_toy_pairs, positive_loss_gradient, train_at_temperature, train_at_temperatures,
)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny matrices: one thread is much faster than two (and than two contended ones)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("tau", [1.0, 0.3, 0.05, 0.01])
def test_gradient_formula_matches_autograd(tau):
    s = torch.tensor([0.8, 0.6, 0.55, 0.1], dtype=torch.float64, requires_grad=True)
    (-torch.log_softmax(s / tau, dim=0)[0]).backward()
    assert positive_loss_gradient(0.8, [0.6, 0.55, 0.1], tau) == pytest.approx(s.grad[0].item(), abs=1e-12)


def test_only_rows_near_a_mistake_are_pulled_with_one_over_tau():
    """The lesson's pull figure: cold, a row behind gets ~1/tau, a level row half, a leading row nothing."""
    tau = 0.005
    behind = -positive_loss_gradient(0.55, [0.6, 0.4, 0.4], tau) * tau
    level = -positive_loss_gradient(0.6, [0.6, 0.4, 0.4], tau) * tau
    ahead = -positive_loss_gradient(0.8, [0.6] * 3, tau) * tau
    assert behind == pytest.approx(1, abs=1e-4) and level == pytest.approx(0.5, abs=1e-4) and ahead < 1e-15
    warm = [-positive_loss_gradient(0.8, [0.6] * 3, t) for t in (0.5, 0.13, 0.01)]
    assert warm[1] > warm[0] and warm[1] > 1e5 * warm[2]  # the leading row's pull peaks, then vanishes


def test_toy_pairs_are_deterministic_and_shaped():
    q1, d1 = make_toy_pairs(10, seed=3)
    q2, d2 = make_toy_pairs(10, seed=3)
    assert q1.shape == d1.shape == (10, 32)
    assert torch.equal(q1, q2) and torch.equal(d1, d2)
    assert not torch.equal(q1, make_toy_pairs(10, seed=4)[0])


def test_toy_pairs_reject_bad_input():
    with pytest.raises(ValueError, match="n"):
        make_toy_pairs(0)
    with pytest.raises(ValueError, match="noise"):
        make_toy_pairs(5, noise=-1)


def test_training_is_reproducible_and_records_every_step():
    a = train_at_temperature(0.1, steps=30)
    b = train_at_temperature(0.1, steps=30)
    assert np.array_equal(a.losses, b.losses) and a.accuracy == b.accuracy
    assert a.heldout_top1.shape == a.losses.shape == (30,)
    assert a.heldout_top1[-1] == a.accuracy
    assert 0 <= a.wrong_rows <= a.teaching_rows <= 1


@pytest.mark.parametrize("optimizer, lr", [("sgd", 0.5), ("adamw", 0.01)])
def test_the_fast_grid_trains_each_model_as_the_plain_loop_does(optimizer, lr):
    """Trained side by side, each (tau, seed) model of the grid follows `train_at_temperature`, the plain
    one-model loop with info_nce_torch. The stack sums rounding in other orders, so the two agree to
    float32 rounding, not bit for bit."""
    taus, seeds, steps = [1.0, 0.1, 0.003], [0, 3], 25
    grid = train_at_temperatures(taus, seeds, steps=steps, optimizer=optimizer, lr=lr)
    for i, tau in enumerate(taus):
        for j, seed in enumerate(seeds):
            plain, run = train_at_temperature(tau, seed=seed, steps=steps, optimizer=optimizer, lr=lr), grid[i][j]
            assert run.tau == tau and run.losses[0] == pytest.approx(plain.losses[0], rel=1e-6)  # before any step
            np.testing.assert_allclose(run.losses, plain.losses, rtol=1e-4)
            torch.testing.assert_close(run.W, plain.W, rtol=1e-4, atol=1e-5)
            assert np.abs(run.heldout_top1 - plain.heldout_top1).max() <= 0.004  # two of 500 queries on an edge
            assert run.accuracy == run.heldout_top1[-1] and plain.accuracy == plain.heldout_top1[-1]
            assert run.share == pytest.approx(plain.share, abs=1e-4)
            assert run.teaching_rows == pytest.approx(plain.teaching_rows, abs=0.01)  # a row or two on SILENT's edge
            assert run.wrong_rows == pytest.approx(plain.wrong_rows, abs=0.01)
            assert run.jitter == pytest.approx(plain.jitter, rel=1e-3, abs=1e-6)


def test_a_small_grid_is_the_plain_loop_run_by_run():
    grid = train_at_temperatures([0.5, 0.02], [1, 2], steps=12, batch=8, heldout=40)
    for i, tau in enumerate((0.5, 0.02)):
        for j, seed in enumerate((1, 2)):
            alone = train_at_temperature(tau, seed=seed, steps=12, batch=8, heldout=40)
            np.testing.assert_allclose(grid[i][j].losses, alone.losses, rtol=1e-4)  # float32 rounding, as above
            torch.testing.assert_close(grid[i][j].W, alone.W, rtol=1e-4, atol=1e-5)
            assert grid[i][j].accuracy == pytest.approx(alone.accuracy, abs=1 / 40)


def test_without_the_curve_the_same_models_are_trained():
    """curve=False only skips measuring held-out top-1 after every step: the training is the same."""
    full = train_at_temperatures([0.1, 0.003], [0, 1], steps=20)
    quick = train_at_temperatures([0.1, 0.003], [0, 1], steps=20, curve=False)
    for a, b in zip(sum(full, []), sum(quick, [])):
        assert np.array_equal(a.losses, b.losses) and torch.equal(a.W, b.W) and a.accuracy == b.accuracy
        assert b.heldout_top1[-1] == a.accuracy and np.isnan(b.heldout_top1[:-1]).all()
        assert math.isnan(b.rank_jitter) and b.share == a.share and b.teaching_rows == a.teaching_rows
    with pytest.raises(ValueError, match="curve must be True or False"):
        train_at_temperatures([0.1], [0], steps=2, curve="no")


@pytest.mark.parametrize("taus, seeds, message", [
    ([], [0], "taus must be a non-empty list"), ("0.1", [0], "taus must be a non-empty list"),
    ([0.1, 0.0], [0], "taus entry must be a finite number > 0, got 0.0"), ([0.1], [], "seeds must be a non-empty list"),
    ([0.1], 3, "seeds must be a non-empty list"), ([0.1], [0, -1], "seeds entry must be an integer >= 0, got -1"),
    ([1e-46], [0], r"tau=1e-46 is too small for these scores"),
], ids=["taus-empty", "taus-string", "tau-zero", "seeds-empty", "seeds-int", "seed-negative", "tau-underflows"])
def test_the_grid_refuses_bad_lists_by_name(taus, seeds, message):
    with pytest.raises(ValueError, match=message):
        train_at_temperatures(taus, seeds, steps=2)


def test_the_lesson_claims_hold():
    runs = {run.tau: run for (run,) in train_at_temperatures([1.0, 0.1, 0.003], [0], steps=300)}
    warm, mid, cold = runs[1.0], runs[0.1], runs[0.003]
    assert warm.share < 0.15  # too warm: never confident
    assert mid.share > 0.6 and cold.share > mid.share
    assert mid.accuracy > warm.accuracy and mid.accuracy > cold.accuracy
    assert mid.teaching_rows > 0.9 and cold.teaching_rows < 0.15  # cold: few rows still pulled
    assert cold.teaching_rows < 2 * cold.wrong_rows  # and those are about the rows ranked wrong
    assert cold.jitter > 5 * mid.jitter  # the raw loss looks jumpy ...
    assert cold.jitter * 0.003 < 2 * mid.jitter * 0.1  # ... not on the loss's own 1/tau scale
    assert cold.rank_jitter < 2 * mid.rank_jitter  # and held-out ranking is no jumpier


def test_adamw_runs_and_differs_from_sgd():
    sgd = train_at_temperature(0.1, steps=20)
    adamw = train_at_temperature(0.1, steps=20, optimizer="adamw", lr=0.01)
    assert not np.array_equal(sgd.losses, adamw.losses)
    assert adamw.losses[0] == sgd.losses[0]  # same data and start: the first loss is before any step


def test_training_rejects_bad_arguments():
    with pytest.raises(ValueError, match="tau"):
        train_at_temperature(0.0)
    with pytest.raises(ValueError, match="batch"):
        train_at_temperature(0.1, batch=1)
    with pytest.raises(ValueError, match="optimizer"):
        train_at_temperature(0.1, optimizer="adam")
    with pytest.raises(ValueError, match="lr"):
        train_at_temperature(0.1, lr=0)


def said(capsys) -> str:
    """What a check printed, with its phone-width line breaks undone."""
    return " ".join(capsys.readouterr().out.split())


def wrong_hints(capsys, check, answers) -> str:
    """Each wrong answer fails with a hint (never a "Right"); all the hints, joined."""
    out = []
    for answer in answers:
        assert check(answer) is False
        out.append(said(capsys))
        assert out[-1] and not out[-1].startswith("Right")
    return "\n".join(out)


def test_check_halved_gap_tau(capsys):
    assert positive_share(0.7, [0.6] * 3, 0.025) == pytest.approx(positive_share(0.8, [0.6] * 3, 0.05))
    assert check_halved_gap_tau(0.025) is True and said(capsys).startswith("Right")
    assert "0.025" not in wrong_hints(capsys, check_halved_gap_tau, (0.05, 0.1, 0.02, 0.03, 0, None, "x"))


def test_check_batch_tau(capsys):
    largest = 0.2 / math.log(9 * 31)
    assert positive_share(0.8, [0.6] * 31, largest) == pytest.approx(0.9)
    assert check_batch_tau(0.035) is True and check_batch_tau(round(largest, 4)) is True
    capsys.readouterr()
    out = wrong_hints(capsys, check_batch_tau, (0.036, 0.034, 0.061, -1, None))
    assert "three wrong cards" in out  # 0.061 answers the question for the slider's three cards
    assert "0.035" not in out


def test_check_pull_ratio(capsys):
    behind = -positive_loss_gradient(0.55, [0.6], 0.01)
    ahead = -positive_loss_gradient(0.65, [0.6], 0.01)
    assert check_pull_ratio(behind / ahead) is True and check_pull_ratio(148) is True
    capsys.readouterr()
    assert "148" not in wrong_hints(capsys, check_pull_ratio, (100, 1, math.exp(10), 10, None))


# --- arguments checked at the top, named in one ValueError (issue 28) ---------------------------


@pytest.mark.parametrize("args, kwargs, message", [
    ((2.5,), {}, "n must be an integer from 1 to 100000, got 2.5"), (("3",), {}, "n must be an integer from 1 to 100000, got '3'"),
    ((True,), {}, "n must be an integer from 1 to 100000, got True"),
    ((3,), {"noise": float("nan")}, "noise must be a finite number >= 0, got nan"),
    ((3,), {"noise": float("inf")}, "noise must be a finite number >= 0, got inf"),
    ((3,), {"noise": 1j}, "noise must be a finite number >= 0, got 1j"),
    ((3,), {"noise": "1"}, "noise must be a finite number >= 0, got '1'"),
    ((3,), {"noise": True}, "noise must be a finite number >= 0, got True"),
    ((3,), {"seed": -1}, "seed must be an integer >= 0, got -1"), ((3,), {"seed": "a"}, "seed must be an integer >= 0"),
    ((3,), {"latent": 0}, "latent must be an integer from 1 to 100000, got 0"), ((3,), {"dim": 2.5}, "dim must be an integer from 1 to 100000"),
    ((3,), {"dim": 0}, "dim must be an integer from 1 to 100000, got 0"),
], ids=["n-float", "n-string", "n-bool", "noise-nan", "noise-inf", "noise-complex", "noise-string", "noise-bool",
        "seed-negative", "seed-string", "latent-0", "dim-float", "dim-0"])
def test_toy_pairs_refuse_settings_of_the_wrong_kind(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_toy_pairs(*args, **kwargs)


def test_toy_pairs_take_numpy_numbers():
    want = make_toy_pairs(7, seed=2, noise=1.5)
    got = make_toy_pairs(np.int64(7), seed=np.int64(2), noise=np.float32(1.5), latent=np.int32(16), dim=np.int64(32))
    assert all(torch.equal(a, b) for a, b in zip(got, want))


@pytest.mark.parametrize("kwargs, message", [
    ({"lr": float("nan")}, "lr must be a finite number > 0, got nan"),
    ({"lr": float("inf")}, "lr must be a finite number > 0, got inf"),
    ({"lr": "0.5"}, "lr must be a finite number > 0, got '0.5'"), ({"lr": True}, "lr must be a finite number > 0, got True"),
    ({"steps": 2.5}, "steps must be an integer from 0 to 100000, got 2.5"), ({"steps": -1}, "steps must be an integer from 0 to 100000, got -1"),
    ({"batch": True}, "batch must be an integer from 2 to 100000, got True"),
    ({"batch": 2, "heldout": 2.5}, "heldout must be an integer from 2 to 100000, got 2.5"),
    ({"batch": 8, "heldout": 4}, "heldout must be an integer from 8 to 100000, got 4"),
    ({"seed": "a"}, "seed must be an integer >= 0"), ({"seed": -1}, "seed must be an integer >= 0"),
    ({"seed": 2**64}, r"seed must be an integer from 0 to 2\*\*64 - 1"),
    ({"optimizer": ["sgd"]}, "optimizer must be one of"), ({"optimizer": None}, "optimizer must be one of"),
    ({"noise": float("nan")}, "noise must be a finite number >= 0, got nan"),
    ({"lr": 1e300}, r"lr=1e\+300 is too large for the float32 weights"),
    ({"lr": 1e20, "optimizer": "adamw"}, r"training diverged at step \d+: .* \(is lr=1e\+20 too large\?\)"),
], ids=["lr-nan", "lr-inf", "lr-string", "lr-bool", "steps-float", "steps-negative", "batch-bool", "heldout-float",
        "heldout-small", "seed-string", "seed-negative", "seed-huge", "optimizer-list", "optimizer-none", "noise-nan", "lr-huge",
        "lr-diverges"])
def test_training_refuses_settings_of_the_wrong_kind_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        train_at_temperature(0.1, **{"steps": 4, **kwargs})


def test_training_takes_numpy_numbers_and_says_what_zero_steps_give():
    want = train_at_temperature(0.5, steps=6, batch=4, heldout=16, lr=0.5, seed=1)
    got = train_at_temperature(np.float64(0.5), steps=np.int64(6), batch=np.int32(4), heldout=np.int64(16),
                               lr=np.float32(0.5), seed=np.int64(1))
    assert np.array_equal(got.losses, want.losses) and torch.equal(got.W, want.W)
    untrained = train_at_temperature(0.1, steps=0, heldout=64)  # documented: no batch seen, so NaN averages
    assert untrained.losses.shape == (0,) and math.isnan(untrained.teaching_rows) and math.isnan(untrained.wrong_rows)
    assert 0 <= untrained.accuracy <= 1


# ---- a learning rate too large: named, whichever way it shows --------------------------------


def test_a_learning_rate_that_overflows_the_step_is_named():
    from labs.lessons.temperature import optimizer_step

    w = torch.nn.Parameter(torch.ones(2))
    opt = torch.optim.SGD([w], lr=1e300)
    (w * 1e30).sum().backward()
    with pytest.raises(ValueError, match=r"lr=1e\+300 is too large for the float32 tower: the step overflows"):
        optimizer_step(opt, 1e300, "the float32 tower")


def test_weights_that_stop_being_finite_are_named_with_the_step_and_lr():
    from labs.checks import still_finite

    still_finite(torch.ones(2), "the encoder is no longer finite", "step 3", 0.5)
    with pytest.raises(ValueError, match=r"training diverged at step 3: the encoder is no longer finite \(is lr=50\.0"):
        still_finite(torch.tensor([1.0, float("nan")]), "the encoder is no longer finite", "step 3", 50.0)
