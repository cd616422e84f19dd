"""Tests for labs.lessons.clip (the toy, hand gradients) and labs.lessons.clip_digits (digits with a frozen text tower)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from labs.lessons import clip_batches as cb
from labs.lessons import clip_digits as cd
from labs.classroom.exercises.clip import check_best_share, check_hub_table_loss
from labs.lessons.clip import (
    class_captions, clip_loss_and_grads, embed, make_toy_world, sample_pairs,
    staircase_misses, train_clip_toy, nearest_class_caption,
)
from labs.lessons.infonce import clip_loss
from labs.retrieval.metrics import mrr_at_k, rank_documents

SEEDS = range(10)


# ---------------------------------------------------------------------------
# The toy
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def toy_runs():
    untrained = [train_clip_toy(seed=s, steps=0) for s in SEEDS]
    trained = [train_clip_toy(seed=s) for s in SEEDS]
    return untrained, trained


def test_untrained_zero_shot_averages_near_chance(toy_runs):
    untrained, _ = toy_runs
    mean = np.mean([r.zero_shot_accuracy for r in untrained])
    assert abs(mean - 1 / 5) <= 0.1, mean


def test_trained_zero_shot_on_every_seed(toy_runs):
    _, trained = toy_runs
    accuracies = [r.zero_shot_accuracy for r in trained]
    assert min(accuracies) >= 0.85, accuracies


def test_training_lowers_the_loss(toy_runs):
    _, trained = toy_runs
    for r in trained:
        assert len(r.losses) == 300
        assert np.mean(r.losses[-20:]) < np.mean(r.losses[:5])


def test_test_set_does_not_depend_on_steps(toy_runs):
    untrained, trained = toy_runs
    np.testing.assert_array_equal(untrained[0].labels, trained[0].labels)
    assert untrained[0].similarity.shape == (40, 5)
    assert np.all(np.diff(trained[0].labels) >= 0)  # sorted by class: the staircase


def test_checkpoints_match_separate_runs():
    run = train_clip_toy(seed=2, steps=12, tau=0.5, checkpoints=[0, 3, 12])
    assert sorted(run.accuracy_at) == [0, 3, 12]
    for steps in (0, 3, 12):
        assert run.accuracy_at[steps] == train_clip_toy(seed=2, steps=steps, tau=0.5).zero_shot_accuracy
    assert run.accuracy_at[12] == run.zero_shot_accuracy


def test_same_seed_same_result():
    a, b = train_clip_toy(seed=3, steps=20), train_clip_toy(seed=3, steps=20)
    np.testing.assert_array_equal(a.Wi, b.Wi)
    assert a.zero_shot_accuracy == b.zero_shot_accuracy


def _torch_clip_loss(X, Y, Wi, Wt, tau):
    I = F.normalize(X @ Wi, dim=1)
    T = F.normalize(Y @ Wt, dim=1)
    S = I @ T.T / tau
    labels = torch.arange(S.shape[0])
    return 0.5 * F.cross_entropy(S, labels) + 0.5 * F.cross_entropy(S.T, labels)


@pytest.mark.parametrize("tau", [0.05, 0.1, 1.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hand_gradients_match_autograd(tau, seed):
    rng = np.random.default_rng(seed)
    world = make_toy_world(rng)
    images, captions, _ = sample_pairs(world, 8, rng)
    Wi, Wt = rng.normal(0, 0.25, (32, 16)), rng.normal(0, 0.25, (24, 16))
    loss, dWi, dWt = clip_loss_and_grads(images, captions, Wi, Wt, tau)

    tWi = torch.tensor(Wi, requires_grad=True)
    tWt = torch.tensor(Wt, requires_grad=True)
    ref = _torch_clip_loss(torch.tensor(images), torch.tensor(captions), tWi, tWt, tau)
    ref.backward()
    assert abs(loss - ref.item()) < 1e-9
    np.testing.assert_allclose(dWi, tWi.grad.numpy(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(dWt, tWt.grad.numpy(), rtol=0, atol=1e-6)
    assert np.abs(dWi).max() > 1e-3  # a non-trivial gradient, so the comparison can fail


def test_hand_gradient_matches_finite_differences():
    rng = np.random.default_rng(7)
    X, Y = rng.standard_normal((4, 32)), rng.standard_normal((4, 24))
    Wi, Wt = rng.standard_normal((32, 16)), rng.standard_normal((24, 16))
    _, dWi, _ = clip_loss_and_grads(X, Y, Wi, Wt, 0.5)
    eps = 1e-6
    for idx in [(0, 0), (5, 3), (31, 15)]:
        E = np.zeros_like(Wi)
        E[idx] = eps
        numeric = (clip_loss_and_grads(X, Y, Wi + E, Wt, 0.5)[0] - clip_loss_and_grads(X, Y, Wi - E, Wt, 0.5)[0]) / (2 * eps)
        assert abs(numeric - dWi[idx]) < 1e-6


def test_worked_example_numbers():
    assert round(clip_loss(np.eye(2), 1.0), 3) == 0.313
    assert round(clip_loss(np.eye(2)[::-1], 1.0), 3) == 1.313


def test_zero_shot_by_nearest_caption():
    world = make_toy_world(np.random.default_rng(0))
    W = np.eye(24)[:, :16]
    L = embed(class_captions(world), W)
    assert L.shape == (5, 16)
    np.testing.assert_allclose(np.linalg.norm(L, axis=1), 1.0)
    np.testing.assert_array_equal(nearest_class_caption(L, L), np.arange(5))


def test_staircase_misses():
    S = np.array([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3]])
    assert staircase_misses(S, np.array([0, 1, 1])) == [(2, 1, 0)]
    assert staircase_misses(S, np.array([0, 1, 0])) == []


@pytest.mark.parametrize(
    "kwargs, word",
    [({"tau": 0}, "tau"), ({"tau": float("nan")}, "tau"), ({"steps": -1}, "steps"), ({"steps": 2.5}, "steps"),
     ({"batch": 1}, "batch"), ({"n_test": 10, "n_show": 40}, "n_show"), ({"lr": 0}, "lr"), ({"dim": 0}, "dim"),
     ({"steps": 5, "checkpoints": [6]}, "checkpoints"), ({"checkpoints": [-1]}, "checkpoints")],
)
def test_train_clip_toy_bad_input(kwargs, word):
    with pytest.raises(ValueError, match=word):
        train_clip_toy(**kwargs)


def test_toy_functions_bad_input():
    rng = np.random.default_rng(0)
    world = make_toy_world(rng)
    with pytest.raises(ValueError, match="n must"):
        sample_pairs(world, 0, rng)
    with pytest.raises(ValueError, match="X"):
        embed(np.ones((3, 5)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="same number"):
        clip_loss_and_grads(np.ones((3, 32)), np.ones((4, 24)), np.ones((32, 16)), np.ones((24, 16)), 0.1)
    with pytest.raises(ValueError, match="do not fit"):
        clip_loss_and_grads(np.ones((3, 32)), np.ones((3, 24)), np.ones((30, 16)), np.ones((24, 16)), 0.1)
    with pytest.raises(ValueError, match="tau"):
        clip_loss_and_grads(np.ones((3, 32)), np.ones((3, 24)), np.ones((32, 16)), np.ones((24, 16)), -1)
    with pytest.raises(ValueError, match="share d"):
        nearest_class_caption(np.ones((3, 4)), np.ones((5, 3)))
    with pytest.raises(ValueError, match="do not fit"):
        staircase_misses(np.ones((3, 5)), np.zeros(4, dtype=int))


def test_check_hub_table_loss(capsys):
    truth = clip_loss(np.array([[1.0, 0.0], [1.0, 0.0]]), 1.0)
    by_hand = (math.log(1 + 1 / math.e) + math.log(1 + math.e) + 2 * math.log(2)) / 4  # rows, then columns
    assert truth == pytest.approx(by_hand)
    assert check_hub_table_loss(truth) is True
    assert "Right" in capsys.readouterr().out
    for wrong in (0.0, math.log(2), (math.log(1 + 1 / math.e) + math.log(1 + math.e)) / 2, 2 * truth, "abc"):
        assert check_hub_table_loss(wrong) is False
        out = capsys.readouterr().out
        assert "Right" not in out and f"{truth:.3f}" not in out
    assert check_hub_table_loss(None) is False
    assert "not answered yet" in capsys.readouterr().out.lower()


def test_check_best_share(capsys):
    truth = math.e / (math.e + 31 / math.e)  # own caption at cosine 1, the 31 others at -1, tau = 1
    assert check_best_share(truth) is True and check_best_share(100 * truth) is True
    assert "Right" in capsys.readouterr().out
    for wrong in (1.0, 1 / 32, math.e / (math.e + 31), 0.5, "abc"):
        assert check_best_share(wrong) is False
        out = capsys.readouterr().out
        assert "Right" not in out and f"{truth:.2f}" not in out
    assert check_best_share(None) is False
    assert "not answered yet" in capsys.readouterr().out.lower()


def test_the_best_share_bounds_the_trained_toy():
    """No trained row gets past the share the exercise computes: at tau = 1 the loss stays above its floor."""
    run = train_clip_toy(seed=0, steps=300, tau=1.0)
    assert min(run.losses) > -math.log(math.e / (math.e + 31 / math.e))


# ---------------------------------------------------------------------------
# Digits with a frozen text tower
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def digits():
    from labs.retrieval.models import load_minilm

    model = load_minilm()
    captions = cd.digit_captions()
    emb = cd.embed_captions(captions, model)
    split = cd.load_digit_split()
    report = cd.run_digits_lit(split, emb)
    held = cd.run_digits_lit(split, emb, held_out=(3, 8), probe=False)
    return model, captions, emb, split, report, held


def test_caption_embeddings_are_the_models(digits):
    model, captions, emb, *_ = digits
    assert emb.shape == (10, len(cd.CAPTION_TEMPLATES), 384)
    assert not emb.requires_grad
    direct = model.encode([captions[7][0]], convert_to_tensor=True, normalize_embeddings=True)
    torch.testing.assert_close(emb[7, 0], direct[0], atol=1e-6, rtol=0)
    assert captions[7][0] == "a handwritten seven"


def test_digits_zero_shot_well_above_chance(digits):
    *_, report, _ = digits
    assert report.zero_shot >= 0.6
    assert report.chance == 0.1
    assert report.probe >= 0.6 and report.pixel_probe >= 0.6


def test_the_pixel_probe_is_fitted_once_per_split_and_the_tower_probe_can_be_skipped(digits):
    *_, split, report, held = digits
    assert "pixel_probe" in vars(split)  # cached on the split by the first run
    assert held.pixel_probe == report.pixel_probe == split.pixel_probe
    assert math.isnan(held.probe) and not math.isnan(report.probe)


def test_digits_both_retrieval_directions_reported(digits):
    *_, report, _ = digits
    for value in (report.image_to_text, report.text_to_image):
        assert 0.6 <= value <= 1.0


def test_held_out_digits_do_not_transfer(digits):
    *_, held = digits
    seen = [c for c in range(10) if c not in (3, 8)]
    assert held.per_class[seen].mean() >= 0.6
    assert held.per_class[[3, 8]].max() < 0.5


def test_symmetric_loss_matches_clip_loss():
    g = torch.Generator().manual_seed(0)
    I, T = torch.randn(6, 10, generator=g), torch.randn(6, 10, generator=g)
    S = (F.normalize(I, dim=1) @ F.normalize(T, dim=1).T).numpy()
    assert abs(cd.symmetric_loss_torch(I, T, 0.1).item() - clip_loss(S, 0.1)) < 1e-5


def test_hit_at_1_matches_mrr_at_1():
    g = torch.Generator().manual_seed(1)
    images, texts = F.normalize(torch.randn(30, 8, generator=g), dim=1), F.normalize(torch.randn(12, 8, generator=g), dim=1)
    il, tl = np.arange(30) % 4, np.arange(12) % 4
    i2t, t2i = cd.hit_at_1(images, il, texts, tl)
    S = (images @ texts.T).numpy()
    img_ids, txt_ids = [f"i{k:02d}" for k in range(30)], [f"t{k:02d}" for k in range(12)]
    ranked = rank_documents(S, txt_ids, img_ids)
    qrels = {q: {t for t, lab in zip(txt_ids, tl) if lab == il[k]} for k, q in enumerate(img_ids)}
    assert abs(i2t - mrr_at_k(ranked, qrels, 1)) < 1e-12
    ranked = rank_documents(S.T, img_ids, txt_ids)
    qrels = {q: {i for i, lab in zip(img_ids, il) if lab == tl[k]} for k, q in enumerate(txt_ids)}
    assert abs(t2i - mrr_at_k(ranked, qrels, 1)) < 1e-12


def test_digit_split_is_stratified():
    split = cd.load_digit_split()
    assert split.X_train.shape[1] == 64 and len(split.y_train) + len(split.y_test) == 1797
    assert split.X_train.min() >= 0 and split.X_train.max() <= 1
    assert set(np.unique(split.y_test)) == set(range(10))


def test_digits_bad_input(digits):
    _, _, emb, split, *_ = digits
    with pytest.raises(ValueError, match="templates"):
        cd.digit_captions(["a picture"])
    with pytest.raises(ValueError, match="templates"):
        cd.digit_captions("a {word}")
    with pytest.raises(ValueError, match="one list per digit"):
        cd.embed_captions([["a"]] * 3, model=object())
    with pytest.raises(ValueError, match="same non-zero length"):
        cd.embed_captions([["a"]] * 9 + [["a", "b"]], model=object())
    with pytest.raises(ValueError, match="test_size"):
        cd.load_digit_split(test_size=1.5)
    with pytest.raises(ValueError, match="caption_emb"):
        cd.class_text_vectors(torch.ones(10, 384))
    X, y = split.X_train, split.y_train
    for kwargs, word in [({"classes": [11]}, "classes"), ({"classes": []}, "classes"), ({"tau": 0}, "tau"),
                         ({"steps": -1}, "steps"), ({"batch": 1}, "batch"), ({"classes": [0], "batch": 1000}, "batch")]:
        with pytest.raises(ValueError, match=word):
            cd.train_image_tower(X, y, emb, **kwargs)
    with pytest.raises(ValueError, match="y must"):
        cd.train_image_tower(X, y[:10], emb)
    with pytest.raises(ValueError, match="X must"):
        cd.train_image_tower(np.ones(64), y, emb)
    with pytest.raises(ValueError, match="held_out"):
        cd.run_digits_lit(split, emb, held_out=range(10))
    with pytest.raises(ValueError, match="same"):
        cd.symmetric_loss_torch(torch.ones(3, 4), torch.ones(4, 4), 0.1)
    with pytest.raises(ValueError, match="share D"):
        cd.zero_shot_predict(torch.ones(3, 4), torch.ones(10, 5))
    with pytest.raises(ValueError, match="one label per row"):
        cd.hit_at_1(torch.ones(3, 4), np.zeros(2, dtype=int), torch.ones(5, 4), np.zeros(5, dtype=int))
    with pytest.raises(ValueError, match="equal widths"):
        cd.linear_probe_accuracy(np.ones((4, 3)), np.zeros(4), np.ones((2, 5)), np.zeros(2))


# ---------------------------------------------------------------------------
# Batches without false negatives: one image per digit
# ---------------------------------------------------------------------------


def test_one_per_digit_batches_hold_each_digit_once():
    y = np.repeat(np.arange(10), 7)
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        idx = cb.draw_batch(y, None, "one_per_digit", gen)
        assert sorted(y[idx.numpy()].tolist()) == list(range(10))
        assert cb.false_negative_floor(y[idx.numpy()]) == 0.0
    idx = cb.draw_batch(y[y != 3], 9, "one_per_digit", gen)  # batch may name the number of digits
    assert len(idx) == 9
    random_idx = cb.draw_batch(y, 64, "random", torch.Generator().manual_seed(0))
    assert torch.equal(random_idx, torch.randint(len(y), (64,), generator=torch.Generator().manual_seed(0)))


def test_false_negative_floor_by_hand():
    assert cb.false_negative_floor(np.array([7, 7, 3, 1])) == pytest.approx(2 * math.log(2) / 4)
    assert cb.false_negative_floor(np.array([5, 5, 5])) == pytest.approx(math.log(3))
    assert cb.false_negative_floor(np.arange(10)) == 0.0


def test_false_negative_floor_is_the_best_loss_when_same_digit_captions_look_alike():
    """Rows of one digit that share one caption vector: the best symmetric loss is the floor."""
    labels = np.array([0, 0, 1, 2, 2, 2])
    V = torch.eye(3, dtype=torch.float64)[labels]  # same digit, same caption vector
    assert cd.symmetric_loss_torch(V, V, 1e-3).item() == pytest.approx(cb.false_negative_floor(labels))


def test_one_per_digit_training_has_no_floor_and_learns(digits):
    _, _, emb, split, *_ = digits
    tower, losses = cd.train_image_tower(split.X_train, split.y_train, emb, steps=150, sampler="one_per_digit")
    assert np.mean(losses[-20:]) < 0.6 < np.mean(losses[:5])  # the random batches of 64 stop near 2
    pred = cd.zero_shot_predict(cd.embed_images(tower, split.X_test), cd.class_text_vectors(emb))
    assert np.mean(pred == split.y_test) >= 0.8


def test_samplers_bad_input(digits):
    _, _, emb, split, *_ = digits
    X, y = split.X_train, split.y_train
    gen = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="sampler"):
        cb.draw_batch(y, 8, "balanced", gen)
    with pytest.raises(ValueError, match="one image per digit"):
        cb.draw_batch(y, 64, "one_per_digit", gen)
    with pytest.raises(ValueError, match="batch"):
        cb.draw_batch(y, None, "random", gen)
    with pytest.raises(ValueError, match="sampler"):
        cd.train_image_tower(X, y, emb, sampler="balanced")
    with pytest.raises(ValueError, match="one image per trained digit"):
        cd.train_image_tower(X, y, emb, sampler="one_per_digit", batch=64)
    with pytest.raises(ValueError, match="1-D"):
        cb.false_negative_floor(np.zeros((2, 2), dtype=int))


def test_masked_symmetric_loss_drops_same_digit_columns():
    g = torch.Generator().manual_seed(2)
    I, T = torch.randn(5, 6, generator=g), torch.randn(5, 6, generator=g)
    labels = torch.tensor([0, 1, 0, 2, 1])
    S = (F.normalize(I, dim=1) @ F.normalize(T, dim=1).T).numpy() / 0.1
    rows, cols = [], []
    for i in range(5):
        keep = [j for j in range(5) if j == i or labels[j] != labels[i]]
        rows.append(-(S[i, i] - np.log(np.exp(S[i, keep]).sum())))
        cols.append(-(S[i, i] - np.log(np.exp(S[keep, i]).sum())))
    by_hand = 0.5 * np.mean(rows) + 0.5 * np.mean(cols)
    assert cd.symmetric_loss_torch(I, T, 0.1, labels).item() == pytest.approx(by_hand, rel=1e-5)
    distinct = torch.arange(5)
    assert cd.symmetric_loss_torch(I, T, 0.1, distinct).item() == pytest.approx(
        cd.symmetric_loss_torch(I, T, 0.1).item(), rel=1e-6)
    with pytest.raises(ValueError, match="labels"):
        cd.symmetric_loss_torch(I, T, 0.1, torch.arange(4))


def test_masked_training_has_no_floor(digits):
    _, _, emb, split, *_ = digits
    _, losses = cd.train_image_tower(split.X_train, split.y_train, emb, steps=150, mask_same_digit=True)
    assert np.mean(losses[-20:]) < 1.0  # unmasked batches of 64 stop near their floor of about 1.9


# ---------------------------------------------------------------------------
# Arguments checked at the top, named in one ValueError (issue 28)
# ---------------------------------------------------------------------------

_X, _Y = np.random.default_rng(0).standard_normal((4, 32)), np.random.default_rng(1).standard_normal((4, 24))
_WI, _WT = np.random.default_rng(2).standard_normal((32, 16)), np.random.default_rng(3).standard_normal((24, 16))

NOT_A_TABLE = [
    (lambda a: a * 1j, "holds complex numbers"),
    (lambda a: a > 0, "must hold real numbers, got booleans"),
    (lambda a: a.astype(str), "must hold real numbers, got text"),
    (lambda a: [list(a[0]), list(a[1, :3])], "is ragged"),
    (lambda a: None, "must hold real numbers, got None"),
    (lambda a: a * np.nan, "contains NaN or infinite entries"),
    (lambda a: np.where(a > 1, np.inf, a), "contains NaN or infinite entries"),
    (lambda a: torch.tensor(a, requires_grad=True), r"is a torch tensor that requires grad: .*\.detach\(\)"),
    (lambda a: np.ma.masked_array(a, mask=a > 1), "is a masked array"),
]
NOT_A_TABLE_IDS = ["complex", "bools", "strings", "ragged", "none", "nan", "inf", "requires-grad", "masked"]


@pytest.mark.parametrize("bad, message", NOT_A_TABLE, ids=NOT_A_TABLE_IDS)
def test_toy_tables_that_are_not_real_finite_numbers_are_refused_by_name(bad, message):
    cases = [
        ("X", lambda: embed(bad(_X), _WI)), ("W", lambda: embed(_X, bad(_WI))),
        ("images", lambda: clip_loss_and_grads(bad(_X), _Y, _WI, _WT, 0.1)),
        ("captions", lambda: clip_loss_and_grads(_X, bad(_Y), _WI, _WT, 0.1)),
        ("Wi", lambda: clip_loss_and_grads(_X, _Y, bad(_WI), _WT, 0.1)),
        ("Wt", lambda: clip_loss_and_grads(_X, _Y, _WI, bad(_WT), 0.1)),
        ("image_vecs", lambda: nearest_class_caption(bad(_X), _X)),
        ("caption_vecs", lambda: nearest_class_caption(_X, bad(_X))),
        ("similarity", lambda: staircase_misses(bad(_X), np.zeros(4, dtype=int))),
    ]
    for name, call in cases:
        with pytest.raises(ValueError, match=f"^{name} {message}"):
            call()


def test_toy_products_that_overflow_or_have_no_direction_are_named():
    with pytest.raises(ValueError, match=r"X @ W overflows float64"):
        embed(_X * 1e300, _WI * 1e10)
    with pytest.raises(ValueError, match=r"X @ W row 0 is all zeros"):
        embed(_X, np.zeros((32, 16)))
    with pytest.raises(ValueError, match=r"captions @ Wt row 0 is all zeros"):
        clip_loss_and_grads(_X, _Y, _WI, np.zeros((24, 16)), 0.1)
    with pytest.raises(ValueError, match=r"tau=1e-310 is too small for these scores"):
        clip_loss_and_grads(_X, _Y, _WI, _WT, 1e-310)
    with pytest.raises(ValueError, match="caption_vecs has no rows"):
        nearest_class_caption(_X, np.zeros((0, 32)))


def test_toy_tables_as_lists_tensors_or_float16_give_the_float64_answer():
    np.testing.assert_array_equal(embed(_X.tolist(), torch.tensor(_WI)), embed(_X, _WI))
    loss, dWi, _ = clip_loss_and_grads(_X, _Y, _WI.tolist(), tuple(map(tuple, _WT)), 0.1)
    want = clip_loss_and_grads(_X, _Y, _WI, _WT, 0.1)
    assert loss == want[0] and np.array_equal(dWi, want[1])
    big = np.array([[6e4, 6e4]], dtype=np.float16)  # its float16 dot product overflows; float64's does not
    assert nearest_class_caption(big, np.array([[1, -1], [6e4, 6e4]], dtype=np.float16)).tolist() == [1]


def test_toy_randomness_and_world_must_be_given():
    world = make_toy_world(np.random.default_rng(0))
    for call in (lambda: make_toy_world(0), lambda: make_toy_world(None),
                 lambda: sample_pairs(world, 3, 0), lambda: sample_pairs(world, 3, None)):
        with pytest.raises(ValueError, match="rng must be a numpy Generator, such as np.random.default_rng"):
            call()
    with pytest.raises(ValueError, match="world must be a ToyWorld"):
        sample_pairs(None, 3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="world must be a ToyWorld"):
        class_captions(None)
    with pytest.raises(ValueError, match="n must be an integer from 1 to 100000, got 2.5"):
        sample_pairs(world, 2.5, np.random.default_rng(0))
    a = sample_pairs(world, np.int64(3), np.random.default_rng(1))
    b = sample_pairs(world, 3, np.random.default_rng(1))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("kwargs, message", [
    ({"seed": -1}, "seed must be an integer >= 0"), ({"seed": "a"}, "seed must be an integer >= 0"),
    ({"seed": 2.5}, "seed must be an integer >= 0"), ({"seed": True}, "seed must be an integer >= 0"),
    ({"lr": True}, "lr must be a finite number > 0"), ({"lr": "0.5"}, "lr must be a finite number > 0"),
    ({"lr": float("inf")}, "lr must be a finite number > 0"), ({"checkpoints": 5}, "checkpoints must be a list"),
    ({"checkpoints": None}, "checkpoints must be a list"), ({"checkpoints": "1"}, "checkpoints must be a list"),
    ({"checkpoints": [1.0]}, "checkpoints must be step counts"), ({"n_show": 1.0}, "n_show must be an integer"),
], ids=["seed-negative", "seed-string", "seed-float", "seed-bool", "lr-bool", "lr-string", "lr-inf", "cp-int",
        "cp-none", "cp-string", "cp-float", "n_show-float"])
def test_train_clip_toy_settings_of_the_wrong_kind_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        train_clip_toy(steps=1, **kwargs)


def test_train_clip_toy_takes_numpy_and_torch_numbers():
    want = train_clip_toy(seed=1, steps=3, lr=0.5, checkpoints=[0, 3])
    for got in (train_clip_toy(seed=np.int64(1), steps=np.int64(3), lr=np.float32(0.5), checkpoints=np.array([0, 3])),
                train_clip_toy(seed=1, steps=3, lr=torch.tensor(0.5), checkpoints=range(0, 4, 3))):
        np.testing.assert_array_equal(got.Wi, want.Wi)
        assert got.accuracy_at == want.accuracy_at


def test_staircase_labels_must_be_class_numbers():
    S = np.array([[0.1, 0.9], [0.8, 0.2]])
    for labels, message in ((np.array([0.5, 1.0]), "got floats"), (["0", "1"], "got text"), ([True, False], "got booleans")):
        with pytest.raises(ValueError, match=f"labels must hold integers, {message}"):
            staircase_misses(S, labels)
    assert staircase_misses(S.tolist(), [0, 0]) == [(0, 0, 1)]
    with pytest.raises(ValueError, match="similarity has no columns"):
        staircase_misses(np.zeros((2, 0)), [0, 0])


def test_batches_refuse_labels_that_are_not_integers_and_a_missing_generator():
    gen = torch.Generator().manual_seed(0)
    for y, message in (([0.5, 1.5], "y must hold integers, got floats"), ([True, False], "y must hold integers, got booleans"),
                       (["a", "b"], "y must hold integers, got text"), ([[0, 1], [2]], "y is ragged"),
                       ([], "y must be a non-empty 1-D array"), (np.zeros((2, 2), dtype=int), "y must be a non-empty 1-D")):
        with pytest.raises(ValueError, match=message):
            cb.draw_batch(y, None, "one_per_digit", gen)
    for bad in (None, 0, np.random.default_rng(0)):
        with pytest.raises(ValueError, match="gen must be a torch.Generator"):
            cb.draw_batch([0, 1, 2], 2, "random", bad)
    with pytest.raises(ValueError, match="batch must be an integer, got 2.0"):
        cb.draw_batch([0, 1], 2.0, "one_per_digit", gen)
    with pytest.raises(ValueError, match="sampler must be one of"):
        cb.draw_batch([0, 1], 2, ["random"], gen)
    y = np.repeat(np.arange(3), 4)
    assert torch.equal(cb.draw_batch(y, np.int64(3), "one_per_digit", torch.Generator().manual_seed(1)),
                       cb.draw_batch(torch.tensor(y), None, "one_per_digit", torch.Generator().manual_seed(1)))
    for labels, message in (([0.5, 0.5, 1.0], "got floats"), ([True, True], "got booleans"), ("aab", "got text"),
                            (None, "got None"), (torch.tensor([0.0, 0.0], requires_grad=True), "got a tensor of dtype torch.float32")):
        with pytest.raises(ValueError, match=f"batch_labels must hold integers, {message}"):
            cb.false_negative_floor(labels)
    assert cb.false_negative_floor(torch.tensor([7, 7, 3])) == pytest.approx(2 * math.log(2) / 3)


def test_digit_captions_refuse_templates_that_are_not_templates():
    for templates, message in ((None, "templates must be a non-empty sequence"), (["{word}", 5], r"templates\[1\] must be a string"),
                               (["{word} {x}"], r"templates\[0\] = '\{word\} \{x\}' is not a template .* KeyError"),
                               (["{word"], r"templates\[0\] .* is not a template"),
                               (["{word} {0}"], r"templates\[0\] .* IndexError"),
                               (["{{word}}"], "names neither"), ([], "non-empty")):
        with pytest.raises(ValueError, match=message):
            cd.digit_captions(templates)


@pytest.mark.parametrize("kwargs, message", [
    ({"test_size": "0.3"}, "test_size must be a number between 0 and 1"), ({"test_size": True}, "test_size must be a number"),
    ({"test_size": 0.3j}, "test_size must be a number"), ({"test_size": float("nan")}, "test_size must be between 0 and 1"),
    ({"test_size": 0.001}, r"test_size=0.001 leaves 2 test and 1795 training images"),
    ({"seed": "a"}, "seed must be an integer >= 0"), ({"seed": -1}, "seed must be an integer >= 0"),
    ({"seed": 2**32}, r"seed must be an integer from 0 to 2\*\*32 - 1"),
], ids=["size-string", "size-bool", "size-complex", "size-nan", "size-tiny", "seed-string", "seed-negative", "seed-huge"])
def test_load_digit_split_refuses_settings_before_scikit_learn_sees_them(kwargs, message):
    with pytest.raises(ValueError, match=message):
        cd.load_digit_split(**kwargs)


def _fake_captions(seed: int = 0, k: int = 2, d: int = 16) -> torch.Tensor:
    return F.normalize(torch.randn(10, k, d, generator=torch.Generator().manual_seed(seed)), dim=-1)


def test_caption_vectors_must_be_real_finite_and_have_a_direction():
    emb = _fake_captions()
    with pytest.raises(ValueError, match=r"captions\[0\]\[0\] must be a string"):
        cd.embed_captions([[1, 2]] * 10, model=object())
    with pytest.raises(ValueError, match="model must be a SentenceTransformer"):
        cd.embed_captions([["a"]] * 10, model=None)
    for bad, message in ((emb.to(torch.complex64), "complex numbers"), (emb > 0, "dtype torch.bool"),
                         (emb.long(), "dtype torch.int64"), (emb * np.nan, "contains NaN or infinite")):
        with pytest.raises(ValueError, match=f"caption_emb .*{message}"):
            cd.class_text_vectors(bad)
    with pytest.raises(ValueError, match="caption_emb's mean phrasing of digit 0 is all zeros"):
        cd.class_text_vectors(torch.cat([emb[:, :1], -emb[:, :1]], dim=1))


def test_class_vectors_of_any_size_or_half_precision_keep_their_direction():
    emb = _fake_captions()
    want = cd.class_text_vectors(emb)
    for scale in (1e-30, 1e-20, 1e20):  # F.normalize alone clamps the tiny means (eps 1e-12) or overflows huge ones
        torch.testing.assert_close(cd.class_text_vectors(emb * scale), want, rtol=1e-6, atol=1e-6)
    half = cd.class_text_vectors((emb * 6e4).half())  # their float16 sum overflows: averaged in float32
    assert half.dtype == torch.float16 and bool(torch.isfinite(half).all())
    torch.testing.assert_close(half.float(), want, rtol=0, atol=2e-3)


def test_symmetric_loss_refuses_bad_vectors_labels_and_tau_by_name():
    g = torch.Generator().manual_seed(4)
    I, T = F.normalize(torch.randn(6, 8, generator=g), dim=-1), F.normalize(torch.randn(6, 8, generator=g), dim=-1)
    labels = torch.tensor([0, 1, 2, 3, 4, 0])
    cases = [
        ((I.to(torch.complex64), T, 0.1), "image_vecs holds complex numbers"),
        ((I, T * np.nan, 0.1, labels), "text_vecs contains NaN or infinite entries"),
        ((torch.zeros(6, 8), T, 0.1, labels), "image_vecs row 0 is all zeros"),
        ((I.double(), T, 0.1, labels), "must share dtype and device"),
        ((I, T, 1e-45, labels), "tau=1e-45 is too small for these scores"),
        ((I, T, "0.1"), "tau must be a number > 0"),
        ((I, T, 0.1, torch.full((6,), 0.5)), "labels must hold integers, got a tensor of dtype torch.float32"),
        ((I, T, 0.1, ["a"] * 6), "labels must hold integers, got text"),
        ((I, T, 0.1, torch.tensor([True, False] * 3)), "labels must hold integers, got a tensor of dtype torch.bool"),
        ((I[:0], T[:0], 0.1), "need at least one row and one column"),
    ]
    for args, message in cases:
        with pytest.raises(ValueError, match=message):
            cd.symmetric_loss_torch(*args)
    assert cd.symmetric_loss_torch(I.tolist(), T.double(), 0.1).item() == pytest.approx(
        cd.symmetric_loss_torch(I, T, 0.1).item(), rel=1e-6)  # tables are read as float64


@pytest.mark.parametrize("scale", [1e-30, 1e-20, 1e20, 1e30])
def test_symmetric_loss_gives_a_row_and_its_unit_direction_the_same_loss(scale):
    """F.normalize clamps a tiny row's length at 1e-12 (so 1e-30 x a unit row stays near 0, not unit) and
    overflows a huge row's squared length; both forms of the loss scale by the largest entry first."""
    g = torch.Generator().manual_seed(5)
    U, T = F.normalize(torch.randn(6, 8, generator=g), dim=-1), torch.randn(6, 8, generator=g)
    labels = torch.tensor([0, 1, 0, 2, 1, 3])
    for lab in (labels, None):
        assert cd.symmetric_loss_torch(U * scale, T, 0.1, lab).item() == pytest.approx(
            cd.symmetric_loss_torch(U, T, 0.1, lab).item(), rel=1e-6)
    tiny = (U * scale).requires_grad_(True)
    cd.symmetric_loss_torch(tiny, T, 0.1, labels).backward()
    assert bool(torch.isfinite(tiny.grad).all()) and tiny.grad.abs().max() > 0


def test_the_same_digit_mask_leaves_out_exactly_the_same_digit_cells():
    """Captions of one digit share one vector: the unmasked loss sits on the floor, the masked one goes to 0
    (every cell left in a softmax is another digit's, at cosine 0); a learned tau gets its gradient."""
    labels = np.array([0, 0, 1, 2, 2, 2])
    V = torch.eye(3, dtype=torch.float64)[labels]
    assert cd.symmetric_loss_torch(V, V, 1e-3).item() == pytest.approx(cb.false_negative_floor(labels))
    assert cd.symmetric_loss_torch(V, V, 1e-3, labels).item() == pytest.approx(0.0, abs=1e-300)
    assert cd.symmetric_loss_torch(V, V, 0.1, np.zeros(6, dtype=int)).item() == 0.0  # no negative left at all
    tau = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    g = torch.Generator().manual_seed(6)
    I, T = torch.randn(6, 4, generator=g, dtype=torch.float64), torch.randn(6, 4, generator=g, dtype=torch.float64)
    cd.symmetric_loss_torch(I, T, tau, labels).backward()
    assert tau.grad is not None and tau.grad.item() != 0


@pytest.mark.parametrize("kwargs, message", [
    ({"X": "complex"}, "X holds complex numbers"), ({"X": "strings"}, "X must hold real numbers, got text"),
    ({"X": "bools"}, "X must hold real numbers, got booleans"), ({"X": "nan"}, "X contains NaN or infinite entries"),
    ({"X": "requires-grad"}, r"X is a torch tensor that requires grad: .* X.detach\(\)"),
    ({"X": "masked"}, "X is a masked array"), ({"X": "huge"}, "X holds values too large for float32"),
    ({"y": "floats"}, "y must hold integers, got floats"), ({"y": "strings"}, "y must hold integers, got text"),
    ({"lr": "x"}, "lr must be a finite number > 0"), ({"lr": -1.0}, "lr must be a finite number > 0"),
    ({"lr": float("nan")}, "lr must be a finite number > 0"), ({"seed": "a"}, "seed must be an integer >= 0"),
    ({"seed": 2.5}, "seed must be an integer >= 0"), ({"seed": 2**64}, r"seed must be an integer from 0 to 2\*\*64 - 1"),
    ({"classes": "12"}, "classes must be a list of digits"),
    ({"classes": [1.5]}, "classes entry must be an integer, got 1.5"),
    ({"classes": [True, 2]}, "classes entry must be an integer, got True"),
    ({"mask_same_digit": "no"}, "mask_same_digit must be True or False"),
    ({"mask_same_digit": True, "classes": [3]}, "mask_same_digit=True needs two or more classes"),
    ({"caption_emb": "nan"}, "caption_emb contains NaN or infinite entries"),
    ({"caption_emb": "requires-grad"}, r"caption_emb requires grad, .* Pass caption_emb.detach\(\)"),
    ({"steps": 2.5}, "steps must be an integer from 0 to 100000"), ({"hidden": 0}, "hidden must be an integer from 1 to 100000"),
    ({"sampler": ["random"]}, "sampler must be one of"), ({"lr": 1e300}, "lr=1e\\+300 is too large for the float32 tower"),
    ({"lr": 1e30}, r"training diverged at step \d+: the image tower's vectors are no longer finite"),
], ids=lambda v: str(v) if not isinstance(v, dict) else "-".join(f"{k}={v[k]}" for k in v))
def test_train_image_tower_refuses_bad_arguments_by_name(kwargs, message):
    rng = np.random.default_rng(0)
    X, y, emb = rng.random((40, 64)), np.arange(40) % 10, _fake_captions()
    bad_X = {"complex": X * 1j, "strings": X.astype(str), "bools": X > 0.5, "nan": X * np.nan, "huge": X * 1e300,
             "requires-grad": torch.tensor(X, requires_grad=True), "masked": np.ma.masked_array(X, X > 0.5)}
    bad_y = {"floats": y + 0.5, "strings": y.astype(str)}
    bad_emb = {"nan": emb * np.nan, "requires-grad": emb.clone().requires_grad_(True)}
    kwargs = dict(kwargs)
    X = bad_X[kwargs.pop("X")] if "X" in kwargs else X
    y = bad_y[kwargs.pop("y")] if "y" in kwargs else y
    emb = bad_emb[kwargs.pop("caption_emb")] if "caption_emb" in kwargs else emb
    with pytest.raises(ValueError, match=message):
        cd.train_image_tower(X, y, emb, **{"steps": 3, "batch": 4, "hidden": 8, **kwargs})


def test_train_image_tower_takes_half_captions_other_widths_and_numpy_numbers():
    rng = np.random.default_rng(0)
    X, y, emb = rng.random((40, 64)), np.arange(40) % 10, _fake_captions()
    _, want = cd.train_image_tower(X, y, emb, steps=3, batch=4, hidden=8)
    _, got = cd.train_image_tower(X, y, emb, steps=np.int64(3), batch=np.int64(4), hidden=np.int64(8), seed=np.int64(0),
                                  lr=np.float64(1e-3), classes=np.arange(10))
    assert got == want
    _, half = cd.train_image_tower(X, y, emb.half(), steps=3, batch=4, hidden=8)  # captions read as float32
    assert half == pytest.approx(want, abs=1e-2)
    tower, _ = cd.train_image_tower(X[:, :20], y, emb, steps=2, batch=4, hidden=8)  # 20 pixels per image
    assert cd.embed_images(tower, X[:, :20]).shape == (40, 16)
    with pytest.raises(ValueError, match="X has 64 pixels per image, but the tower reads 20"):
        cd.embed_images(tower, X)
    with pytest.raises(ValueError, match="tower must be an ImageTower"):
        cd.embed_images(None, X)


def test_digit_predictions_and_hits_read_tables_and_refuse_what_has_no_answer():
    g = torch.Generator().manual_seed(7)
    I, T = F.normalize(torch.randn(6, 8, generator=g), dim=-1), F.normalize(torch.randn(4, 8, generator=g), dim=-1)
    want = cd.zero_shot_predict(I, T)
    np.testing.assert_array_equal(cd.zero_shot_predict(I.numpy(), T.tolist()), want)  # compared in float64
    np.testing.assert_array_equal(cd.zero_shot_predict(I.clone().requires_grad_(True), T), want)  # labels: no gradient
    for args, message in (((I * np.nan, T), "image_vecs contains NaN"), ((I, T.to(torch.complex64)), "class_vecs holds complex"),
                          ((I, T[:0]), "class_vecs has no rows"), ((I, T > 0), "class_vecs must hold real numbers, got booleans"),
                          ((I.half() * 6e4, T.half() * 6e4), r"image_vecs @ class_vecs.T overflows torch.float16")):
        with pytest.raises(ValueError, match=message):
            cd.zero_shot_predict(*args)
    il, tl = np.arange(6) % 4, np.arange(4)
    assert cd.hit_at_1(I.clone().requires_grad_(True), il, T, tl) == cd.hit_at_1(I, il.tolist(), T, torch.tensor(tl))
    for args, message in (((I, il + 0.5, T, tl), "image_labels must hold integers, got floats"),
                          ((I, il, T, tl.astype(str)), "text_labels must hold integers, got text"),
                          ((I * np.nan, il, T, tl), "image_vecs contains NaN")):
        with pytest.raises(ValueError, match=message):
            cd.hit_at_1(*args)


def test_linear_probe_refuses_features_and_labels_it_cannot_fit():
    X, y = np.eye(4), [0, 1, 0, 1]
    for args, message in (((X * 1j, y, X, y), "train_feats holds complex numbers"), ((X, y, X * np.nan, y), "test_feats contains NaN"),
                          ((X, list("abab"), X, y), "y_train must hold integers, got text"),
                          ((X, y[:3], X, y), r"y_train must hold one label per row of train_feats \(4\)"),
                          ((X, [1, 1, 1, 1], X, y), "y_train must hold at least two classes")):
        with pytest.raises(ValueError, match=message):
            cd.linear_probe_accuracy(*args)


def test_run_digits_lit_checks_its_own_arguments_first():
    emb = _fake_captions()
    with pytest.raises(ValueError, match="split must be a DigitSplit"):
        cd.run_digits_lit(None, emb)
    split = cd.load_digit_split()
    for kwargs, message in (({"held_out": 3}, "held_out must be a list of digits"), ({"held_out": "38"}, "held_out must be a list"),
                            ({"held_out": [1.5]}, "held_out entry must be an integer, got 1.5"),
                            ({"held_out": [12]}, "held_out must be digits 0..9"), ({"probe": "no"}, "probe must be True or False"),
                            ({"mask_same_digit": 1}, "mask_same_digit must be True or False")):
        with pytest.raises(ValueError, match=message):
            cd.run_digits_lit(split, emb, steps=1, **kwargs)
