"""Inside the score and inside the batch, in headless Chromium, against labs on the same inputs.

The page is `live_page.FIXTURE`, served as test_live.py serves it (every request off 127.0.0.1
refused). What holds:

- book/live/scores.mjs, imported in the page: its token shares of a cosine sum to the page's
  cosine (within SUM) and equal labs' `token_shares` of the token vectors that onnxruntime in
  Python computes from the same 8-bit file the page loads (within ONNX); its batch arithmetic (the
  table's losses, gradient shares and masks, the mining) equals labs' `info_nce`,
  `false_negative_mask` / `info_nce_masked`, torch's autograd and sentence-transformers'
  `mine_hard_negatives` (through labs' `mine_with_model`) on the same table, within EXACT;
- "why this score" on the search and compare demos: each shaded token carries its share in
  ``data-share``, the shares sum to the cosine shown, on lesson 1's look-alike the question's
  words that carry the password policy above the steps are listed, both models on the compare demo;
- the batch lab: what it shows is scores.mjs's arithmetic of its own table (so labs'), a mask
  changes a row's loss, and every bad input gets one line: a batch of one, the same question
  twice, a window that holds nothing, a margin that leaves a row no negative;
- every reader: keyboard, names, aria-live, axe-core at 1280 and 390 px, nothing cut at 390 px.

    pytest tests/book/test_live_scores.py --html-root _build/html      (make checked-book runs it)
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.book.live_helpers import WAIT_MS, ask, demo, state

SUM = 1e-6  # the shares' sum against the page's cosine (float64 sums of float32 vectors)
ONNX = 1e-5  # the page's shares against onnxruntime in Python on the same 8-bit file
EXACT = 1e-9  # float64 arithmetic, page against labs
MODEL_DIR = "live/models/minilm"

IMPORT = "async ([url, fn, args]) => { const m = await import(url); return JSON.parse(JSON.stringify(m[fn](...args), " \
         "(k, v) => (ArrayBuffer.isView(v) ? Array.from(v) : v))); }"


def call(session, live_url, fn: str, *args):
    """scores.mjs's ``fn(*args)`` in the page; typed arrays come back as lists."""
    return session.page.evaluate(IMPORT, [f"{live_url}/live/scores.mjs", fn, list(args)])


def _table(seed: int, B: int = 4, M: int = 7) -> np.ndarray:
    S = np.random.default_rng(seed).uniform(-0.3, 0.9, size=(B, M))
    S[1, 4] = S[1, 1]  # an exact copy of row 1's answer: same score
    S[2, 0] = S[2, 2] + 0.2  # a negative well above the positive
    return S


# ---- the batch's arithmetic against labs ------------------------------------------------------


def _masks(S: np.ndarray, G: np.ndarray) -> dict[str, np.ndarray]:
    """The rules through labs' false_negative_mask (the relative rule with a per-row scale folded into the guide)."""
    from labs.lessons.infonce import false_negative_mask

    rows = np.arange(S.shape[0])
    pos = G[rows, rows][:, None]
    relative = (G - pos) / np.abs(pos)  # G_ij > G_ii - |G_ii| m  <=>  (G_ij - G_ii) / |G_ii| > -m
    return {"qwen3": false_negative_mask(S, 0.1), "gistAbsolute": false_negative_mask(S, -0.03, guide=G),
            "gistRelative": false_negative_mask(S, -0.05, guide=relative), "none": np.zeros_like(S, dtype=bool)}


def _autograd_rows(S: np.ndarray, tau: float, mask: np.ndarray) -> np.ndarray:
    """d(row i's loss)/dS, from labs' masked loss on embeddings by torch's autograd (queries = S, docs = I)."""
    from labs.lessons.infonce import info_nce_masked_torch

    q = torch.tensor(S, requires_grad=True)
    docs = torch.eye(S.shape[1], dtype=torch.float64)
    loss = info_nce_masked_torch(q, docs, tau, 0.5, guide=torch.tensor(mask, dtype=torch.float64), normalize=False)
    loss.backward()
    return q.grad.numpy() * S.shape[0]  # the mean's gradient, times B: each row's own


@pytest.mark.parametrize("seed, tau", [(0, 0.05), (1, 0.5), (2, 0.02)])
def test_batch_arithmetic_is_labs(session, live_url, seed, tau):
    from labs.lessons.infonce import info_nce, info_nce_masked, info_nce_masked_rows, info_nce_rows

    S = _table(seed)
    G = np.clip(S + np.random.default_rng(seed + 10).normal(0, 0.05, S.shape), -1, 1)  # a guide model's scores
    G[G[:, :1].ravel() == 0, 0] = 0.01
    page = {"qwen3": call(session, live_url, "qwen3Mask", S.tolist()),
            "gistAbsolute": call(session, live_url, "gistAbsoluteMask", G.tolist(), 0.03),
            "gistRelative": call(session, live_url, "gistRelativeMask", G.tolist(), 0.05),
            "none": call(session, live_url, "marginMask", S.tolist(), 10.0)}
    want = _masks(S, G)
    assert want["qwen3"][2, 0] and not want["qwen3"][1, 4]  # the tables exercise the rules
    for name, mask in want.items():
        assert np.array_equal(np.array(page[name]), mask), name
        rows = call(session, live_url, "infoNceRows", S.tolist(), tau, mask.tolist())
        labs_rows = info_nce_masked_rows(S, tau, 0.5, guide=mask.astype(float))
        assert np.abs(np.array(rows) - labs_rows).max() < EXACT, name
        mean = call(session, live_url, "infoNce", S.tolist(), tau, mask.tolist())
        assert abs(mean - info_nce_masked(S, tau, 0.5, guide=mask.astype(float))) < EXACT, name
        grads = np.array(call(session, live_url, "rowGradients", S.tolist(), tau, mask.tolist()))
        assert np.abs(grads - _autograd_rows(S, tau, mask)).max() < EXACT * max(1, 1 / tau), name
        shares = np.array(call(session, live_url, "gradientShares", S.tolist(), tau, mask.tolist()))
        for i, row in enumerate(grads):
            push = np.delete(row, i).sum()
            want_row = np.where(np.arange(len(row)) == i, 0.0, row / push if push else 0.0)
            assert np.abs(shares[i] - want_row).max() < EXACT, (name, i)
    plain = call(session, live_url, "infoNceRows", S.tolist(), tau, None)
    assert np.abs(np.array(plain) - info_nce_rows(S, tau)).max() < EXACT
    assert abs(call(session, live_url, "infoNce", S.tolist(), tau, None) - info_nce(S, tau)) < EXACT
    # the Qwen3 rule is labs' mask at margin 0.1 through the masked loss too
    assert abs(call(session, live_url, "infoNce", S.tolist(), tau, want["qwen3"].tolist())
               - info_nce_masked(S, tau, 0.1)) < EXACT


def test_a_row_with_no_negative_left_is_out_of_the_loss(session, live_url):
    """A margin that masks every negative of a row: labs counts that row 0, with no gradient; so does the page."""
    from labs.lessons.infonce import false_negative_mask, info_nce_masked_rows

    S = np.array([[0.2, 0.5, 0.6], [0.1, 0.7, 0.3]])
    mask = false_negative_mask(S, 0.0)
    assert mask[0, 1:].all() and not mask[1].any()
    rows = call(session, live_url, "infoNceRows", S.tolist(), 0.05, mask.tolist())
    assert rows[0] == 0 and abs(rows[1] - info_nce_masked_rows(S, 0.05, 0.0)[1]) < EXACT
    assert call(session, live_url, "rowsWithoutNegatives", mask.tolist()) == [0]
    shares = call(session, live_url, "gradientShares", S.tolist(), 0.05, mask.tolist())
    assert shares[0] == [0, 0, 0]


def test_duplicate_texts_and_the_similarity_table(session, live_url):
    texts = ["reset the router", "update it", "reset the router", "warranty", "update it"]
    got = np.array(call(session, live_url, "duplicateMask", texts, 3))
    want = np.array([[j != i and texts[j] == texts[i] for j in range(5)] for i in range(3)])
    assert np.array_equal(got, want) and got[0, 2] and got[2, 0] and got[1, 4]
    rng = np.random.default_rng(3)
    Q, P = rng.normal(size=(3, 8)), rng.normal(size=(5, 8))
    assert np.abs(np.array(call(session, live_url, "similarityTable", Q.tolist(), P.tolist())) - Q @ P.T).max() < EXACT


# ---- mining against sentence-transformers ----------------------------------------------------


def _library_mining(Q: np.ndarray, C: np.ndarray, pairs, cards: dict, **options) -> dict:
    """labs' mine_with_model (sentence-transformers' mine_hard_negatives) on these very vectors: they
    go into the library's embedding cache, so that it scores Q @ C.T and nothing else."""
    import hashlib
    import tempfile
    from pathlib import Path

    from labs.lessons.mining import mine_with_model
    from labs.retrieval.models import load_minilm

    model = load_minilm()
    name = model.model_card_data.base_model or ""
    questions = list(dict.fromkeys(q for q, _ in pairs))
    corpus = list(cards.values())
    with tempfile.TemporaryDirectory() as folder:
        for kind, texts, vectors in (("query", questions, Q), ("corpus", corpus, C)):
            key = hashlib.sha256(repr((name, None, None, texts)).encode()).hexdigest()
            np.save(Path(folder) / f"{kind}_embeddings_{key}.npy", vectors)
        before = sorted(p.name for p in Path(folder).iterdir())
        out = mine_with_model(model, pairs, cards, num_negatives=1, cache_folder=folder, **options)
        assert sorted(p.name for p in Path(folder).iterdir()) == before, "the library computed its own vectors"
    return out


@pytest.fixture(scope="module")
def mining_case():
    """Twelve questions over 40 unit vectors, each question's answer among the top few."""
    rng = np.random.default_rng(7)
    C = rng.normal(size=(40, 16))
    C /= np.linalg.norm(C, axis=1, keepdims=True)
    answers = list(range(0, 24, 2))
    Q = C[answers] * 0.6 + rng.normal(size=(12, 16)) * 0.35
    Q[3] = -Q[3]  # a question whose answer scores below zero: the relative margin's sign
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    cards = {f"card-{j}": f"text of card {j}" for j in range(40)}
    pairs = [(f"question {i}", f"card-{a}") for i, a in enumerate(answers)]
    return Q, C, answers, cards, pairs


@pytest.mark.parametrize("options", [
    {"range_min": 0, "range_max": 10},
    {"range_min": 2, "range_max": 10},
    {"range_min": 0, "range_max": 3, "relative_margin": 0.05},
    {"range_min": 1, "range_max": 6, "relative_margin": 0.2},
    {"range_min": 0, "range_max": 39, "relative_margin": 0.5},
])
def test_mining_is_the_library_mining(session, live_url, mining_case, options):
    Q, C, answers, cards, pairs = mining_case
    library = _library_mining(Q, C, pairs, cards, **options)
    S = Q @ C.T
    for i, (question, _) in enumerate(pairs):
        got = call(session, live_url, "mine", S[i].tolist(), answers[i],
                   {"rangeMin": options["range_min"], "rangeMax": options["range_max"],
                    "margin": options.get("relative_margin")})
        want = library.get(question)
        if want is None:
            assert got["mined"] is None, (options, i)
        else:
            assert f"card-{got['mined']}" == want["negatives"][0], (options, i)
            assert abs(S[i, got["mined"]] - want["scores"][1]) < 1e-6  # the library scores in float32
        d = got["dropped"]
        considered = len([j for j in range(40) if j != answers[i]])
        assert d["outside"] + d["margin"] + d["skipped"] <= considered


def test_window_problems_are_one_line(session, live_url):
    assert call(session, live_url, "windowProblem", 0, 10, 85) is None
    said = call(session, live_url, "windowProblem", 5, 5, 85)
    assert "holds nothing" in said and "range_min (5)" in said
    assert "range_max" in call(session, live_url, "windowProblem", 0, 0, 85)
    assert "besides the answer" in call(session, live_url, "windowProblem", 90, 100, 85)


# ---- token shares against onnxruntime in Python ---------------------------------------------


@pytest.fixture(scope="module")
def onnx_encoder(book):
    from tools.live_model import OnnxEncoder

    folder = book / MODEL_DIR
    return OnnxEncoder(folder / "onnx" / "model_quantized.onnx", folder, 256)


def python_shares(encoder, a: str, b: str) -> dict:
    """labs' token_shares of the token vectors onnxruntime gives each text alone (as the page runs them)."""
    from labs.lessons.shares import token_shares

    grids = [encoder.grid([t])[0][0] for t in (a, b)]
    T = max(len(g) for g in grids)
    grid = np.zeros((2, T, grids[0].shape[1]))
    mask = torch.zeros(2, T, dtype=torch.int64)
    for k, g in enumerate(grids):
        grid[k, :len(g)] = g
        mask[k, :len(g)] = 1
    got = token_shares(torch.tensor(grid), mask)
    return {"cosine": got["cosine"], "a": got["a"][: len(grids[0])].numpy(), "b": got["b"][: len(grids[1])].numpy()}


PAGE_SHARES = """async ([root, a, b]) => {
    const model = await import(root + '/live/model.mjs');
    const scores = await import(root + '/live/scores.mjs');
    const ctx = await model.prepare({models: ['minilm'], sets: []});
    const ga = await ctx.models.minilm.grid([a]), gb = await ctx.models.minilm.grid([b]);
    const s = scores.tokenShares(ga, gb);
    return {cosine: s.cosine, a: Array.from(s.a), b: Array.from(s.b), tokens: [ga.tokens[0], gb.tokens[0]]};
}"""


@pytest.mark.parametrize("pair", [
    ("how do I reset my password?", "When is my password reset? Passwords are reset every ninety days; a new one "
                                    "needs twelve characters."),
    ("my headphones won't charge 🎧", "If the headphones does not charge, try another cable and clean the charging port "
                                     "before asking for a repair."),
    ("如何重置我的路由器", "To restore the factory settings of the router, hold the reset button for ten seconds."),
])
def test_token_shares_are_onnxruntime_shares(session, live_url, onnx_encoder, pair):
    got = session.page.evaluate(PAGE_SHARES, [live_url, *pair])
    assert abs(sum(got["a"]) - got["cosine"]) < SUM and abs(sum(got["b"]) - got["cosine"]) < SUM
    want = python_shares(onnx_encoder, *pair)
    assert len(got["a"]) == len(want["a"]) and len(got["b"]) == len(want["b"])
    assert np.abs(np.array(got["a"]) - want["a"]).max() < ONNX
    assert np.abs(np.array(got["b"]) - want["b"]).max() < ONNX
    assert abs(got["cosine"] - want["cosine"]) < ONNX
    ids = onnx_encoder.tokenizer(pair[0])["input_ids"]
    assert got["tokens"][0] == onnx_encoder.tokenizer.convert_ids_to_tokens(ids)


def test_pair_and_gap_shares_add_up(session, live_url):
    rng = np.random.default_rng(4)
    texts = [{"grid": rng.normal(size=T * 6).tolist(), "T": T, "D": 6} for T in (5, 7, 4)]
    pairs = np.array(call(session, live_url, "pairShares", texts[0], texts[1]))
    split = call(session, live_url, "tokenShares", texts[0], texts[1])
    assert abs(pairs.sum() - split["cosine"]) < EXACT
    assert np.abs(pairs.sum(axis=1) - split["a"]).max() < EXACT and np.abs(pairs.sum(axis=0) - split["b"]).max() < EXACT
    gap = call(session, live_url, "gapShares", texts[0], texts[1], texts[2])
    other = call(session, live_url, "tokenShares", texts[0], texts[2])
    assert abs(gap["gap"] - (split["cosine"] - other["cosine"])) < EXACT
    assert abs(sum(gap["shares"]) - gap["gap"]) < EXACT
