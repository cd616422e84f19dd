"""Inside the score and inside the batch, in headless Chromium, against labs on the same inputs.

The page is `live_page.FIXTURE`, served as test_live.py serves it (every request off 127.0.0.1
refused). What holds:

- book/live/scores.mjs, imported in the page: its token shares of a cosine sum to the page's
  cosine (within SUM) and equal labs' `token_shares` of the token vectors that onnxruntime in
  Python computes from the same integer-weight file the page loads (within ONNX); its batch arithmetic (the
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

import functools
import json

import numpy as np
import pytest
import torch

from tests.book.live_helpers import PHONE, ask, axe_problems, cut_demos, demo, state, unnamed, until

SUM = 1e-6  # the shares' sum against the page's cosine (float64 sums of float32 vectors)
ONNX = 1e-5  # the page's shares against onnxruntime in Python on the same file
EXACT = 1e-9  # float64 arithmetic, page against labs

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


@functools.cache
def _minilm():
    from labs.retrieval.models import load_minilm

    return load_minilm()


def _library_mining(Q: np.ndarray, C: np.ndarray, pairs, cards: dict, **options) -> dict:
    """labs' mine_with_model (sentence-transformers' mine_hard_negatives) on these very vectors: they
    go into the library's embedding cache, so that it scores Q @ C.T and nothing else."""
    import hashlib
    import tempfile
    from pathlib import Path

    from labs.lessons.mining import mine_with_model

    model = _minilm()
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
def onnx_encoder(book, tmp_path_factory):
    """onnxruntime in Python on the very files the page loads (its manifest's entry, inflated when the
    book sends it gzipped, fed the rows of the book's token table) with the page's tokenizer."""
    import gzip

    from tools.live_model import OnnxEncoder, RowsEncoder, load_table

    live = book / "live"
    entry = json.loads((live / "manifest.json").read_text())["models"]["minilm"]
    model = live / entry["files"]["model"]["path"]
    if model.suffix == ".gz":
        raw = tmp_path_factory.mktemp("onnx") / model.stem
        raw.write_bytes(gzip.decompress(model.read_bytes()))
        model = raw
    tokenizer = (live / entry["files"]["tokenizer"]["path"]).parent
    if "table" not in entry["files"]:
        return OnnxEncoder(model, tokenizer, entry["maxTokens"])
    index = live / entry["files"]["table"]["path"]
    return RowsEncoder(model, tokenizer, entry["maxTokens"], load_table(index), json.loads(index.read_text())["input"])


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


# ---- "why this score" in the search and compare demos ----------------------------------------


def open_why(page, kind: str, article: str, column: int = 0) -> dict:
    """Click "Why this score" on ``article`` in a live ranking and wait for the panel's numbers."""
    box = demo(page, kind)
    row = box.locator(".live-ranking").nth(column).locator(f'li[data-id="{article}"]')
    box.evaluate("d => { d.labsLive.why = null; }")
    row.locator(".live-why").click()
    return until(page, kind, "s.why")["why"]


def shown_shares(panel, nth: int) -> tuple[list[str], list[float]]:
    tokens = panel.locator(".why-tokens").nth(nth).locator(".why-token")
    return tokens.all_inner_texts(), [float(x) for x in tokens.evaluate_all("ts => ts.map(t => t.dataset.share)")]


def test_why_on_the_lookalike(session, live_url, onnx_encoder):
    """Lesson 1's look-alike: the policy's shares, shaded and in data-share, sum to the cosine; they are the
    Python shares; the question's words that carry the policy above the steps are listed."""
    from labs.lessons.help_articles import EXTRA_ARTICLES, SEARCH_EXAMPLES

    page = session.page
    question = SEARCH_EXAMPLES[1][0]
    got = ask(page, "search", chip=1)
    ranked = [r["id"] for r in got["rankings"]["minilm"]]
    assert ranked[:2] == ["account/password-policy", "account/reset-steps"]  # the look-alike wins
    why = open_why(page, "search", "account/password-policy")
    m = why["models"]["minilm"]
    panel = demo(page, "search").locator(".why-panel")
    assert panel.is_visible()
    assert page.evaluate("() => document.activeElement.classList.contains('why-head')")  # focus moved to the panel
    tokens_q, shares_q = shown_shares(panel, 0)
    tokens_d, shares_d = shown_shares(panel, 1)
    assert tokens_q == m["tokensQ"] and tokens_d == m["tokensD"]
    assert shares_q == m["sharesQ"] and shares_d == m["sharesD"]
    assert abs(sum(shares_q) - m["cosine"]) < SUM and abs(sum(shares_d) - m["cosine"]) < SUM
    assert abs(m["cosine"] - m["ranked"]) < ONNX  # the ranking's stored vector came from the same file
    want = python_shares(onnx_encoder, question, EXTRA_ARTICLES["account/password-policy"])
    assert np.abs(np.array(shares_q) - want["a"]).max() < ONNX and np.abs(np.array(shares_d) - want["b"]).max() < ONNX
    # the gap to the steps, split over the question's tokens: "password" and "reset" carry the policy
    other = m["other"]
    assert other["id"] == "account/reset-steps" and other["gap"] > 0
    steps = python_shares(onnx_encoder, question, EXTRA_ARTICLES["account/reset-steps"])
    assert abs(other["gap"] - (want["cosine"] - steps["cosine"])) < 2 * ONNX
    assert np.abs(np.array(other["shares"]) - (want["a"] - steps["a"])).max() < 2 * ONNX
    lead = panel.locator(".why-gap-list .why-word").all_inner_texts()
    top_two = {m["tokensQ"][t] for t in np.argsort(other["shares"])[-2:]}
    assert set(lead[:2]) == top_two and "password" in top_two
    assert "Against account/reset-steps" in panel.locator(".why-gap").inner_text()
    assert "account/password-policy" in panel.locator('[role="status"]').inner_text()
    page.keyboard.press("Escape")  # closes, and gives focus back to the button
    assert panel.is_hidden()
    assert page.evaluate("() => document.activeElement.classList.contains('live-why')")


def test_why_by_keyboard_and_a_new_question_closes_it(session):
    page = session.page
    got = ask(page, "search", chip=0)
    box = demo(page, "search")
    first = got["rankings"]["minilm"][0]["id"]
    button = box.locator(f'li[data-id="{first}"] .live-why')
    assert button.get_attribute("aria-label") == f"Why this score: {first}, {got['rankings']['minilm'][0]['cosine']:.3f}"
    button.focus()
    page.keyboard.press("Enter")
    why = until(page, "search", "s.why")["why"]
    assert why["id"] == first and why["models"]["minilm"]["other"]["rank"] == 2
    ask(page, "search", "my kettle is noisy")
    assert box.locator(".why-panel").is_hidden() and state(page, "search")["why"] is None


def test_why_on_compare_shows_both_models(session):
    """Lesson 7: both models' shares of their own cosine, and how fine-tuning moved the question's shares."""
    page = session.page
    got = ask(page, "compare", chip=0)
    article = got["rankings"]["tuned"][0]["id"]
    why = open_why(page, "compare", article, column=1)
    panel = demo(page, "compare").locator(".why-panel")
    assert set(why["models"]) == {"minilm", "tuned"}
    assert panel.locator(".why-sub").all_inner_texts() == ["Untouched model", "Fine-tuned on the help-desk questions"]
    for k, key in enumerate(("minilm", "tuned")):
        m = why["models"][key]
        tokens_q, shares_q = shown_shares(panel, 2 * k)
        _, shares_d = shown_shares(panel, 2 * k + 1)
        assert shares_q == m["sharesQ"] and shares_d == m["sharesD"]
        assert abs(sum(shares_q) - m["cosine"]) < SUM and abs(sum(shares_d) - m["cosine"]) < SUM
    assert why["models"]["minilm"]["tokensQ"] == why["models"]["tuned"]["tokensQ"]
    moved = panel.locator(".why-moved tbody tr")
    assert moved.count() == len(why["models"]["minilm"]["tokensQ"])
    assert why["models"]["minilm"]["sharesQ"] != why["models"]["tuned"]["sharesQ"]
    panel.locator(".why-close").click()
    assert panel.is_hidden()


# ---- the batch lab ---------------------------------------------------------------------------


def lab(page):
    return demo(page, "batch")


def open_lab(page) -> dict:
    box = lab(page)
    start = box.locator("button", has_text="Open the batch lab")
    if start.is_visible():
        start.click()
    return settled(page, 0)


def settled(page, before: int) -> dict:
    """Wait for the lab to draw past ``before`` and return its state."""
    until(page, "batch", "s.drawn > arg", before)
    page.wait_for_timeout(50)
    return state(page, "batch")


def change(page, act) -> dict:
    """Do ``act()`` to the lab and wait for it to draw again."""
    before = state(page, "batch").get("drawn", 0)
    act()
    return settled(page, before)


def check_lab(got: dict, manifest, book) -> None:
    """The lab's table is its questions' vectors against the articles' stored vectors, and every number it
    shows of it is labs'."""
    from labs.lessons.infonce import false_negative_mask, info_nce_masked, info_nce_masked_rows, info_nce_rows

    b = got["batch"]
    ids = manifest["sets"]["search"]["ids"]
    texts = dict(zip(ids, manifest["sets"]["search"]["texts"]))
    stored = np.fromfile(book / "live" / manifest["sets"]["search"]["vectors"]["minilm"]["path"], dtype="<f4")
    C = stored.reshape(len(ids), -1).astype(np.float64)
    P = C[[ids.index(c["id"]) for c in b["columns"]]]
    S = np.array(b["S"])
    B = len(b["questions"])
    assert S.shape == (B, len(b["columns"])) and [c["id"] for c in b["columns"][:B]] == b["answers"]
    assert np.abs(S - np.array(b["vectors"]) @ P.T).max() < EXACT
    tau, m, r = b["tau"], b["margins"]["gistAbsolute"], b["margins"]["gistRelative"]
    rows = np.arange(B)
    pos = S[rows, rows][:, None]
    col_texts = [texts[c["id"]] for c in b["columns"]]
    want = {"none": np.zeros_like(S, dtype=bool),
            "duplicates": np.array([[j != i and col_texts[j] == col_texts[i] for j in range(S.shape[1])] for i in rows]),
            "gistAbsolute": false_negative_mask(S, -m, guide=S),
            "gistRelative": false_negative_mask(S, -r, guide=(S - pos) / np.abs(pos)),
            "qwen3": false_negative_mask(S, 0.1)}
    for key, mask in want.items():
        rule = b["rules"][key]
        assert np.array_equal(np.array(rule["mask"]), mask), key
        assert np.abs(np.array(rule["rows"]) - info_nce_masked_rows(S, tau, 0.5, guide=mask.astype(float))).max() < EXACT
        assert abs(rule["loss"] - info_nce_masked(S, tau, 0.5, guide=mask.astype(float))) < EXACT
        assert rule["empty"] == [i for i in rows if mask[i, np.arange(S.shape[1]) != i].all()]
    assert np.abs(np.array(b["rules"]["none"]["rows"]) - info_nce_rows(S, tau)).max() < EXACT
    chosen = want[b["selected"]]
    grads = _autograd_rows(S, tau, chosen)
    for i, row in enumerate(grads):
        push = np.delete(row, i).sum()
        want_row = np.where(np.arange(len(row)) == i, 0.0, row / push if push else 0.0)
        assert np.abs(np.array(b["push"][i]) - want_row).max() < EXACT


def test_lab_questions_are_lesson_one_questions(session, live_url):
    from labs.lessons.help_articles import PRODUCTS, SEARCH_EXAMPLES, help_questions

    known = set(help_questions(list(PRODUCTS), variants=(0, 1, 2, 3))) | set(SEARCH_EXAMPLES)
    got = session.page.evaluate("async (url) => (await import(url)).QUESTIONS", f"{live_url}/live/batchlab.mjs")
    assert got and all(tuple(pair) in known for pair in got)
    answers = [a for _, a in got]
    assert len(set(answers)) < len(answers)  # two questions share an answer: the duplicate rule has work


def test_lab_is_labs_arithmetic(session, manifest, book):
    page = session.page
    got = open_lab(page)
    assert got["status"] == "ready" and got["batch"]["selected"] == "duplicates"
    check_lab(got, manifest, book)
    b = got["batch"]
    assert len(b["questions"]) == 4 and len(b["columns"]) == 8  # one mined negative each
    cells = lab(page).locator(".lab-table tbody tr").nth(0).locator("td")
    assert cells.nth(0).inner_text().split("\n")[0] == f"{b['S'][0][0]:.3f}"
    # the temperature, typed, and the other rules
    box = lab(page).locator('input[type="number"]').nth(0)
    got = change(page, lambda: (box.fill("0.2"), box.press("Enter")))
    assert got["batch"]["tau"] == 0.2
    check_lab(got, manifest, book)
    for key in ("gistAbsolute", "gistRelative", "qwen3", "none"):
        got = change(page, lambda: lab(page).locator(f'input[type="radio"][value="{key}"]').check())
        assert got["batch"]["selected"] == key
        check_lab(got, manifest, book)


def test_a_false_negative_mask_changes_the_row_loss(session, manifest, book):
    """Two questions share router/reset: each row holds the other's copy of its answer; the duplicate rule drops
    it, and that row's loss falls; the table strikes it out."""
    page = session.page
    got = open_lab(page)
    got = change(page, lambda: lab(page).locator('input[type="radio"][value="duplicates"]').check())
    b = got["batch"]
    assert b["answers"][0] == b["answers"][1] == "router/reset"
    assert b["rules"]["duplicates"]["mask"][0][1] and b["rules"]["duplicates"]["mask"][1][0]
    before, after = b["rules"]["none"]["rows"][0], b["rules"]["duplicates"]["rows"][0]
    assert after < before
    row = lab(page).locator(".lab-table tbody tr").nth(0)
    assert row.locator("td").nth(1).get_attribute("class") == "lab-dropped"
    assert row.locator("td").last.inner_text() == f"{after:.3f}"
    assert row.locator("td").nth(-2).inner_text() == f"{before:.3f}"
    # an exact copy scores exactly as the answer: "above the positive" rules cannot see it
    assert b["S"][0][1] == b["S"][0][0] and not b["rules"]["qwen3"]["mask"][0][1]
    rules = lab(page).locator(".lab-rules tbody tr")
    assert rules.count() == 5 and "Q1: A2" in rules.nth(1).inner_text()


def test_lab_bad_input_gets_one_line(session, manifest, book):
    page = session.page
    open_lab(page)
    problem = lab(page).locator(".lab-problem").first
    # the same question twice
    lab(page).locator(".lab-pick select").select_option("0")
    lab(page).locator("button", has_text="Add to the batch").click()
    assert state(page, "batch")["problem"] == "same question"
    assert "in the batch already" in problem.inner_text() and len(state(page, "batch")["batch"]["questions"]) == 4
    # a temperature out of range, and a margin that is no number: one line each, and the last good value kept
    tau_box = lab(page).locator('input[type="number"]').nth(0)
    before = state(page, "batch")["batch"]["tau"]
    got = change(page, lambda: (tau_box.fill("5"), tau_box.press("Enter")))
    assert got["batch"]["tau"] == before and "must be a number from 0.01 to 2" in problem.inner_text()
    rel = lab(page).locator('input[type="number"]').nth(2)
    got = change(page, lambda: (rel.fill(""), rel.press("Enter")))
    assert "margin r must be a number" in problem.inner_text() and got["batch"]["margins"]["gistRelative"] == 0.05
    change(page, lambda: (tau_box.fill(str(before)), tau_box.press("Enter")))
    change(page, lambda: (rel.fill("0.05"), rel.press("Enter")))
    assert "must be a number" not in problem.inner_text()
    # a margin that masks every negative: the rows are out of the loss, and it says so
    m = lab(page).locator('input[type="number"]').nth(1)
    got = change(page, lambda: lab(page).locator('input[type="radio"][value="gistAbsolute"]').check())
    got = change(page, lambda: (m.fill("1.5"), m.press("Enter")))
    b = got["batch"]
    assert b["rules"]["gistAbsolute"]["empty"] == [0, 1, 2, 3] and b["rules"]["gistAbsolute"]["loss"] == 0
    assert got["problem"] == "no negatives" and "Every row have no negative left" not in problem.inner_text()
    assert "no negative left" in problem.inner_text() and "left out of the loss" in problem.inner_text()
    check_lab(got, manifest, book)
    got = change(page, lambda: (m.fill("0"), m.press("Enter")))
    assert got["problem"] != "no negatives"
    # a window that holds nothing
    low, high = (lab(page).locator('fieldset').nth(2).locator('input[type="number"]').nth(k) for k in (0, 1))
    got = change(page, lambda: (low.fill("10"), low.press("Enter")))
    assert "holds nothing" in lab(page).locator(".lab-problem").nth(1).inner_text()
    assert len(got["batch"]["columns"]) == 4  # nothing mined
    got = change(page, lambda: (low.fill("0"), low.press("Enter")))
    assert len(got["batch"]["columns"]) == 8
    # a batch of one
    for _ in range(3):
        got = change(page, lambda: lab(page).locator(".lab-batch button").last.click())
    assert got["problem"] == "batch of one" and got["batch"] is None
    assert "A batch of one has no negatives" in problem.inner_text()
    assert lab(page).locator(".lab-table tr").count() == 0
    for k in ("1", "10", "4"):  # back to the starting batch
        lab(page).locator(".lab-pick select").select_option(k)
        got = change(page, lambda: lab(page).locator("button", has_text="Add to the batch").click())
    assert got["problem"] is None and len(got["batch"]["questions"]) == 4


def test_lab_mining_is_the_library_mining(session, manifest, book):
    """The mining panel's settings, for each question of the batch, against mine_hard_negatives on the page's vectors."""
    page = session.page
    got = open_lab(page)
    ids = manifest["sets"]["search"]["ids"]
    texts = manifest["sets"]["search"]["texts"]
    C = np.fromfile(book / "live" / manifest["sets"]["search"]["vectors"]["minilm"]["path"],
                    dtype="<f4").reshape(len(ids), -1).astype(np.float64)
    Q = np.array(got["batch"]["vectors"])
    cards = dict(zip(ids, texts))
    pairs = list(zip(got["batch"]["questions"], got["batch"]["answers"]))
    fields = lab(page).locator("fieldset").nth(2)
    question = fields.locator("select")
    low, high, margin = (fields.locator('input[type="number"]').nth(k) for k in range(3))
    got = change(page, lambda: (margin.fill("0.02"), margin.press("Enter")))
    for i in range(len(pairs)):
        got = change(page, lambda: question.select_option(str(i)))
        mining = got["mining"]
        assert mining["question"] == i and np.abs(np.array(mining["scores"]) - C @ Q[i]).max() < EXACT
        for result in mining["results"]:
            o = result["settings"]
            options = {"range_min": o["rangeMin"], "range_max": o["rangeMax"]}
            if o["margin"] is not None:
                options["relative_margin"] = o["margin"]
            library = _library_mining(Q, C, pairs, cards, **options)
            want = library.get(pairs[i][0])
            assert result["mined"] == (want["negatives"][0] if want else None), (i, result)
    assert lab(page).locator(".lab-mine tbody tr").count() == 4
    got = change(page, lambda: (margin.fill(""), margin.press("Enter")))
    assert got["mining"]["settings"]["margin"] is None


def test_lab_every_reader(session, fresh):
    """axe-core finds nothing serious in the lab and the why panel at 1280 and 390 px; nothing is cut at 390 px;
    every control is named; the lab works from the keyboard."""
    phone = fresh(**PHONE)
    page = phone.open()
    lab(page).locator("button", has_text="Open the batch lab").tap()
    settled(page, 0)
    ask(page, "search", chip=1)
    demo(page, "search").locator(".live-why").first.tap()
    until(page, "search", "s.why")
    open_lab(session.page)
    for p, width in ((session.page, "1280 px"), (page, "390 px")):
        assert not axe_problems(p, ".live-demo[data-live=batch]", ".why-panel"), width
        if p is page:
            p.evaluate("() => document.documentElement.setAttribute('data-theme', 'dark')")
            assert not axe_problems(p, ".live-demo[data-live=batch]", ".why-panel"), f"{width}, dark"
        assert not unnamed(p, ".live-demo[data-live=batch] input, .live-demo[data-live=batch] button,"
                              " .live-demo[data-live=batch] select, .why-panel button"), width
    assert not cut_demos(page), "cut at 390 px"
    small = page.evaluate("() => [...document.querySelectorAll('.live-demo[data-live=batch] *, .why-panel *')].filter(e =>"
                          " e.childNodes.length && [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())"
                          " && parseFloat(getComputedStyle(e).fontSize) < 10).length")
    assert small == 0
    # the keyboard: Tab from the question list to the add button, Enter adds
    s = session.page
    before = len(state(s, "batch")["batch"]["questions"])
    lab(s).locator(".lab-pick select").select_option("5")
    lab(s).locator(".lab-pick select").focus()
    s.keyboard.press("Tab")
    assert s.evaluate("() => document.activeElement.textContent") == "Add to the batch"
    got = change(s, lambda: s.keyboard.press("Enter"))
    assert len(got["batch"]["questions"]) == before + 1
    got = change(s, lambda: lab(s).locator(".lab-batch button").last.click())
    assert len(got["batch"]["questions"]) == before
    assert lab(s).locator(".live-summary").get_attribute("aria-live") == "polite"
    assert not phone.live_errors() and not session.live_errors()


def test_lab_says_why_it_cannot_run(fresh):
    """Without WebAssembly the lab says so in one line, offers no button, and loads nothing."""
    s = fresh()
    s.context.add_init_script("delete window.WebAssembly")
    page = s.open()
    note = lab(page).locator(".live-note")
    assert "no WebAssembly" in note.inner_text()
    assert lab(page).locator("button", has_text="Open the batch lab").is_hidden()
    assert not [u for u in s.requests if "batchlab.mjs" in u or "/live/models/" in u]
    assert not s.live_errors()
