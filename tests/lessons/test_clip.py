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
    staircase_misses, train_clip_toy, zero_shot_predict,
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
    np.testing.assert_array_equal(zero_shot_predict(L, L), np.arange(5))


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
        zero_shot_predict(np.ones((3, 4)), np.ones((5, 3)))
    with pytest.raises(ValueError, match="do not fit"):
        staircase_misses(np.ones((3, 5)), np.zeros(4))


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
        cd.hit_at_1(torch.ones(3, 4), np.zeros(2), torch.ones(5, 4), np.zeros(5))
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
        cb.false_negative_floor(np.zeros((2, 2)))


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
