"""The InfoNCE module against plain Python, torch, sentence-transformers and its own properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from labs.lessons.infonce import (
    clip_loss, false_negative_mask, info_nce, info_nce_masked,
    info_nce_masked_rows, info_nce_masked_torch, info_nce_rows,
    info_nce_torch, positive_share,
)

MATRIX = [[0.8, 0.3, 0.1], [0.2, 0.7, 0.4], [0.0, 0.3, 0.6]]


def plain_python_info_nce(S, tau):
    total = 0.0
    for i, row in enumerate(S):
        exps = [math.exp(s / tau) for s in row]
        total += -math.log(exps[i] / sum(exps))
    return total / len(S)


# ---- the worked examples of the lessons ------------------------------------


def test_one_question_two_cards():
    assert positive_share(1.0, [0.0], 1.0) == pytest.approx(0.7310586, abs=1e-7)
    assert info_nce([[1.0, 0.0]], 1.0) == pytest.approx(0.3132617, abs=1e-7)
    assert info_nce([[1.0, 0.0]], 0.1) == pytest.approx(4.54e-5, rel=1e-3)


def test_three_by_three_matrix():
    rows = info_nce_rows(MATRIX, 0.5)
    assert np.round(rows, 2).tolist() == [0.48, 0.65, 0.62]
    assert info_nce(MATRIX, 0.5) == pytest.approx(0.58, abs=0.005)
    assert info_nce_rows(MATRIX, 0.1)[0] == pytest.approx(0.008, abs=0.0005)
    assert info_nce(MATRIX, 0.5) == pytest.approx(plain_python_info_nce(MATRIX, 0.5), abs=1e-12)


def test_clip_worked_example():
    assert clip_loss([[1.0, 0.0], [0.0, 1.0]], 1.0) == pytest.approx(math.log(1 + 1 / math.e), abs=1e-12)
    assert clip_loss([[0.0, 1.0], [1.0, 0.0]], 1.0) == pytest.approx(math.log(1 + math.e), abs=1e-12)


def test_temperature_worked_example():
    assert round(positive_share(0.8, [0.6] * 3, 1.0), 3) == 0.289
    assert round(positive_share(0.8, [0.6] * 3, 0.05), 3) == 0.948


# ---- agreement with torch and sentence-transformers ------------------------


def test_matches_torch_cross_entropy_with_hard_negative_columns():
    rng = np.random.default_rng(0)
    S = rng.uniform(-1, 1, size=(5, 9))
    expected = F.cross_entropy(torch.tensor(S) / 0.07, torch.arange(5)).item()
    assert info_nce(S, 0.07) == pytest.approx(expected, abs=1e-12)


def test_torch_twin_matches_numpy_on_embeddings():
    g = torch.Generator().manual_seed(0)
    q, d = torch.randn(4, 8, generator=g), torch.randn(6, 8, generator=g)
    S = (F.normalize(q, dim=-1) @ F.normalize(d, dim=-1).T).numpy()
    assert info_nce_torch(q, d, 0.05).item() == pytest.approx(info_nce(S, 0.05), abs=1e-5)
    raw = (q @ d.T).numpy()
    assert info_nce_torch(q, d, 2.0, normalize=False).item() == pytest.approx(info_nce(raw, 2.0), abs=1e-5)


def test_torch_twin_has_gradients():
    q = torch.randn(3, 4, requires_grad=True)
    d = torch.randn(3, 4, requires_grad=True)
    info_nce_torch(q, d, 0.1).backward()
    assert q.grad is not None and torch.all(torch.isfinite(q.grad))


@pytest.fixture(scope="module")
def minilm():
    from labs.retrieval.models import load_minilm

    return load_minilm()


def test_matches_sentence_transformers_mnrl(minilm):
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    queries = ["how do i reset my password", "what is the refund policy", "my printer is jammed"]
    positives = ["Password: open settings and choose reset.", "Refunds: within 30 days.", "Printer: open tray 2."]
    negatives = ["Password: rules for length.", "Refunds: who approves them.", "Printer: which models we buy."]
    q, p, n = (minilm.encode(t, convert_to_tensor=True) for t in (queries, positives, negatives))
    for tau in (0.05, 0.5):
        mnrl = MultipleNegativesRankingLoss(minilm, scale=1 / tau)
        theirs = mnrl.compute_loss_from_embeddings([q, p, n], labels=None).item()
        ours = info_nce_torch(q, torch.cat([p, n]), tau).item()
        S = (F.normalize(q, dim=-1) @ F.normalize(torch.cat([p, n]), dim=-1).T).numpy()
        assert ours == pytest.approx(theirs, abs=1e-5)
        assert info_nce(S, tau) == pytest.approx(theirs, abs=1e-5)


# ---- properties ------------------------------------------------------------

finite = st.floats(-1.0, 1.0, allow_nan=False, width=64)
taus = st.floats(0.01, 2.0)


@st.composite
def tables(draw):
    B = draw(st.integers(1, 5))
    M = draw(st.integers(B, B + 4))
    return draw(arrays(np.float64, (B, M), elements=finite))


@settings(max_examples=60, deadline=None)
@given(tables(), taus)
def test_loss_is_non_negative_and_equals_cross_entropy(S, tau):
    loss = info_nce(S, tau)
    assert loss >= 0
    ce = F.cross_entropy(torch.tensor(S) / tau, torch.arange(S.shape[0])).item()
    assert loss == pytest.approx(ce, rel=1e-9, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(tables(), taus, st.randoms(use_true_random=False))
def test_extra_negative_columns_can_be_permuted(S, tau, rnd):
    B, M = S.shape
    extra = list(range(B, M))
    rnd.shuffle(extra)
    permuted = S[:, list(range(B)) + extra]
    assert info_nce(permuted, tau) == pytest.approx(info_nce(S, tau), rel=1e-12, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(tables(), taus, st.floats(-5, 5))
def test_adding_a_constant_to_a_row_changes_nothing(S, tau, c):
    shifted = S.copy()
    shifted[0] += c
    assert info_nce_rows(shifted, tau) == pytest.approx(info_nce_rows(S, tau), rel=1e-9, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(tables(), taus, st.floats(0.01, 1.0))
def test_growing_the_diagonal_lowers_the_loss(S, tau, bump):
    B, M = S.shape
    if M == 1:
        return  # one column: the loss is 0 whatever the score
    grown = S.copy()
    grown[0, 0] += bump
    assert info_nce_rows(grown, tau)[0] < info_nce_rows(S, tau)[0] or info_nce_rows(S, tau)[0] < 1e-12


@settings(max_examples=40, deadline=None)
@given(tables())
def test_clip_loss_is_symmetric_under_transpose(S):
    if S.shape[0] != S.shape[1]:
        S = S[:, : S.shape[0]]
    assert clip_loss(S, 0.5) == pytest.approx(clip_loss(S.T, 0.5), rel=1e-12)


def test_stable_when_scores_over_tau_reach_ten_thousand():
    S = np.array([[1.0, -1.0, 0.5], [0.2, 1.0, 1.0]])
    assert math.isfinite(info_nce(S, 1e-4))
    assert math.isfinite(clip_loss(S[:, :2], 1e-4))
    assert info_nce([[1e4, 0.0]], 1.0) == 0.0
    assert math.isfinite(positive_share(1.0, [0.9], 1e-4))


# ---- bad input -------------------------------------------------------------


@pytest.mark.parametrize("tau", [0, -0.1, float("nan"), float("inf"), "warm", None])
def test_bad_tau_names_tau(tau):
    with pytest.raises(ValueError, match="tau"):
        info_nce(MATRIX, tau)


@pytest.mark.parametrize(
    "S, message",
    [
        ([0.8, 0.3], "2-D"),
        ([[[0.8]]], "2-D"),
        ([[0.8, 0.1], [0.2, 0.7], [0.3, 0.4]], "M >= B"),
        ([[0.8, float("nan")]], "NaN"),
        ([[0.8, float("inf")]], "infinite"),
        (np.zeros((0, 3)), "no rows"),
    ],
)
def test_bad_matrix_names_s(S, message):
    with pytest.raises(ValueError, match=message) as err:
        info_nce(S, 0.5)
    assert "S" in str(err.value)


def test_overflowing_tau_is_reported():
    with pytest.raises(ValueError, match="tau"):
        info_nce([[1.0, 0.0]], 1e-320)


def test_clip_loss_needs_a_square_table():
    with pytest.raises(ValueError, match="square"):
        clip_loss([[0.8, 0.3, 0.1], [0.2, 0.7, 0.4]], 0.5)


def test_positive_share_rejects_nan():
    with pytest.raises(ValueError, match="finite"):
        positive_share(float("nan"), [0.1], 0.5)


def test_torch_twin_rejects_bad_shapes():
    with pytest.raises(ValueError, match="2-D"):
        info_nce_torch(torch.zeros(3), torch.zeros(3, 2), 0.1)
    with pytest.raises(ValueError, match="dimension"):
        info_nce_torch(torch.zeros(2, 3), torch.zeros(2, 4), 0.1)
    with pytest.raises(ValueError, match="M >= B"):
        info_nce_torch(torch.zeros(3, 2), torch.zeros(2, 2), 0.1)
    with pytest.raises(ValueError, match="tau"):
        info_nce_torch(torch.zeros(2, 2), torch.zeros(2, 2), 0.0)


# ---- masked InfoNCE (false negatives) ---------------------------------------


def by_hand_masked(S, tau, margin, guide=None):
    """Loops: row i keeps column j unless j != i and guide[i][j] > guide[i][i] + margin."""
    G = S if guide is None else guide
    total = 0.0
    for i, row in enumerate(S):
        kept = [math.exp(s / tau) for j, s in enumerate(row) if j == i or not G[i][j] > G[i][i] + margin]
        total += -math.log(math.exp(row[i] / tau) / sum(kept))
    return total / len(S)


TWIN = [[0.844, 0.854, 0.728, 0.478],  # the router row of lesson 4: a twin scores above the positive
        [0.30, 0.90, 0.20, 0.10]]


def test_masked_matches_loops_on_the_twin_row():
    for margin in (0.1, 0.0, -0.05, -0.2):
        assert info_nce_masked(TWIN, 0.05, margin) == pytest.approx(by_hand_masked(TWIN, 0.05, margin), abs=1e-12)
    assert false_negative_mask(TWIN, 0.1).sum() == 0  # 0.854 is not above 0.844 + 0.1
    assert false_negative_mask(TWIN, 0.0).tolist() == [[False, True, False, False], [False] * 4]
    assert false_negative_mask(TWIN, -0.15).tolist() == [[False, True, True, False], [False] * 4]


def test_masked_rule_is_strict_and_never_masks_the_positive():
    S = [[0.5, 0.6, 0.7], [0.9, 0.5, 0.5]]
    assert false_negative_mask(S, 0.1).tolist() == [[False, False, True], [True, False, False]]
    assert not false_negative_mask(S, -5.0).diagonal().any()
    assert info_nce_masked([[0.5, 0.9]], 1.0, -1.0) == 0.0  # every negative masked: the positive takes all


def test_masked_equals_info_nce_when_nothing_is_masked():
    rng = np.random.default_rng(7)
    S = rng.uniform(-1, 1, size=(4, 7))
    assert info_nce_masked(S, 0.07, 2.0) == pytest.approx(info_nce(S, 0.07), abs=1e-12)
    np.testing.assert_allclose(info_nce_masked_rows(S, 0.07, 2.0), info_nce_rows(S, 0.07), atol=1e-12)


def test_guide_decides_the_mask():
    S = [[0.8, 0.9, 0.1]]
    guide = [[0.8, 0.1, 0.95]]  # the guide thinks column 2, not column 1, is the false negative
    assert false_negative_mask(S, 0.0, guide).tolist() == [[False, False, True]]
    assert info_nce_masked(S, 0.1, 0.0, guide) == pytest.approx(by_hand_masked(S, 0.1, 0.0, guide), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(tables(), taus, st.floats(-0.5, 0.5))
def test_masked_agrees_with_loops_and_never_exceeds_info_nce(S, tau, margin):
    assert info_nce_masked(S, tau, margin) == pytest.approx(by_hand_masked(S.tolist(), tau, margin), rel=1e-9, abs=1e-9)
    assert np.all(info_nce_masked_rows(S, tau, margin) <= info_nce_rows(S, tau) + 1e-12)


def test_masked_torch_matches_numpy_and_masked_entries_get_no_gradient():
    g = torch.Generator().manual_seed(1)
    q = torch.randn(3, 6, generator=g, dtype=torch.float64)
    d = torch.randn(5, 6, generator=g, dtype=torch.float64, requires_grad=True)
    S = (F.normalize(q, dim=-1) @ F.normalize(d, dim=-1).T).detach().numpy()
    for margin in (0.3, 0.0, -0.3):
        assert info_nce_masked_torch(q, d, 0.1, margin).item() == pytest.approx(info_nce_masked(S, 0.1, margin), abs=1e-12)
    guide = torch.tensor(S[:, ::-1].copy())  # another model's opinion decides the mask
    assert info_nce_masked_torch(q, d, 0.1, 0.0, guide=guide).item() == pytest.approx(
        info_nce_masked(S, 0.1, 0.0, guide.numpy()), abs=1e-12)
    # with queries = I and docs = S^T the scores are S itself, so docs.grad^T is dL/dS
    table = torch.tensor(S.T.copy(), requires_grad=True)
    info_nce_masked_torch(torch.eye(3, dtype=torch.float64), table, 0.1, 0.0, normalize=False).backward()
    mask = false_negative_mask(S, 0.0)
    assert mask.sum() == 4
    dS = table.grad.T.numpy()
    assert np.all(dS[mask] == 0) and np.all(dS[~mask] != 0)


def test_masked_matches_sentence_transformers_gist_embed(minilm):
    from sentence_transformers.sentence_transformer.losses import GISTEmbedLoss

    anchors = ["my router keeps disconnecting", "how long is the phone warranty", "i forgot my laptop password"]
    positives = ["Router drops the connection: hold reset for ten seconds.", "Phone warranty: one year of cover.",
                 "Forgot the laptop password: restart and press F8."]
    negatives = ["Router disconnects often: power it off at the wall and on again.", "Phone returns: 14 days.",
                 "Laptop warranty: three years of cover."]
    features = [minilm.tokenize(t) for t in (anchors, positives, negatives)]
    with torch.no_grad():
        q, p, n = (minilm.encode(t, convert_to_tensor=True) for t in (anchors, positives, negatives))
        S = (F.normalize(q, dim=-1) @ F.normalize(torch.cat([p, n]), dim=-1).T).double().numpy()
        for margin in (0.0, -0.1, 0.1):  # GIST masks above positive - m, we above positive + margin: m = -margin
            gist = GISTEmbedLoss(minilm, guide=minilm, temperature=0.05, margin=-margin,
                                 contrast_anchors=False, contrast_positives=False)
            theirs = gist([dict(f) for f in features], labels=None).item()
            assert info_nce_masked(S, 0.05, margin) == pytest.approx(theirs, abs=1e-4)
            assert info_nce_masked_torch(q, torch.cat([p, n]), 0.05, margin).item() == pytest.approx(theirs, abs=1e-4)
        assert false_negative_mask(S, 0.0).any()  # the router look-alike is masked at margin 0: a real test


@pytest.mark.parametrize("margin", [float("nan"), float("inf"), True, "0.1", None])
def test_masked_refuses_a_bad_margin(margin):
    with pytest.raises(ValueError, match="margin"):
        info_nce_masked(TWIN, 0.05, margin)
    with pytest.raises(ValueError, match="margin"):
        info_nce_masked_torch(torch.eye(2), torch.eye(2), 0.05, margin)


def test_masked_validates_like_info_nce():
    with pytest.raises(ValueError, match="tau"):
        info_nce_masked(TWIN, 0.0, 0.1)
    with pytest.raises(ValueError, match="M >= B"):
        info_nce_masked([[0.8], [0.2]], 0.5, 0.1)
    with pytest.raises(ValueError, match="NaN"):
        info_nce_masked([[0.8, float("nan")]], 0.5, 0.1)
    with pytest.raises(ValueError, match="guide"):
        info_nce_masked(TWIN, 0.05, 0.1, guide=[[0.1, 0.2]])
    with pytest.raises(ValueError, match="guide"):
        info_nce_masked(TWIN, 0.05, 0.1, guide=[[0.1, float("nan"), 0, 0], [0, 0, 0, 0]])
    with pytest.raises(ValueError, match="guide"):
        info_nce_masked_torch(torch.eye(2), torch.eye(2), 0.05, 0.1, guide=torch.zeros(3, 3))
    with pytest.raises(ValueError, match="M >= B"):
        info_nce_masked_torch(torch.zeros(3, 2), torch.zeros(2, 2), 0.1, 0.1)


# ---- info_nce_torch refuses what info_nce refuses ---------------------------------------------------


def _emb(b: int = 3, d: int = 4) -> torch.Tensor:
    return torch.randn(b, d, generator=torch.Generator().manual_seed(b * 10 + d))


@pytest.mark.parametrize("queries, docs, message", [
    (torch.zeros(0, 4), torch.zeros(0, 4), "queries has no rows"),
    (_emb(3, 0), _emb(3, 0), "dimension >= 1"),
    (torch.tensor([[float("nan"), 1.0], [0.0, 1.0]]), _emb(2, 2), "queries contains NaN or infinite"),
    (_emb(2, 2), torch.tensor([[float("inf"), 1.0], [0.0, 1.0]]), "docs contains NaN or infinite"),
    (_emb(3, 4), _emb(2, 4), "need M >= B"),
    (_emb(3, 4), _emb(3, 5), "share a dimension"),
    (_emb(3, 4)[0], _emb(3, 4), "2-D"),
    ([[1.0, 0.0]], _emb(1, 2), "queries must be a torch.Tensor, got list"),
    (torch.ones(2, 2, dtype=torch.long), torch.ones(2, 2, dtype=torch.long), "floating-point"),
    (_emb(2, 2), _emb(2, 2).double(), "share dtype and device"),
    (torch.tensor([[0.0, 0.0], [1.0, 0.0]]), _emb(2, 2), "queries row 0 is all zeros"),
], ids=["empty", "zero-dim", "nan", "inf", "m-lt-b", "dims", "1d", "list", "int", "dtypes", "zero-row"])
def test_info_nce_torch_refuses_what_info_nce_refuses(queries, docs, message):
    with pytest.raises(ValueError, match=message):
        info_nce_torch(queries, docs, 0.1)


@pytest.mark.parametrize("tau", [0.0, -0.5, float("nan"), float("inf"), "0.1x", "0.1", None, True])
def test_info_nce_torch_bad_tau_names_tau(tau):
    with pytest.raises(ValueError, match="tau must be"):
        info_nce_torch(_emb(), _emb(), tau)


def test_info_nce_torch_tiny_tau_overflows_like_info_nce():
    q = _emb()
    with pytest.raises(ValueError, match="tau=1e-39 is too small"):
        info_nce_torch(q, q, 1e-39)
    with pytest.raises(ValueError, match="tau=1e-310 is too small"):
        info_nce([[1.0, 0.0], [0.0, 1.0]], 1e-310)
    assert math.isfinite(float(info_nce_torch(q, q, 1e-6)))  # small but representable: a finite loss


def test_a_zero_row_is_fine_without_normalising():
    q = torch.tensor([[0.0, 0.0], [1.0, 0.0]])
    assert math.isfinite(float(info_nce_torch(q, q, 1.0, normalize=False)))


# ---- non-real, non-numeric and ragged input; rows of any size; tensors that require grad ---------


@pytest.mark.parametrize("S, message", [
    ([[0.8, 0.3], [0.2]], "S is ragged: its rows have different lengths"),
    ([[0.8 + 1j, 0.3], [0.2, 0.7]], "S holds complex numbers"),
    (np.eye(2, dtype=np.complex128), "S holds complex numbers"),
    (torch.eye(2, dtype=torch.complex64), "S holds complex numbers"),
    ([[True, False], [False, True]], "S must hold real numbers, got booleans"),
    ([["0.8", "0.3"], ["0.2", "0.7"]], "S must hold real numbers, got text"),
    ([[0.8, None], [0.2, 0.7]], "S must hold real numbers"),
], ids=["ragged", "complex", "complex-array", "complex-tensor", "bools", "strings", "none"])
@pytest.mark.parametrize("fn", [info_nce, info_nce_rows, clip_loss, lambda S, tau: info_nce_masked(S, tau, 0.1),
                                lambda S, tau: false_negative_mask(S, 0.1)],
                         ids=["info_nce", "rows", "clip", "masked", "mask"])
def test_tables_that_are_not_real_numbers_are_refused_naming_s(fn, S, message):
    with pytest.raises(ValueError, match=message):
        fn(S, 0.5)


@pytest.mark.parametrize("fn", [info_nce, info_nce_rows, clip_loss, lambda S, tau: info_nce_masked(S, tau, 0.1)],
                         ids=["info_nce", "rows", "clip", "masked"])
def test_a_tensor_that_requires_grad_gets_a_clear_error_and_a_detached_one_works(fn):
    S = torch.tensor(MATRIX, requires_grad=True)
    with pytest.raises(ValueError, match=r"S is a torch tensor that requires grad: .* S.detach\(\) .* _torch form"):
        fn(S, 0.5)
    np.testing.assert_allclose(fn(S.detach(), 0.5), fn(MATRIX, 0.5), rtol=1e-6)


@pytest.mark.parametrize("tau", [np.bool_(True), 1 + 0j, np.complex128(0.5), torch.tensor(True), torch.ones(2),
                                 b"0.5"], ids=["np-bool", "complex", "np-complex", "bool-tensor", "vector", "bytes"])
def test_tau_that_is_not_one_real_number_is_refused(tau):
    with pytest.raises(ValueError, match="tau must be"):
        info_nce(MATRIX, tau)
    with pytest.raises(ValueError, match="tau must be"):
        info_nce_torch(torch.eye(2), torch.eye(2), tau)


def test_tau_as_numpy_or_torch_scalar_is_accepted():
    for tau in (np.float32(0.5), torch.tensor(0.5), torch.tensor([0.5], dtype=torch.float64)):
        assert info_nce(MATRIX, tau) == pytest.approx(info_nce(MATRIX, 0.5))


@pytest.mark.parametrize("pos, negs, message", [
    ("0.8", [0.1], "pos must be"), (True, [0.1], "pos must be"), (0.8, ["0.1"], "negs must hold real numbers"),
    (0.8, [True], "negs must hold real numbers, got booleans"), (0.8, [[0.1], [0.2, 0.3]], "negs is ragged"),
    (0.8, [0.1 + 1j], "negs holds complex"), (0.8, [[0.1, 0.2]], "negs must be a number or a list"),
])
def test_positive_share_names_what_is_not_a_real_number(pos, negs, message):
    with pytest.raises(ValueError, match=message):
        positive_share(pos, negs, 0.5)


def test_a_guide_that_is_not_real_is_refused():
    with pytest.raises(ValueError, match="guide holds complex numbers"):
        info_nce_masked(MATRIX, 0.5, 0.1, guide=np.array(MATRIX) + 1j)
    with pytest.raises(ValueError, match="guide is ragged"):
        false_negative_mask(MATRIX, 0.1, guide=[[0.1], [0.2, 0.3], [0.1]])
    with pytest.raises(ValueError, match="guide must hold real numbers"):
        info_nce_masked_torch(torch.eye(3), torch.eye(3), 0.5, 0.1, guide=torch.eye(3, dtype=torch.complex64))


@pytest.mark.parametrize("scale", [1e-30, 1e-42, 1e30], ids=["tiny", "subnormal-float32", "huge"])
@pytest.mark.parametrize("fn", [lambda q, d: info_nce_torch(q, d, 0.05),
                                lambda q, d: info_nce_masked_torch(q, d, 0.05, 0.1)], ids=["plain", "masked"])
def test_normalising_a_row_of_any_size_gives_the_loss_of_its_direction(fn, scale):
    """[1e-30, 0] points the same way as [1, 0]: F.normalize alone clamps its norm at eps (1e-12)
    and gives another loss; a huge row would overflow the float32 norm."""
    unit = torch.tensor([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
    docs = torch.tensor([[0.8, 0.6], [0.0, 1.0], [1.0, 0.0]])
    scaled = unit.clone()
    scaled[0] *= scale
    assert fn(scaled, docs).item() == pytest.approx(fn(unit, docs).item(), rel=1e-5)


def test_normalised_rows_keep_the_gradient_of_the_plain_formula():
    g = torch.Generator().manual_seed(3)
    q, d = torch.randn(4, 6, generator=g, dtype=torch.float64), torch.randn(5, 6, generator=g, dtype=torch.float64)
    q1, q2 = q.clone().requires_grad_(True), q.clone().requires_grad_(True)
    info_nce_torch(q1, d, 0.1).backward()
    logits = F.normalize(q2, dim=-1) @ F.normalize(d, dim=-1).T / 0.1
    F.cross_entropy(logits, torch.arange(4)).backward()
    torch.testing.assert_close(q1.grad, q2.grad)


def test_a_learned_temperature_gets_its_gradient_in_the_torch_forms():
    g = torch.Generator().manual_seed(4)
    q, d = torch.randn(3, 4, generator=g), torch.randn(3, 4, generator=g)
    for loss in (lambda tau: info_nce_torch(q, d, tau), lambda tau: info_nce_masked_torch(q, d, tau, 0.1)):
        tau = torch.tensor(0.2, requires_grad=True)
        value = loss(tau)
        value.backward()
        assert tau.grad is not None and tau.grad.item() != 0
        assert value.item() == pytest.approx(loss(0.2).item())


@pytest.mark.parametrize("fn", [lambda tau: info_nce(MATRIX, tau), lambda tau: positive_share(0.8, [0.1], tau),
                                lambda tau: info_nce_masked(MATRIX, tau, 0.1)], ids=["info_nce", "share", "masked"])
def test_a_temperature_that_requires_grad_is_refused_where_its_gradient_would_be_lost(fn):
    with pytest.raises(ValueError, match=r"tau is a tensor that requires grad, .* no gradient would reach it"):
        fn(torch.tensor(0.5, requires_grad=True))
