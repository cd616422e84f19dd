"""Every public function and class of `labs.lessons` (each module's ``__all__``) under odd arguments.

Each argument of each call, in turn, is replaced by what a reader's slip gives (NaN, inf,
booleans, None, text, a table of the wrong shape, a huge integer, a 0-d tensor or NumPy scalar)
while the others stay valid. The call either returns a result with no NaN in it, or refuses with
one line, a ValueError or TypeError that names the argument; never a NumPy or torch error from
deep inside, and never a hang (each call has a time limit). Where a value is plainly no value of
that kind (NaN or a boolean for a number, None for a text), a result is a failure too.

`test_every_public_name_is_covered` keeps the list whole: a new public function fails it until
it has a valid call here. Functions that load a model get a stand-in that fails if touched: their
arguments are checked before any model is used.
"""

from __future__ import annotations

import atexit
import importlib
import inspect
import math
import pkgutil
import shutil
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

import labs.lessons
from labs.lessons import (accumulation, adapter, clip, clip_batches, clip_digits, duplicates, gradients,
                          hard_negatives, help_articles, infonce, lookalikes, margin_toy, matryoshka, mining,
                          pooling, rerank, shares, temperature)
from tests.lessons.nans import has_nan

# ---- valid inputs --------------------------------------------------------------------------------


EMPTY = Path(tempfile.mkdtemp(prefix="labs-fuzz-"))  # a folder that is no model: the valid call is never made
atexit.register(shutil.rmtree, EMPTY, ignore_errors=True)


def _unit(n: int, d: int, seed: int = 0) -> torch.Tensor:
    return torch.nn.functional.normalize(torch.randn(n, d, generator=torch.Generator().manual_seed(seed)), dim=-1)


def _np_unit(n: int, d: int, seed: int = 0) -> np.ndarray:
    return _unit(n, d, seed).double().numpy()


S = np.array([[0.9, 0.2, 0.1], [0.3, 0.8, 0.2], [0.1, 0.4, 0.7]])
TOKENS = torch.randn(2, 4, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
MASK = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])


class ModelUsed(Exception):
    """The stand-in model was reached: every argument passed its checks."""


class Untouchable:
    """A model stand-in: reaching it means the other arguments were taken as valid (a failure for a
    value that must be refused)."""

    def __getattr__(self, name):
        raise ModelUsed(f"the model was used ({name}): the arguments were taken")


def _adapter_set():
    q, p, look = _np_unit(12, 6), _np_unit(12, 6, 1), _np_unit(12, 6, 2)
    return q, p, look, adapter.batch_plan(12, 1, 4, 3, 0)


def _world():
    return clip.make_toy_world(np.random.default_rng(0))


def _digits_small():
    rng = np.random.default_rng(0)
    return rng.normal(size=(80, 64)), np.arange(80) % 10


def _caption_emb():
    return _unit(10, 384).reshape(10, 1, 384).repeat(1, 2, 1)


def _bi_encoder():
    vocab = hard_negatives.build_vocab(["reset my password", "monitor flickers"])
    return hard_negatives.BiEncoder(vocab, np.random.default_rng(0).normal(size=(len(vocab), 4)))


def _centroids():
    return matryoshka.spherical_kmeans(_unit(12, 8), 3, iters=2)


#: name -> (the function, a function returning valid keyword arguments, arguments left alone).
#: The valid calls are small: a few steps, a few rows.
CASES: dict[str, tuple[Callable, Callable[[], dict], tuple[str, ...]]] = {
    # accumulation
    "accumulation_vs_true_batch": (accumulation.accumulation_vs_true_batch,
                                   lambda: {"queries": _unit(8, 4), "docs": _unit(8, 4, 1), "micro": 4, "scale": 20.0},
                                   ()),
    # adapter
    "Mulberry32": (adapter.Mulberry32, lambda: {"seed": 3}, ()),
    "batch_plan": (adapter.batch_plan, lambda: {"topics": 12, "wordings": 5, "batch": 4, "steps": 3, "seed": 0}, ()),
    "adapt": (adapter.adapt, lambda: {"W": np.eye(6), "Q": _np_unit(4, 6)}, ()),
    "adapter_loss_and_grad": (adapter.adapter_loss_and_grad,
                              lambda: {"W": np.eye(6), "Q": _np_unit(4, 6), "P": _np_unit(8, 6, 1), "tau": 0.05}, ()),
    "train_adapter": (adapter.train_adapter, lambda: dict(zip("QPL", _adapter_set()[:3]), plan=_adapter_set()[3],
                                                          steps=2, tau=0.05, lr=0.5), ()),
    "train_adapter_torch": (adapter.train_adapter_torch, lambda: dict(zip("QPL", _adapter_set()[:3]),
                                                                      plan=_adapter_set()[3], steps=2), ()),
    "finite_difference_check": (adapter.finite_difference_check, lambda: {"seed": 0, "eps": 1e-6, "tau": 0.5},
                                        ()),
    "look_alike_wins": (adapter.look_alike_wins, lambda: dict(W=np.eye(6), **dict(zip("QPL", _adapter_set()[:3]))),
                        ()),
    # clip
    "make_toy_world": (clip.make_toy_world, lambda: {"rng": np.random.default_rng(0)}, ()),
    "sample_pairs": (clip.sample_pairs, lambda: {"world": _world(), "n": 8, "rng": np.random.default_rng(1)}, ()),
    "class_captions": (clip.class_captions, lambda: {"world": _world()}, ()),
    "embed": (clip.embed, lambda: {"X": np.random.default_rng(0).normal(size=(5, 4)), "W": np.eye(4)[:, :3]}, ()),
    "clip_loss_and_grads": (clip.clip_loss_and_grads,
                            lambda: {"images": np.random.default_rng(0).normal(size=(4, 5)),
                                     "captions": np.random.default_rng(1).normal(size=(4, 5)),
                                     "Wi": np.eye(5)[:, :3], "Wt": np.eye(5)[:, 1:4], "tau": 0.1}, ()),
    "nearest_class_caption": (clip.nearest_class_caption, lambda: {"image_vecs": _np_unit(5, 3),
                                                                   "caption_vecs": _np_unit(4, 3, 1)}, ()),
    "train_clip_toy": (clip.train_clip_toy, lambda: {"seed": 0, "steps": 2, "tau": 0.1, "lr": 0.5, "batch": 8, "dim": 4,
                                                     "n_test": 20, "n_show": 5, "checkpoints": ()}, ()),
    "staircase_misses": (clip.staircase_misses, lambda: {"similarity": S, "labels": np.array([0, 1, 1])}, ()),
    # clip_batches
    "draw_batch": (clip_batches.draw_batch, lambda: {"y": np.arange(20) % 5, "batch": 4, "sampler": "random",
                                                      "gen": torch.Generator().manual_seed(0)}, ()),
    "false_negative_floor": (clip_batches.false_negative_floor, lambda: {"batch_labels": np.array([0, 1, 1, 2])}, ()),
    # clip_digits
    "digit_captions": (clip_digits.digit_captions, lambda: {}, ()),
    "load_digit_split": (clip_digits.load_digit_split, lambda: {"test_size": 0.3, "seed": 0}, ()),
    "embed_captions": (clip_digits.embed_captions, lambda: {"captions": [["a one"]] * 10, "model": Untouchable()},
                       ("model",)),
    "class_text_vectors": (clip_digits.class_text_vectors, lambda: {"caption_emb": _caption_emb()}, ()),
    "ImageTower": (clip_digits.ImageTower, lambda: {"out_dim": 8, "hidden": 4, "in_dim": 64}, ()),
    "symmetric_loss_torch": (clip_digits.symmetric_loss_torch, lambda: {"image_vecs": _unit(4, 8),
                                                                        "text_vecs": _unit(4, 8, 1), "tau": 0.1}, ()),
    "train_image_tower": (clip_digits.train_image_tower, lambda: {"X": _digits_small()[0], "y": _digits_small()[1],
                                                                  "caption_emb": _caption_emb(), "steps": 2,
                                                                  "tau": 0.1, "batch": 10, "hidden": 4}, ()),
    "embed_images": (clip_digits.embed_images, lambda: {"tower": clip_digits.ImageTower(out_dim=8, hidden=4),
                                                        "X": _digits_small()[0]}, ()),
    "zero_shot_predict": (clip_digits.zero_shot_predict, lambda: {"image_vecs": _unit(5, 8),
                                                                  "class_vecs": _unit(10, 8, 1)}, ()),
    "linear_probe_accuracy": (clip_digits.linear_probe_accuracy,
                              lambda: {"train_feats": _digits_small()[0], "y_train": _digits_small()[1],
                                       "test_feats": _digits_small()[0][:10], "y_test": _digits_small()[1][:10]}, ()),
    "hit_at_1": (clip_digits.hit_at_1, lambda: {"image_vecs": _unit(4, 8), "image_labels": np.array([0, 1, 2, 3]),
                                                "text_vecs": _unit(4, 8, 1), "text_labels": np.array([0, 1, 2, 3])}, ()),
    "run_digits_lit": (clip_digits.run_digits_lit, lambda: {"split": clip_digits.DigitSplit(
        *_digits_small(), *_digits_small()), "caption_emb": _caption_emb(), "steps": 2, "tau": 0.1, "probe": False},
        ()),
    # duplicates
    "row_shares": (duplicates.row_shares, lambda: {"scores": [0.9, 0.5, 0.5], "tau": 0.05}, ()),
    "shared_score_gradient": (duplicates.shared_score_gradient, lambda: {"scores": [0.9, 0.5, 0.4], "copies": [1],
                                                                          "tau": 0.05}, ()),
    "duplicate_floor": (duplicates.duplicate_floor, lambda: {"n_copies": 3}, ()),
    # gradients
    "finite_difference": (gradients.finite_difference, lambda: {"f": lambda w: float(np.sum(w ** 2)),
                                                                  "w": np.array([1.5, 0.5]),
                                                                  "eps": 1e-6}, ()),
    "gradient_descent": (gradients.gradient_descent, lambda: {"grad": lambda w: 2 * w, "w0": np.array([1.0, 2.0]),
                                                                "lr": 0.1,
                                                                "steps": 3}, ()),
    "steps_per_epoch": (gradients.steps_per_epoch, lambda: {"n_examples": 10, "batch": 4}, ()),
    "train_slope": (gradients.train_slope, lambda: {"x": np.arange(1, 9) / 10, "y": np.arange(1, 9) / 5, "lr": 0.5,
                                                    "batch": 4, "epochs": 2, "seed": 0}, ()),
    # hard_negatives
    "tokenize": (hard_negatives.tokenize, lambda: {"text": "Reset my password"}, ()),
    "build_vocab": (hard_negatives.build_vocab, lambda: {"texts": ["reset my password", "monitor"]}, ()),
    "bag_of_words": (hard_negatives.bag_of_words, lambda: {"texts": ["reset password"],
                                                           "vocab": ("password", "reset")}, ()),
    "card": (hard_negatives.card, lambda: {"topic": "password", "intent": hard_negatives.INTENTS[0]}, ()),
    "make_triples": (hard_negatives.make_triples, lambda: {"topics": ["password", "monitor"]}, ()),
    "normalize_rows": (hard_negatives.normalize_rows, lambda: {"A": np.array([[3.0, 4.0], [1.0, 0.0]])}, ()),
    "normalize_backward": (hard_negatives.normalize_backward,
                           lambda: {"dU": np.ones((2, 2)), "U": np.array([[0.6, 0.8], [1.0, 0.0]]),
                                    "norms": np.array([[5.0], [1.0]])}, ()),
    "info_nce_grads": (hard_negatives.info_nce_grads, lambda: {"Q": _np_unit(3, 4), "P": _np_unit(3, 4, 1),
                                                               "tau": 0.1, "symmetric": False}, ()),
    "encoder_loss_and_grad": (hard_negatives.encoder_loss_and_grad,
                              lambda: {"W": np.random.default_rng(0).normal(size=(5, 3)),
                                       "Xq": np.eye(5)[:3], "Xp": np.eye(5)[2:], "tau": 0.1}, ()),
    "encoder_finite_difference_check": (hard_negatives.encoder_finite_difference_check,
                                        lambda: {"seed": 0, "eps": 1e-6, "tau": 0.5}, ()),
    "autograd_check": (hard_negatives.autograd_check, lambda: {"seed": 0, "tau": 0.5}, ()),
    "first_batch": (hard_negatives.first_batch, lambda: {"hard_negatives": True, "seed": 0, "batch": 4, "dim": 4}, ()),
    "train_bi_encoder": (hard_negatives.train_bi_encoder, lambda: {"hard_negatives": False, "seed": 0, "steps": 2,
                                                                   "batch": 4, "tau": 0.1, "lr": 0.5, "dim": 4}, ()),
    "look_alike_accuracy": (hard_negatives.look_alike_accuracy, lambda: {"model": _bi_encoder(),
                                                                         "topics": ("password",)}, ()),
    "topic_accuracy": (hard_negatives.topic_accuracy, lambda: {"model": _bi_encoder(),
                                                               "topics": ("password", "monitor")}, ()),
    "seed_sweep": (hard_negatives.seed_sweep, lambda: {"seeds": [0], "steps": 2, "batch": 4, "dim": 4}, ()),
    # help_articles
    "help_articles": (help_articles.help_articles, lambda: {}, ()),
    "help_questions": (help_articles.help_questions, lambda: {"products": ["router"], "variants": (1, 2)}, ()),
    "search_articles": (help_articles.search_articles, lambda: {}, ()),
    # infonce
    "log_softmax_rows": (infonce.log_softmax_rows, lambda: {"Z": S / 0.1}, ()),
    "info_nce_rows": (infonce.info_nce_rows, lambda: {"S": S, "tau": 0.1}, ()),
    "info_nce": (infonce.info_nce, lambda: {"S": S, "tau": 0.1}, ()),
    "clip_loss": (infonce.clip_loss, lambda: {"S": S, "tau": 0.1}, ()),
    "positive_share": (infonce.positive_share, lambda: {"pos": 0.8, "negs": [0.6, 0.5], "tau": 0.05}, ()),
    "info_nce_torch": (infonce.info_nce_torch, lambda: {"queries": _unit(4, 6), "docs": _unit(4, 6, 1), "tau": 0.05,
                                                        "normalize": True}, ()),
    "false_negative_mask": (infonce.false_negative_mask, lambda: {"S": S, "margin": 0.1, "guide": S}, ()),
    "info_nce_masked_rows": (infonce.info_nce_masked_rows, lambda: {"S": S, "tau": 0.1, "margin": 0.1}, ()),
    "info_nce_masked": (infonce.info_nce_masked, lambda: {"S": S, "tau": 0.1, "margin": 0.1}, ()),
    "info_nce_masked_torch": (infonce.info_nce_masked_torch, lambda: {"queries": _unit(4, 6), "docs": _unit(4, 6, 1),
                                                                      "tau": 0.05, "margin": 0.1}, ()),
    # lookalikes
    "topic": (lookalikes.topic, lambda: {"key": "password"}, ()),
    "questions": (lookalikes.questions, lambda: {"key": "password"}, ()),
    "steps": (lookalikes.steps, lambda: {"key": "password"}, ()),
    "look_alike": (lookalikes.look_alike, lambda: {"key": "password"}, ()),
    "triples": (lookalikes.triples, lambda: {"keys": ("subscription", "account")}, ()),
    "exam_pool": (lookalikes.exam_pool, lambda: {"keys": ("password", "card")}, ()),
    "split_of": (lookalikes.split_of, lambda: {"key": "password"}, ()),
    "retrieval_rows": (lookalikes.retrieval_rows, lambda: {}, ()),
    # margin_toy
    "pull": (margin_toy.pull, lambda: {"a": [0.0, 0.0], "b": [1.0, 1.0], "rate": 0.1}, ()),
    "push": (margin_toy.push, lambda: {"a": [0.0, 0.0], "b": [0.3, 0.4], "rate": 0.1, "margin": 1.0}, ()),
    "margin_toy": (margin_toy.margin_toy, lambda: {"steps": 2, "rate": 0.1, "margin": 1.0, "negatives": True}, ()),
    "pair_distances": (margin_toy.pair_distances, lambda: {"positions": {w: np.array(p) for w, p in
                                                                        margin_toy.START.items()}}, ()),
    # matryoshka
    "cut": (matryoshka.cut, lambda: {"vectors": _unit(6, 8), "m": 4}, ()),
    "matryoshka_loss": (matryoshka.matryoshka_loss, lambda: {"queries": _unit(6, 8), "docs": _unit(6, 8, 1),
                                                             "dims": [2, 8], "tau": 0.05, "weights": [1.0, 0.5]}, ()),
    "reciprocal_ranks": (matryoshka.reciprocal_ranks, lambda: {"scores": torch.tensor(S), "right": [0, 1, 2], "k": 2},
                         ()),
    "bootstrap_interval": (matryoshka.bootstrap_interval, lambda: {"values": [0.1, 0.5, 0.3, 0.9], "level": 0.9,
                                                                  "n": 50, "seed": 3}, ()),
    "quantize_int8": (matryoshka.quantize_int8, lambda: {"vectors": _unit(6, 8), "scale": 0.5}, ()),
    "binarize": (matryoshka.binarize, lambda: {"vectors": _unit(6, 8)}, ()),
    "matching_bits": (matryoshka.matching_bits, lambda: {"q_bits": matryoshka.binarize(_unit(2, 8)),
                                                         "d_bits": matryoshka.binarize(_unit(5, 8, 1))}, ()),
    "spherical_kmeans": (matryoshka.spherical_kmeans, lambda: {"vectors": _unit(12, 8), "k": 3, "iters": 2, "seed": 1},
                         ()),
    "ivf_search": (matryoshka.ivf_search, lambda: {"query": _unit(1, 8)[0], "d_vecs": _unit(12, 8),
                                                   "centroids": _centroids()[0], "assign": _centroids()[1],
                                                   "probes": 2}, ()),
    # mining
    "product_of": (mining.product_of, lambda: {"card_id": "aurora-reset"}, ()),
    "mine_by_scores": (mining.mine_by_scores, lambda: {"scores": np.random.default_rng(0).random(
        (len(mining.PAIRS), len(mining.CARDS))), "pairs": mining.PAIRS, "card_ids": list(mining.CARDS),
        "num_negatives": 2}, ()),
    "embedding_scores": (mining.embedding_scores, lambda: {"model": Untouchable(), "questions": ["my router"]},
                         ("model",)),
    "mine_with_model": (mining.mine_with_model, lambda: {"model": Untouchable(), "num_negatives": 2, "seed": 0},
                        ("model",)),
    "row_loss": (mining.row_loss, lambda: {"scores": [0.9, 0.5, 0.4], "tau": 0.05}, ()),
    "dedupe_pairs": (mining.dedupe_pairs, lambda: {"pairs": mining.PAIRS}, ()),
    "shuffled_batches": (mining.shuffled_batches, lambda: {"n": 10, "batch_size": 4, "seed": 0}, ()),
    "no_duplicate_batches": (mining.no_duplicate_batches, lambda: {"batch_size": 4, "seed": 0}, ()),
    "repeated_answer_batches": (mining.repeated_answer_batches, lambda: {"batches": [[0, 1], [2, 3]]}, ()),
    "same_batch_chance": (mining.same_batch_chance, lambda: {"n": 10, "batch_size": 4}, ()),
    # pooling
    "mean_pool": (pooling.mean_pool, lambda: {"token_embeddings": TOKENS, "attention_mask": MASK}, ()),
    "cls_pool": (pooling.cls_pool, lambda: {"token_embeddings": TOKENS, "attention_mask": MASK}, ()),
    "last_token_pool": (pooling.last_token_pool, lambda: {"token_embeddings": TOKENS, "attention_mask": MASK}, ()),
    "pooling_cosines": (pooling.pooling_cosines, lambda: {"token_embeddings": TOKENS, "attention_mask": MASK}, ()),
    # rerank
    "fill_rule": (rerank.fill_rule, lambda: {"template": "Can I {a}?", "rule": rerank.RULES_TRAIN[0]}, ()),
    "labelled_pairs": (rerank.labelled_pairs, lambda: {"rules": rerank.RULES_TRAIN[:2], "q_templates": rerank.Q_SEEN,
                                                       "yes_templates": rerank.YES_SEEN,
                                                       "no_templates": rerank.NO_SEEN}, ()),
    "test_triples": (rerank.test_triples, lambda: {"rules": rerank.RULES_TRAIN[:2], "q_templates": rerank.Q_SEEN,
                                                   "yes_templates": rerank.YES_SEEN, "no_templates": rerank.NO_SEEN},
                     ()),
    "collection": (rerank.collection, lambda: {}, ()),
    "train_cross_encoder": (rerank.train_cross_encoder, lambda: {"rows": [("q", "yes", 1), ("q", "no", 0)],
                                                                 "base_model": str(EMPTY), "seed": 0}, ()),
    "shortlist": (rerank.shortlist, lambda: {"query_vec": _unit(1, 8)[0], "doc_vecs": _unit(6, 8), "k": 3}, ()),
    "rerank": (rerank.rerank, lambda: {"candidates": [3, 1, 2], "scores": [0.1, 0.9, 0.5]}, ()),
    "retrieve_then_rerank": (rerank.retrieve_then_rerank, lambda: {"query_vec": _unit(1, 8)[0],
                                                                   "doc_vecs": _unit(6, 8), "k": 3,
                                                                   "score": lambda ids: [float(i) for i in ids]}, ()),
    "binary_cross_entropy": (rerank.binary_cross_entropy, lambda: {"probabilities": [0.9, 0.2], "labels": [1, 0]},
                             ()),
    # shares
    "token_shares": (shares.token_shares, lambda: {"token_embeddings": TOKENS, "attention_mask": MASK}, ()),
    "pair_shares": (shares.pair_shares, lambda: {"token_embeddings": TOKENS, "attention_mask": MASK}, ()),
    "text_shares": (shares.text_shares, lambda: {"model": Untouchable(), "text_a": "reset", "text_b": "password"},
                    ("model",)),
    # temperature
    "positive_loss_gradient": (temperature.positive_loss_gradient, lambda: {"pos": 0.8, "negs": [0.6, 0.5],
                                                                            "tau": 0.05}, ()),
    "optimizer_step": (temperature.optimizer_step,  # a step of the caller's optimizer: only the valid call
                       lambda: {"optimizer": torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1), "lr": 0.1},
                       ("optimizer", "lr")),
    "make_toy_pairs": (temperature.make_toy_pairs, lambda: {"n": 8, "seed": 0, "latent": 4, "dim": 6, "noise": 2.5},
                       ()),
    "train_at_temperature": (temperature.train_at_temperature, lambda: {"tau": 0.1, "seed": 0, "steps": 2,
                                                                        "batch": 4, "lr": 0.5, "heldout": 20}, ()),
    "train_at_temperatures": (temperature.train_at_temperatures, lambda: {"taus": [0.1], "seeds": [0], "steps": 2,
                                                                          "batch": 4, "heldout": 20}, ()),
}

#: Calls whose valid form would load or train a real model: only values that must be refused are
#: tried (the refusal comes before any model is loaded).
REFUSALS_ONLY = {"train_cross_encoder", "embed_captions", "embedding_scores", "mine_with_model", "text_shares"}
#: Where None stands for a default (an optional argument) or infinity is a documented value.
VALID = {("train_adapter", "L"): [None], ("train_adapter_torch", "L"): [None], ("false_negative_mask", "guide"): [None],
         ("matryoshka_loss", "weights"): [None], ("cls_pool", "attention_mask"): [None],
         ("train_image_tower", "batch"): [None], ("mine_with_model", "seed"): [None],
         ("push", "margin"): [float("inf")], ("margin_toy", "margin"): [float("inf")]}

#: Public classes that are results, made by the lessons' functions (fields, no arguments to check).
RESULTS = {"ToyWorld", "ClipToy", "DigitSplit", "DigitsReport", "Topic", "TemperatureRun",
           "BiEncoder"}  # a model: checked where it is used (look_alike_accuracy's model.W ...)


def _public() -> dict[str, object]:
    found = {}
    for info in pkgutil.iter_modules(labs.lessons.__path__):
        module = importlib.import_module(f"labs.lessons.{info.name}")
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                found[name] = obj
    return found


def test_every_public_name_is_covered():
    public = _public()
    assert len(public) > 90
    assert sorted(set(public) - set(CASES) - RESULTS) == []
    assert sorted(set(CASES) - set(public)) == []
    for name, (fn, _, _) in CASES.items():
        assert fn is public[name], name


# ---- odd values ---------------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")
#: No number at all: refused wherever a number is meant.
NOT_NUMBERS = [NAN, INF, -INF, True, None, "0.5", torch.tensor([0.5, 0.1]), np.zeros((2, 2)), torch.tensor(NAN),
               np.float64(NAN)]
#: Numbers a reader may pass: a result or a refusal naming the argument.
ODD_NUMBERS = [-1, 0, -0.0, 1e-320, 10**30, 10**400, 1e30, 2.0, torch.tensor(0.5), np.float32(0.5), np.int64(3),
               torch.tensor(3, dtype=torch.int32)]
#: Not a table of numbers.
NOT_TABLES = [None, "0.5", True, np.full((3, 3), NAN), {"a": 1}]
ODD_TABLES = [np.zeros((0,)), np.zeros((2, 2, 2, 2)), 3.0, np.zeros((3, 3)), np.ones((1, 1)), torch.zeros(2, 2), np.full((3, 3), INF), [[1.0], [1.0, 2.0]]]
NOT_TEXTS = [None, 3, True, b"bytes", ["a", "b"]]
ODD_TEXTS = ["", " ", "\u200b", "e\u0301", "x" * 10_000]
NOT_LISTS = [None, True, "text"]
ODD_LISTS = [3, [], [None], [NAN], [""], [[1, 2]]]


def _kind(value) -> str:
    if isinstance(value, bool):
        return "flag"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (np.ndarray, torch.Tensor)):
        return "table"
    if isinstance(value, (list, tuple, range)):
        return "list"
    if callable(value) and not isinstance(value, (type, Untouchable, torch.nn.Module)):
        return "function"
    return "object"


def _odd_values(kind: str) -> tuple[list, list]:
    """(values that must be refused, values that may give a result) for an argument of ``kind``."""
    return {
        "flag": ([None, "yes", 2, NAN], [np.bool_(True), 0, 1]),
        "number": (NOT_NUMBERS, ODD_NUMBERS),
        "text": (NOT_TEXTS, ODD_TEXTS),
        "table": (NOT_TABLES, ODD_TABLES),
        "list": (NOT_LISTS, ODD_LISTS),
        "function": ([None, 3, "f"], []),
        "object": ([None, 3, "text"], []),
    }[kind]


def _calls() -> list[tuple[str, str]]:
    out = []
    for name, (fn, base, left) in CASES.items():
        arguments = [a for a in base() if a not in left]
        out += [(name, a) for a in arguments] or [(name, "")]
    return out


CALLS = _calls()
SECONDS = 60  # a call longer than this is a hang (the valid calls take seconds at most, imports done)


class Hang(Exception):
    pass


def _timed(fn, kwargs):
    def alarm(signum, frame):
        raise Hang(f"no answer within {SECONDS} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(SECONDS)
    try:
        return fn(**kwargs)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."


@pytest.mark.parametrize("name, argument", CALLS, ids=[f"{n}-{a}" if a else n for n, a in CALLS])
def test_an_odd_argument_gets_a_result_or_one_line_naming_it(name, argument):
    fn, base, _ = CASES[name]
    if not argument:  # no arguments: the call itself works
        _timed(fn, base())
        return
    valid = base()
    if name not in REFUSALS_ONLY:  # the valid call works (and imports what it needs, untimed)
        fn(**valid)
    refused, odd = _odd_values(_kind(valid[argument]))
    allowed = VALID.get((name, argument), [])
    refused = [v for v in refused if not any(v is a or (type(v) is float and type(a) is float and v == a)
                                             for a in allowed)]
    others = [a for a in valid if a != argument]
    problems = []
    for must_refuse, values in ((True, refused), (False, [] if name in REFUSALS_ONLY else odd)):
        for value in values:
            kwargs = base()
            kwargs[argument] = value
            try:
                result = _timed(fn, kwargs)
            except ModelUsed as err:
                if must_refuse:
                    problems.append(f"{_shown(value)}: accepted ({err})")
                continue
            except (ValueError, TypeError) as err:
                text = str(err)
                named = argument in text or (not must_refuse and any(a in text for a in others))  # a mismatch
                if "\n" in text or not named:
                    problems.append(f"{_shown(value)}: {type(err).__name__} not naming {argument}: {text[:200]}")
                continue
            except Exception as err:  # noqa: BLE001 - the finding
                problems.append(f"{_shown(value)}: {type(err).__name__}: {str(err)[:200]}")
                continue
            if must_refuse:
                problems.append(f"{_shown(value)}: accepted (returned {_shown(result)})")
            elif has_nan(result):
                problems.append(f"{_shown(value)}: a result with NaN")
    assert problems == [], "\n".join(problems)
