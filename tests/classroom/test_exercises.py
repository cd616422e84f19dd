"""Every exercise check, against a right and a wrong answer; wrong answers never reveal the right one."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import math
import pkgutil
from pathlib import Path

import numpy as np
import pytest

import labs.classroom.exercises
from labs.classroom.exercises.beyond_one_vector import SHORTLISTS
from labs.classroom.exercises.hard_negatives import added_negative_distance
from labs.lessons.margin_toy import pull, push
from labs.classroom.exercises.clip import FLOOR_BATCH, check_false_negative_floor
from labs.classroom.exercises.hard_negatives import check_added_negative, check_collapse_point, check_pull, check_push
from labs.classroom.exercises.mining import SAFE_WINDOW, check_mask, check_safe_window, check_same_batch_chance
from labs.lessons.infonce import false_negative_mask
from labs.classroom.exercises.pooling import check_left_padded_cls, check_unmasked_mean
from labs.lessons.mining import CARDS, ROUTER_QUESTION, embedding_scores

ROOT = Path(__file__).resolve().parents[2]


# check name -> (a function giving the right answer, a wrong answer, text the wrong answer's hint must not show)
CASES = {
    "check_unmasked_mean": (lambda: 1.6, 4.0, "1.6"),
    "check_left_padded_cls": (lambda: (0, 3, 5), (0, 0, 0), "(0, 3, 5)"),
    "check_duplicate_floor": (lambda: math.log(3), math.log(2), "1.10"),
    "check_halved_gap_tau": (lambda: 0.1 / (0.2 / 0.05), 0.05, "0.025"),
    "check_batch_tau": (lambda: 0.2 / math.log(9 * 31), 0.2 / math.log(27), "0.035"),
    "check_pull_ratio": (lambda: math.exp(2 * 0.05 / 0.01) / math.exp(0.05 / 0.01), 100, "148"),
    "check_pull": (lambda: pull, lambda a, b, rate: (a, b), None),
    "check_push": (lambda: push, pull, None),
    "check_collapse_point": (lambda: (1.18, 1.25), (1.58, 0.85), "1.18"),
    "check_added_negative": (added_negative_distance, 0.294, f"{added_negative_distance():.3f}"),
    "check_mask": (lambda: false_negative_mask, lambda S, m: np.zeros(np.shape(S), bool), None),
    "check_safe_window": (lambda: SAFE_WINDOW, 0.010, f"{SAFE_WINDOW:.3f}"),
    "check_same_batch_chance": (lambda: 3 / 13, 0.22, "0.23"),
    "check_chance_loss": (lambda: math.log(16), math.log(64), f"{math.log(16):.2f}"),
    "check_ndcg_by_hand": (lambda: (1 + 1 / math.log2(5)) / (1 + 1 / math.log2(3)), 1.0, "0.877"),
    "check_mrr_step": (lambda: 0.5 / 36, 0.5, "0.014"),
    "check_gap_loss": (lambda: math.log(1 + 31 * math.exp(-1.5)), math.log(1 + math.exp(-1.5)), "2.07"),
    "check_hub_table_loss": (lambda: (math.log(1 + math.exp(-1)) + math.log(1 + math.e) + 2 * math.log(2)) / 4,
                             math.log(2), "0.753"),
    "check_false_negative_floor": (lambda: (3 * math.log(3) + 2 * math.log(2)) / 6, math.log(3), "0.78"),
    "check_best_share": (lambda: math.e ** 2 / (math.e ** 2 + 31), 1 / 32, "0.19"),
    "check_index_gigabytes": (lambda: 128 * 1 * 10_000_000 / 1e9, 128 * 4 * 10_000_000 / 1e9, "1.28"),
    "check_bce_probability": (lambda: 1 - math.exp(-2.0), math.exp(-2.0), "0.86"),
    "check_best_shortlist_recall": (lambda: max(r * h for r, h in SHORTLISTS.values()), 0.8, "0.63"),
    "check_one_step_lr": (lambda: 0.1, 0.5, "0.1"),
    "check_bowl_step": (lambda: (1.4, 1.2), (0.6, 2.8), "1.4"),
    "check_two_card_slope": (lambda: 1 / (1 + math.e) - 1, 1 - 1 / (1 + math.e), "0.73"),
    "check_no_zero_grad": (lambda: 3.016, 1.976, "3.016"),
    "check_wrong_axis": (lambda: (3, 9), (3, 384), "(3, 9)"),
    "check_cell_gradient": (lambda: 0.191, 0.573, "0.19"),
    "check_triplet_batch_loss": (lambda: 0.2 / 6, 0.2, "0.03"),
    "check_shifted_labels_loss": (lambda: 1.515, 0.5816, "1.51"),
    "check_scale_bug_loss": (lambda: math.log1p(31 * math.exp(-0.2 / 20)), math.log(32), "3.456"),
    "check_small_batch_topics": (lambda: 0.735, 1.0, "0.73"),
    "check_sorted_batch_loss": (lambda: (3 * math.log(math.exp(20) + 3) + math.log(1 + 3 * math.exp(-20))) / 4,
                                20.0, "15"),
    "check_swapped_captions": (lambda: 0.8, 0.0, "80"),
    "check_clipped_int8_values": (lambda: 2, 255, "+127 or -127"),
    "check_resample_holds": (lambda: 1 - 0.8 ** 5, 0.8 ** 5, "0.67"),
    "check_compute_matched_batch": (lambda: 48, 64, "48"),
    "check_questions_to_halve": (lambda: 4 * 636, 2 * 636, "2544"),
    "check_unpaired_width": (lambda: "wider", "narrower", "wider"),
}

MODULES = [importlib.import_module(f"labs.classroom.exercises.{m.name}")
           for m in pkgutil.iter_modules(labs.classroom.exercises.__path__)]
ALL = {name: fn for module in MODULES for name, fn in vars(module).items()
       if name.startswith("check_") and inspect.isfunction(fn) and fn.__module__ == module.__name__}


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


def test_exercise_checks_live_only_in_the_classroom():
    """An exercise check is a top-level ``check_*`` returning ``bool``, and only
    ``labs.classroom.exercises`` defines them: argument checks are ``valid_*`` or
    the words of ``labs.checks``, model invariants ``assert_*``."""
    defined = set()
    for path in (ROOT / "labs").rglob("*.py"):
        tree = ast.parse(path.read_text())
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("check_")}
        if "exercises" not in path.parts:
            assert not names, f"{path.relative_to(ROOT)} defines {sorted(names)}: only exercise checks are check_*"
        defined |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("check_")
                    and n.returns is not None and ast.unparse(n.returns) == "bool"}
    assert defined == set(ALL)


@pytest.mark.parametrize("name", sorted(CASES))
def test_some_lesson_calls_each_check(name):
    code = "\n".join("".join(c["source"]) for path in sorted((ROOT / "notebooks").glob("*.ipynb"))
                     for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
    assert f"{name}(" in code, f"no lesson calls {name}"


@pytest.mark.parametrize(
    "check, right, wrong",
    [
        (check_unmasked_mean, [1.6, "1.6"], [4, 2.4, 2.5, "x"]),
        (check_left_padded_cls, [(0, 3, 5), ["0", "3", "5"]], [(0, 0, 0), (8, 5, 3), (1, 4, 6), (0, 3), "x"]),
    ],
)
def test_pooling_checks_read_numbers_and_words_leniently(check, right, wrong, capsys):
    assert check(None) is False
    assert "not answered yet" in capsys.readouterr().out.lower()
    for answer in right:
        assert check(answer) is True
        assert capsys.readouterr().out.startswith("Right")
    for answer in wrong:
        assert check(answer) is False
        assert not capsys.readouterr().out.startswith("Right")


# ---- checks with behaviour of their own ---------------------------------------------


def _wrong_pull(a, b, rate):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a + rate * (b - a), b  # moves only one point


def _wrong_push(a, b, rate, margin):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a - rate * (b - a), b + rate * (b - a)  # ignores the margin


def _said(capsys) -> str:
    """What a check printed, with its line breaks (at 46 columns) undone."""
    return " ".join(capsys.readouterr().out.split())


def test_check_pull_and_push(capsys):
    assert check_pull(pull) and check_push(push)
    assert "Right" in _said(capsys)
    assert not check_pull(_wrong_pull)
    assert "one point stayed" in _said(capsys)
    assert not check_push(_wrong_push)
    assert "margin apart" in _said(capsys)
    assert not check_pull(None) and "Not answered yet" in _said(capsys)
    assert not check_push(lambda a, b, rate, margin: None) and "Not answered yet" in _said(capsys)
    assert not check_push(3) and "function itself" in _said(capsys)
    assert not check_pull(lambda a, b, rate: 1 / 0) and "ZeroDivisionError" in _said(capsys)


def test_check_collapse_point(capsys):
    assert check_collapse_point(np.array([1.18, 1.25])) and "Right" in _said(capsys)
    from labs.lessons.margin_toy import margin_toy
    end = margin_toy(200, negatives=False)["login"]  # the answer is where training really ends
    assert check_collapse_point(tuple(end)) and "Right" in _said(capsys)
    for wrong, says in (((1.58, 0.85), "starts"), ((0.78, 1.65), "password"), ((1.13, 1.25), "refund"),
                        ((1.155, 1.25), "no pull joins"), ((0.0, 0.0), "Hint")):
        assert not check_collapse_point(wrong)
        assert says in _said(capsys)
    assert not check_collapse_point("here") and "two numbers" in _said(capsys)
    assert not check_collapse_point((1.0, 2.0, 3.0)) and "two numbers" in _said(capsys)


def test_check_added_negative(capsys):
    truth = added_negative_distance()
    assert 0.3 < truth < 0.35  # the lesson's worked solution: a little wider than without the pair
    assert check_added_negative(truth) and "Right" in _said(capsys)
    assert not check_added_negative(0.294) and "five original pairs" in _said(capsys)
    assert not check_added_negative(0.235) and "put the new pair first" in _said(capsys)
    assert not check_added_negative("far") and not check_added_negative(None)


def _mask_ge(S, m):
    S = np.asarray(S)
    rows = np.arange(S.shape[0])
    out = S >= S[rows, rows][:, None] + m
    out[rows, rows] = False
    return out


def _mask_keeps_diagonal_unguarded(S, m):
    S = np.asarray(S)
    return S > S[np.arange(S.shape[0]), np.arange(S.shape[0])][:, None] + m


def test_check_mask(capsys):
    assert check_mask(false_negative_mask) and "Right" in _said(capsys)
    assert not check_mask(_mask_ge) and "strictly above" in _said(capsys)
    assert not check_mask(_mask_keeps_diagonal_unguarded) and "masked a positive" in _said(capsys)
    assert not check_mask(lambda S, m: false_negative_mask(S, -m)) and "sign" in _said(capsys)
    assert not check_mask(lambda S, m: np.zeros((1, 1), bool)) and "same shape" in _said(capsys)
    assert not check_mask(lambda S, m: 1 / 0) and "ZeroDivisionError" in _said(capsys)
    assert not check_mask(lambda S, m: None) and "Not answered yet" in _said(capsys)
    assert not check_mask(3) and "function itself" in _said(capsys)


def test_safe_window_is_the_twin_minus_the_closest_wrong_card(minilm, capsys):
    cos = dict(zip(CARDS, embedding_scores(minilm, [ROUTER_QUESTION])[0]))
    wrong = max(v for c, v in cos.items() if c not in ("aurora-reset", "aurora-powercycle"))
    assert wrong == cos["aurora-firmware"]
    assert abs(SAFE_WINDOW - (cos["aurora-powercycle"] - wrong)) < 2e-3
    assert cos["aurora-powercycle"] > cos["aurora-reset"] > wrong  # the window exists
    for value, says in ((0.010, "top end"), (0.116, "bottom end"), (-SAFE_WINDOW, "positive"), (0.5, "ends")):
        assert not check_safe_window(value)
        assert says in _said(capsys)


def test_check_same_batch_chance(capsys):
    assert check_same_batch_chance(3 / 13) and check_same_batch_chance(23.08)
    assert _said(capsys).startswith("Right")
    for value, says in ((0.22, "estimate"), (0.25, "short"), (4 / 13, "pairs of rows")):
        assert not check_same_batch_chance(value)
        assert says in _said(capsys)


def test_check_false_negative_floor(capsys):
    truth = (3 * math.log(3) + 2 * math.log(2)) / 6  # rows 7, 7, 7 share three ways, 1, 1 two ways, 3 alone
    assert FLOOR_BATCH == (7, 7, 7, 1, 1, 3)
    assert check_false_negative_floor(truth) is True
    for wrong in (None, "x", 6 * truth, math.log(3), (math.log(3) + math.log(2)) / 2, 5 * math.log(2) / 6, 0.0):
        assert check_false_negative_floor(wrong) is False
    out = capsys.readouterr().out
    assert "0.78" not in out and "0.780" not in out


def test_check_chance_loss(capsys):
    from labs.classroom.exercises.finetuning import check_chance_loss

    assert check_chance_loss(math.log(16)) is True
    assert "Right" in capsys.readouterr().out
    for wrong, hint in [(None, "Fill in"), (1 / 16, "probability"), (4.0, "log base 2"), (-1, "never negative"),
                        ("x", "Give a number"), (1.0, "Not quite")]:
        assert check_chance_loss(wrong) is False
        out = capsys.readouterr().out
        assert hint in out and "2.77" not in out  # a hint, never the answer


def test_check_sorted_batch_loss_is_info_nce_of_the_perfect_sorted_table(capsys):
    """The break-it answer is labs' InfoNCE of a perfect model's table whose columns a sort moved (3 of 4)."""
    from labs.classroom.exercises.finetuning import SORTED_BATCH, SORTED_MOVED, SORTED_SCALE, check_sorted_batch_loss
    from labs.lessons.infonce import info_nce

    moved = [1, 2, 0, 3]  # column i now holds article moved[i]: a three-cycle, the last row left in place
    assert sum(i != j for i, j in enumerate(moved)) == SORTED_MOVED and len(moved) == SORTED_BATCH
    S = np.eye(SORTED_BATCH)[:, moved]  # cosine 1 with its own article, wherever the sort put it
    assert check_sorted_batch_loss(info_nce(S, 1 / SORTED_SCALE)) is True
    for wrong, says in ((20.0, "one moved row"), (0.0, "perfect model"), (math.log(4), "cannot tell"), (5.0, "three")):
        assert check_sorted_batch_loss(wrong) is False
        assert says in _said(capsys)


def test_clipped_int8_keeps_only_the_sign(capsys):
    """The break-it's claim: with the smallest size as the scale, int8 stores two values and ranks like one bit."""
    import torch

    from labs.classroom.exercises.beyond_one_vector import check_clipped_int8_values
    from labs.lessons.matryoshka import binarize, matching_bits, quantize_int8, reciprocal_ranks

    gen = torch.Generator().manual_seed(0)
    q, d = torch.randn(20, 16, generator=gen), torch.randn(50, 16, generator=gen)
    scale = float(torch.cat([q, d]).abs().min())
    qi, di = quantize_int8(q, scale), quantize_int8(d, scale)
    assert torch.unique(torch.cat([qi, di])).tolist() == [-127.0, 127.0]
    right = list(range(20))
    assert np.array_equal(reciprocal_ranks(qi @ di.T, right),
                          reciprocal_ranks(matching_bits(binarize(q), binarize(d)), right))
    assert check_clipped_int8_values(len(torch.unique(di))) is True
    assert check_clipped_int8_values(255) is False and "scale that fits" in _said(capsys)


def test_wrong_axis_shape_is_what_torch_gives_for_the_lessons_grid(capsys):
    """The break-it answer is the shape the bug really has on a grid of the lesson's shape."""
    import torch

    from labs.classroom.exercises.pooling import LESSON_GRID, check_wrong_axis

    grid, mask = torch.zeros(LESSON_GRID), torch.ones(LESSON_GRID[:2])
    buggy = (grid * mask.unsqueeze(-1)).sum(dim=2) / mask.sum(dim=1, keepdim=True)
    assert check_wrong_axis(buggy.shape) is True  # a torch.Size is a shape too
    right = (LESSON_GRID[0], LESSON_GRID[2])  # what mean pooling gives
    for wrong, says in ((right, "right pooling"), ("39", "tuple of whole numbers"), ((3.5, 9), "whole numbers"),
                        (LESSON_GRID, "removes that axis")):
        assert check_wrong_axis(wrong) is False
        assert says in _said(capsys)


def test_forgot_zero_grad_path_is_torch_sgd_without_zero_grad(capsys):
    """The hand-written path is what torch.optim.SGD does when .grad piles up, and plain descent when cleared."""
    import torch

    from labs.classroom.exercises.gradients import FORGOT_LR, FORGOT_START, check_no_zero_grad, \
        forgot_zero_grad_path
    from labs.lessons.gradients import gradient_descent

    for clear in (False, True):
        w = torch.tensor(FORGOT_START, dtype=torch.float64, requires_grad=True)
        opt = torch.optim.SGD([w], lr=FORGOT_LR)
        path = [w.item()]
        for _ in range(40):
            if clear:
                opt.zero_grad()
            ((w - 3) ** 2).backward()
            opt.step()
            path.append(w.item())
        assert np.allclose(forgot_zero_grad_path(40, clear=clear), path, atol=1e-12)
    assert np.allclose(forgot_zero_grad_path(5, clear=True), gradient_descent(lambda v: 2 * (v - 3), 1.0, 0.1, 5))
    assert check_no_zero_grad(forgot_zero_grad_path(3)[-1]) is True
    for wrong, says in ((forgot_zero_grad_path(3, clear=True)[-1], "clears .grad"), (2.12, "two steps"),
                        (3.0, "does not stop")):
        assert check_no_zero_grad(wrong) is False
        assert says in _said(capsys)


def test_shifted_labels_loss_is_cross_entropy_with_the_labels_off_by_one(capsys):
    """The lesson-3 break-it: labs' own cross-entropy with labels (1, 2, 0) is torch's, every row above ln 3."""
    import torch
    import torch.nn.functional as F

    from labs.classroom.exercises.infonce import LESSON_MATRIX, SHIFTED_LABELS, check_shifted_labels_loss, \
        labelled_batch_loss

    Z = torch.tensor(LESSON_MATRIX, dtype=torch.float64) / 0.5
    labels = torch.tensor(SHIFTED_LABELS)
    assert labelled_batch_loss(SHIFTED_LABELS) == pytest.approx(F.cross_entropy(Z, labels).item(), abs=1e-12)
    assert bool((F.cross_entropy(Z, labels, reduction="none") > math.log(3)).all())  # each row worse than a guess
    assert labelled_batch_loss((0, 1, 2)) == pytest.approx(0.5816, abs=1e-4)  # the lesson's right-label loss
    for wrong, says in ((0.5816, "right labels"), (math.log(3), "guess"), (4.545, "sum"), (1.3, "average")):
        assert check_shifted_labels_loss(wrong) is False
        assert says in _said(capsys)


def test_scale_bug_loss_is_info_nce_at_tau_20(capsys):
    """The lesson-4 break-it: the row's loss is labs' InfoNCE of a 0.2 lead over 31 level cards at tau 20."""
    from labs.classroom.exercises.temperature import check_scale_bug_loss, scale_bug_loss
    from labs.lessons.infonce import info_nce

    assert scale_bug_loss() == pytest.approx(info_nce([[0.8] + [0.6] * 31], 20.0), abs=1e-12)
    assert math.log(32) - 0.02 < scale_bug_loss() < math.log(32)  # a hair below a blind guess
    for wrong, says in ((math.log(32), "ln 32"), (scale_bug_loss(tau=0.05), "intended"),
                        (scale_bug_loss(wrong_cards=3), "three wrong cards"), (1.0, "minus its log")):
        assert check_scale_bug_loss(wrong) is False
        assert says in _said(capsys)


def test_small_batch_keeps_intent_and_loses_topics(capsys):
    """The lesson-5 break-it's claims: with 2 questions a batch the look-alikes still teach intent on every
    seed, while topic accuracy falls well below the 8-question model's."""
    from labs.classroom.exercises.hard_negatives import check_small_batch_topics, small_batch_topic_accuracy
    from labs.lessons.hard_negatives import look_alike_accuracy, topic_accuracy, train_bi_encoder

    models = [train_bi_encoder(True, seed=s, batch=2) for s in range(10)]
    assert all(look_alike_accuracy(m) == 1.0 for m in models)
    mean = float(np.mean([topic_accuracy(m) for m in models]))
    assert small_batch_topic_accuracy() == mean
    assert mean < small_batch_topic_accuracy(batch=8) - 0.2
    assert check_small_batch_topics(round(mean, 3)) is True
    for wrong, says in ((topic_accuracy(models[0]), "seed 0 alone"), (small_batch_topic_accuracy(batch=8), "8"),
                        (0.3, "average the ten")):
        assert check_small_batch_topics(wrong) is False
        assert says in _said(capsys)
