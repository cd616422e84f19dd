"""labs.lessons.matryoshka: the Matryoshka loss against sentence-transformers, per-question ranks and
their bootstrap interval, quantisation and the clustered (IVF) search."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from labs.lessons.infonce import info_nce_torch
from labs.lessons.matryoshka import (
    binarize, bootstrap_interval, cut, ivf_search, matching_bits, matryoshka_loss, quantize_int8,
    reciprocal_ranks, spherical_kmeans,
)
from labs.retrieval.metrics import mrr_at_k, rank_documents


def _unit(n: int, d: int, seed: int) -> torch.Tensor:
    x = torch.randn(n, d, generator=torch.Generator().manual_seed(seed))
    return F.normalize(x, dim=-1)


def test_cut_keeps_the_first_numbers_at_unit_length():
    v = torch.tensor([[3.0, 4.0, 12.0]])
    assert torch.allclose(cut(v, 2), torch.tensor([[0.6, 0.8]]))
    assert torch.allclose(cut(v, 3).norm(dim=-1), torch.ones(1))
    for m in (0, 4, 1.5, True):
        with pytest.raises(ValueError, match="m must be"):
            cut(v, m)


def test_matryoshka_loss_is_the_sum_of_infonce_on_cut_vectors():
    q, d = _unit(8, 16, 0), _unit(8, 16, 1)
    total = info_nce_torch(cut(q, 16), cut(d, 16), 0.05) + info_nce_torch(cut(q, 4), cut(d, 4), 0.05)
    assert matryoshka_loss(q, d, [16, 4]).item() == pytest.approx(total.item(), rel=1e-6)
    weighted = matryoshka_loss(q, d, [16, 4], weights=[1.0, 0.0]).item()
    assert weighted == pytest.approx(info_nce_torch(q, d, 0.05).item(), rel=1e-6)
    with pytest.raises(ValueError, match="empty"):
        matryoshka_loss(q, d, [])
    with pytest.raises(ValueError, match="length"):
        matryoshka_loss(q, d, [16, 4], weights=[1.0])


def test_matryoshka_loss_matches_sentence_transformers(minilm):
    from sentence_transformers.sentence_transformer.losses import MatryoshkaLoss, MultipleNegativesRankingLoss

    questions = ["how do I reset my router", "my kettle makes a noise", "return the printer"]
    answers = ["Hold the reset button.", "Tighten the back panel screws.", "Send it back within thirty days."]
    features = [minilm.preprocess(questions), minilm.preprocess(answers)]
    dims = [384, 128, 32]
    library = MatryoshkaLoss(minilm, MultipleNegativesRankingLoss(minilm), matryoshka_dims=dims)
    with torch.no_grad():
        expected = library(features, None).item()
        q, d = (minilm(f)["sentence_embedding"] for f in features)
        assert matryoshka_loss(q, d, dims, tau=0.05).item() == pytest.approx(expected, rel=1e-5)


def test_reciprocal_ranks_average_to_the_tool_s_mrr():
    q, d = _unit(30, 8, 2), _unit(40, 8, 3)
    right = list(np.random.default_rng(0).integers(0, 40, size=30))
    rr = reciprocal_ranks(q @ d.T, right, k=10)
    ids, qids = [f"d{i}" for i in range(40)], [f"q{i}" for i in range(30)]
    ranked = rank_documents((q @ d.T).numpy(), ids, qids, k=10)
    assert rr.mean() == pytest.approx(mrr_at_k(ranked, {qid: {ids[r]} for qid, r in zip(qids, right)}, k=10))
    assert set(np.round(1 / rr[rr > 0]).astype(int)) <= set(range(1, 11))
    with pytest.raises(ValueError, match="right column"):
        reciprocal_ranks(q @ d.T, right[:-1])
    bits_q, bits_d = binarize(q), binarize(d)  # matching bits rank like dot products of +-1 vectors
    np.testing.assert_array_equal(reciprocal_ranks(matching_bits(bits_q, bits_d), right),
                                  reciprocal_ranks((2 * bits_q - 1) @ (2 * bits_d - 1).T, right))


def test_bootstrap_interval_brackets_the_mean_and_narrows_with_more_questions():
    rng = np.random.default_rng(1)
    few, many = rng.random(20), rng.random(2000)
    lo, hi = bootstrap_interval(few)
    assert lo < few.mean() < hi
    lo2, hi2 = bootstrap_interval(many)
    assert hi2 - lo2 < (hi - lo) / 5
    assert bootstrap_interval(few) == bootstrap_interval(few)  # seeded
    with pytest.raises(ValueError, match="at least two"):
        bootstrap_interval([0.5])
    with pytest.raises(ValueError, match="level"):
        bootstrap_interval(few, level=1.5)


def test_quantisation_keeps_the_ranking_close():
    q, d = _unit(50, 64, 4), _unit(200, 64, 5)
    scale = float(d.abs().max())
    qi, di = quantize_int8(q, scale), quantize_int8(d, scale)
    assert qi.abs().max() <= 127 and torch.equal(qi, qi.round())
    exact, approx = (q @ d.T).argmax(1), (qi @ di.T).argmax(1)
    assert (exact == approx).float().mean() > 0.9
    bits_q, bits_d = binarize(q), binarize(d)
    assert set(bits_q.unique().tolist()) <= {0.0, 1.0}
    hamming = (bits_q[:, None, :] != bits_d[None, :, :]).sum(-1)
    assert torch.equal(matching_bits(bits_q, bits_d), (64 - hamming).float())
    with pytest.raises(ValueError, match="scale"):
        quantize_int8(q, 0)


def test_ivf_search_probing_every_cluster_is_exact_search():
    d = _unit(120, 16, 6)
    centroids, assign = spherical_kmeans(d, 6, seed=0)
    again = spherical_kmeans(d, 6, seed=0)
    assert torch.equal(assign, again[1]) and centroids.shape == (6, 16)
    assert torch.allclose(centroids.norm(dim=1), torch.ones(6))
    scored = []
    for q in _unit(20, 16, 7):
        best, n = ivf_search(q, d, centroids, assign, probes=6)
        assert best == int((d @ q).argmax()) and n == 120
        scored.append(ivf_search(q, d, centroids, assign, probes=1)[1])
    assert max(scored) < 120  # one cluster scores only part of the collection
    with pytest.raises(ValueError, match="probes"):
        ivf_search(q, d, centroids, assign, probes=0)
    with pytest.raises(ValueError, match="k must be"):
        spherical_kmeans(d, 0)
