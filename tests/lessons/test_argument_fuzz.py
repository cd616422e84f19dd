"""Generated arguments for the lesson functions' public numbers: what a reader naturally passes
(Python numbers, 0-d tensors, NumPy scalars) and what a slip gives (NaN, inf, booleans, text,
tables of the wrong shape, huge integers). Every call either returns a result with no NaN in it,
or refuses with the check vocabulary's one ValueError naming the argument; a 0-d tensor or NumPy
scalar holding a valid number gives the same result as the number itself."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from labs.lessons import gradients, infonce, matryoshka
from tests.lessons.nans import has_nan


def _vectors(n: int = 6, d: int = 8, seed: int = 0) -> torch.Tensor:
    return torch.nn.functional.normalize(torch.randn(n, d, generator=torch.Generator().manual_seed(seed)), dim=-1)


S = np.array([[0.9, 0.2, 0.1], [0.3, 0.8, 0.2], [0.1, 0.4, 0.7]])
X = np.arange(1, 9) / 10
Y = 2 * X + 0.1


def _centroids():
    return matryoshka.spherical_kmeans(_vectors(12), 3, iters=2)


#: name -> (function, base keyword arguments that work, the arguments to replace)
CASES = {
    "cut": (matryoshka.cut, lambda: {"vectors": _vectors(), "m": 4}, ["m"]),
    "matryoshka_loss": (matryoshka.matryoshka_loss,
                        lambda: {"queries": _vectors(), "docs": _vectors(seed=1), "dims": [2, 8], "tau": 0.05,
                                 "weights": [1.0, 0.5]}, ["tau", "dims", "weights"]),
    "reciprocal_ranks": (matryoshka.reciprocal_ranks, lambda: {"scores": torch.tensor(S), "right": [0, 1, 2], "k": 2},
                         ["k", "right"]),
    "bootstrap_interval": (matryoshka.bootstrap_interval, lambda: {"values": [0.1, 0.5, 0.3, 0.9], "level": 0.9,
                                                                  "n": 50, "seed": 3}, ["level", "n", "seed"]),
    "quantize_int8": (matryoshka.quantize_int8, lambda: {"vectors": _vectors(), "scale": 0.5}, ["scale"]),
    "spherical_kmeans": (matryoshka.spherical_kmeans, lambda: {"vectors": _vectors(12), "k": 3, "iters": 2,
                                                                "seed": 1}, ["k", "iters", "seed"]),
    "ivf_search": (matryoshka.ivf_search, lambda: {"query": _vectors(1)[0], "d_vecs": _vectors(12),
                                                   "centroids": _centroids()[0], "assign": _centroids()[1],
                                                   "probes": 2}, ["probes"]),
    "log_softmax_rows": (infonce.log_softmax_rows, lambda: {"Z": S / 0.1}, ["Z"]),
    "info_nce": (infonce.info_nce, lambda: {"S": S, "tau": 0.1}, ["tau"]),
    "positive_share": (infonce.positive_share, lambda: {"pos": 0.8, "negs": [0.6, 0.5], "tau": 0.05},
                       ["pos", "tau"]),
    "info_nce_torch": (infonce.info_nce_torch, lambda: {"queries": _vectors(), "docs": _vectors(seed=1), "tau": 0.05},
                       ["tau"]),
    "train_slope": (gradients.train_slope, lambda: {"x": X, "y": Y, "lr": 0.5, "batch": 4, "epochs": 2, "seed": 0},
                    ["lr", "batch", "epochs", "seed"]),
    "steps_per_epoch": (gradients.steps_per_epoch, lambda: {"n_examples": 10, "batch": 4}, ["n_examples", "batch"]),
}

numbers = st.one_of(
    st.integers(-3, 12), st.integers(), st.just(10**30), st.just(10**400), st.floats(),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-320, 0.05, 0.5, 2.0, 1e30]))
wrapped = st.one_of(
    numbers, st.booleans(),
    numbers.filter(lambda v: not isinstance(v, int) or abs(v) < 2**62).map(lambda v: torch.tensor(v)),
    st.integers(0, 9).map(lambda v: torch.tensor(v, dtype=torch.int32)), st.just(torch.tensor(True)),
    st.integers(0, 9).map(np.int64), st.floats(width=32).map(np.float32), st.just(np.bool_(True)),
    st.just(torch.tensor([0.05, 0.1])), st.just(np.zeros((2, 2))), st.just("0.05"), st.none(),
    st.just(torch.tensor(0.05, requires_grad=True)), st.just(torch.zeros(0)))


def _call(name: str, argument: str, value):
    fn, base, _ = CASES[name]
    kwargs = base()
    kwargs[argument] = value
    return fn(**kwargs)


CALLS = [(name, argument) for name, (_, _, arguments) in CASES.items() for argument in arguments]


@pytest.mark.parametrize("name, argument", CALLS, ids=[f"{n}-{a}" for n, a in CALLS])
@settings(max_examples=40, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(value=wrapped)
def test_a_public_argument_gets_a_result_or_one_line_naming_it(name, argument, value):
    try:
        result = _call(name, argument, value)
    except ValueError as err:
        assert "\n" not in str(err) and str(err), err
        assert type(err) is ValueError  # the vocabulary's error, not numpy's or torch's subclass
        return
    assert not has_nan(result), (name, argument, value, result)


@pytest.mark.parametrize("name, argument, value", [
    ("info_nce", "tau", 0.1), ("positive_share", "tau", 0.05), ("info_nce_torch", "tau", 0.05),
    ("matryoshka_loss", "tau", 0.05), ("reciprocal_ranks", "k", 2), ("bootstrap_interval", "seed", 3),
    ("bootstrap_interval", "n", 50), ("spherical_kmeans", "k", 3), ("cut", "m", 4), ("ivf_search", "probes", 2),
    ("train_slope", "lr", 0.5), ("train_slope", "epochs", 2), ("steps_per_epoch", "batch", 4)])
@pytest.mark.parametrize("wrap", [torch.tensor, np.asarray, lambda v: np.float64(v) if isinstance(v, float) else
                                  np.int64(v)], ids=["0-d-tensor", "0-d-array", "numpy-scalar"])
def test_a_number_in_a_0d_tensor_or_numpy_scalar_is_the_number(name, argument, value, wrap):
    want, got = _call(name, argument, value), _call(name, argument, wrap(value))
    if isinstance(want, dict):
        want, got = want["path"], got["path"]
    if isinstance(want, tuple):
        want, got = want[0], got[0]
    assert np.allclose(np.asarray(torch.as_tensor(want).detach()), np.asarray(torch.as_tensor(got).detach()))


@pytest.mark.parametrize("call, message", [
    (lambda: infonce.log_softmax_rows(np.array([[0.1, np.nan], [0.2, 0.3]])), "Z contains NaN"),
    (lambda: matryoshka.matryoshka_loss(_vectors(), _vectors(seed=1), [2, 8], weights=[1.0, math.inf]), "weights"),
    (lambda: matryoshka.reciprocal_ranks(torch.tensor(S), [0, 1, 2], k=True), "k must be an integer"),
    (lambda: matryoshka.reciprocal_ranks(torch.tensor(S), [0, 1, 2], k=math.nan), "k must be an integer"),
    (lambda: matryoshka.reciprocal_ranks(torch.tensor(S), [0, 1, 2], k=math.inf), "k must be an integer"),
    (lambda: matryoshka.bootstrap_interval([0.1, 0.2, 0.3], seed=True), "seed must be an integer"),
    (lambda: gradients.train_slope(X, Y, lr=10**200, batch=4, epochs=2, seed=0), "training diverged at step"),
], ids=["nan-softmax", "inf-weight", "k-bool", "k-nan", "k-inf", "seed-bool", "lr-huge"])
def test_the_silent_results_are_refused_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()
