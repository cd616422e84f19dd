"""The book's live demos in headless Chromium, against the Python side on the same inputs.

The page is `live_page.FIXTURE` (one demo of each kind) in a linked copy of the built book, served on
127.0.0.1. Its cosines are sentence-transformers' within INT8_TOLERANCE (FP32_TOLERANCE with the fp32
export), its poolings and InfoNCE numbers labs' within EXACT; bad input, a bad file and a browser that
cannot run are said; no model byte loads before a use; axe-core, names and widths hold for every reader.
A live error logged, or a request off 127.0.0.1, fails the module (tests/book/conftest.py).

    pytest tests/book/test_live.py --html-root _build/html      (make checked-book runs it)
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import expect

from tests.book.live_helpers import (DESKTOP, LONG_SCRIPTS, PHONE, RANKED, WAIT_MS, ask, axe_problems, cut_demos, demo,
                                     state, unnamed, until)
from tools.book import live_page

LIVE_WORK = Path(__file__).resolve().parents[2] / "_live" / "work"  # tools/live_model.py's fp32 exports, fine-tuned
INT8_TOLERANCE = 0.03  # a cosine, page (integer weights, query and documents) against sentence-transformers (fp32)
FP32_TOLERANCE = 1e-5
EXACT = 1e-9  # float64 arithmetic, page against labs
MODEL_FILE = "live/models/minilm/onnx/body_quantized.onnx.gz"
LONG = ("My router blinks orange and will not reset even after I hold the button. " * 200)[:10_000]
TEXTS = [
    "how do I factory reset my router",
    "Can I rinse the kettle in the sink?",
    "my headphones won't charge 🎧🔋😩",
    "如何重置我的路由器",
    "Как вернуть деньги за наушники?",
    "كيف أعيد ضبط الراوتر",
    "<img src=x onerror=\"window.__pwned=1\"><script>window.__pwned=2</script><b>reset</b> my printer",
    LONG,
]


BEFORE_USE = {"/live/stored.js", "/live/maths.js", "/live/demos.js", "/live/live.css"}  # all a page with a demo fetches from live/
LESSON_DEMOS = {  # each lesson's live demos (kind, temperature), in order
    "notebooks/01_pooling.html": [("search", None), ("pooling", None)],
    "notebooks/03_infonce.html": [("infonce", "0.5")],
    "notebooks/04_temperature.html": [("infonce", "0.05")],
    "notebooks/05_hard_negatives.html": [("adapter", None)],
    "notebooks/06_mining.html": [("batch", None)],
    "notebooks/07_finetuning.html": [("compare", None)],
}
LONG_TASK_MS = 200  # no script of the demos longer than this on the page's thread while the model loads and ranks


# ---- the Python side ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm():
    from labs.retrieval.models import load_minilm

    return load_minilm()


@pytest.fixture(scope="module")
def tuned():
    from sentence_transformers import SentenceTransformer

    folder = LIVE_WORK / "tuned" / "best"
    if not folder.is_dir():
        pytest.fail(f"{folder} is missing: make live builds it")
    return SentenceTransformer(str(folder), device="cpu", local_files_only=True)


def encode(model, texts) -> np.ndarray:
    return model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True).astype(np.float64)


@pytest.fixture(scope="module")
def search_docs(minilm, manifest):
    return encode(minilm, manifest["sets"]["search"]["texts"])


@pytest.fixture
def swap(book, site):
    """``swap(rel, data)``: ``data`` at ``site/rel`` in place of the book's file (None: no file there; a Path:
    a link to it); the book's files are back after the test."""
    swapped = []

    def put(rel: str, data: bytes | Path | None) -> None:
        (site / rel).unlink(missing_ok=True)
        if isinstance(data, Path):
            (site / rel).symlink_to(data)
        elif data is not None:
            (site / rel).write_bytes(data)
        swapped.append(rel)

    yield put
    for rel in swapped:
        (site / rel).unlink(missing_ok=True)
        if (book / rel).exists():
            (site / rel).symlink_to(book / rel)


def labs_pools(grid, mask) -> dict:
    """labs' three poolings of token vectors ``grid`` (B, T, D) under attention ``mask`` (B, T), as numpy."""
    from labs.lessons.pooling import cls_pool, mean_pool

    return {"mean_masked": mean_pool(grid, mask).numpy(), "cls": cls_pool(grid, mask).numpy(),
            "mean_unmasked": mean_pool(grid, mask.new_ones(mask.shape)).numpy()}


def shown_ok(got: dict, key: str, python: np.ndarray, ids: list[str], what: str) -> None:
    """The page's cosines within INT8_TOLERANCE of ``python``, and its ranking shows those numbers."""
    at = {doc: i for i, doc in enumerate(ids)}
    assert np.abs(np.array(got["scores"][key]) - python).max() < INT8_TOLERANCE, (what, key)
    for row in got["rankings"][key]:
        assert row["cosine"] == got["scores"][key][at[row["id"]]], (what, key, row)


# ---- search ---------------------------------------------------------------------------------


def test_search_examples_rank_as_python(session, minilm, manifest, search_docs):
    """Each one-click question: the page's top article is the Python model's, every cosine within tolerance."""
    from labs.lessons.help_articles import SEARCH_EXAMPLES

    ids = manifest["sets"]["search"]["ids"]
    for i, (question, right) in enumerate(SEARCH_EXAMPLES):
        got = ask(session.page, "search", chip=i)
        assert got["query"] == question and not got["noMatch"]
        python = search_docs @ encode(minilm, [question])[0]
        assert got["rankings"]["minilm"][0]["id"] == ids[int(np.argmax(python))], question
        shown_ok(got, "minilm", python, ids, question)
        first = demo(session.page, "search").locator("li").first
        assert first.get_attribute("data-id") == got["rankings"]["minilm"][0]["id"]
        assert first.locator(".live-cos").inner_text() == f"{got['rankings']['minilm'][0]['cosine']:.3f}"
        marked = demo(session.page, "search").locator("li", has=session.page.locator(".live-right"))
        assert [marked.nth(k).get_attribute("data-id") for k in range(marked.count())] == \
            [r["id"] for r in got["rankings"]["minilm"] if r["id"] == right]
    assert "Model: all-MiniLM-L6-v2" in demo(session.page, "search").locator(".live-status").inner_text()


def test_cosines_agree_with_python_int8(session, minilm, search_docs, manifest):
    """Other scripts, emoji, pasted HTML and 10,000 characters are ranked like any text: the page's
    cosines within INT8_TOLERANCE of the Python model's, its token count the Python tokenizer's; a
    text over 256 tokens is cut, and the page says so; HTML is shown as text, never run."""
    worst = 0.0
    ids = manifest["sets"]["search"]["ids"]
    box = demo(session.page, "search")
    for text in TEXTS:
        got = ask(session.page, "search", text)
        python = search_docs @ encode(minilm, [text])[0]
        worst = max(worst, float(np.abs(np.array(got["scores"]["minilm"]) - python).max()))
        shown_ok(got, "minilm", python, ids, text[:60])
        assert got["count"] == len(minilm.tokenizer(text)["input_ids"]), text[:60]
        said = box.locator(".live-message").inner_text()
        assert got["cut"] == (got["count"] > 256) == (got["message"] == "cut"), text[:60]
        assert not got["cut"] or (f"{got['count']:,} tokens long" in said and "first 256" in said), said
        assert box.locator(".live-columns").get_attribute("data-query") == text
        assert box.locator("img, script, b").count() == 0 and session.page.evaluate("() => window.__pwned") is None
        assert "<img" not in text or "<img src=x" in said, said
        if text in (TEXTS[3], TEXTS[5]):  # Chinese, Arabic: nothing matches, and the page says so
            assert got["noMatch"] and said.startswith("Nothing here matches"), said
    assert got["cut"] and worst > 0  # the int8 model is not the fp32 one: a zero would mean the page echoed Python


def test_typing_faster_than_the_model(session, minilm, search_docs, manifest):
    """Every ranking shown is for the text in the box at that moment, and the last one for the final text."""
    page = session.page
    demo(page, "search").evaluate("""d => {
        d.seen = [];
        const cols = d.querySelector('.live-columns'), input = d.querySelector('input');
        new MutationObserver(() => d.seen.push([cols.getAttribute('data-query'), input.value]))
            .observe(cols, {attributes: true, childList: true, subtree: true});
    }""")
    box = demo(page, "search").locator("input")
    box.fill("")
    box.focus()
    final = "my printer makes a strange noise"
    page.keyboard.type(final, delay=0)
    got = until(page, "search", RANKED, final)
    seen = demo(page, "search").evaluate("d => d.seen")
    assert seen, "no ranking was drawn"
    stale = [s for s in seen if s[0] is not None and s[0] != s[1]]
    assert not stale, f"rankings shown for text no longer in the box: {stale[:3]}"
    python = search_docs @ encode(minilm, [final])[0]
    assert got["rankings"]["minilm"][0]["id"] == manifest["sets"]["search"]["ids"][int(np.argmax(python))]


def test_fp32_export_matches_python(swap, fresh, minilm, manifest, search_docs):
    """With the fp32 export and fp32 document vectors in place, the page is the Python model within FP32_TOLERANCE."""
    fp32 = LIVE_WORK / "minilm" / "model.onnx"
    if not fp32.is_file():
        pytest.fail(f"{fp32} is missing: make live builds it")
    changed = json.loads(json.dumps(manifest))
    swap("live/models/minilm/onnx/model.onnx", fp32)
    changed["models"]["minilm"]["files"]["model"] = {"path": "models/minilm/onnx/model.onnx", "bytes": fp32.stat().st_size,
                                                     "sha256": hashlib.sha256(fp32.read_bytes()).hexdigest()}
    del changed["models"]["minilm"]["files"]["table"]  # the whole model, its token table inside: it takes the token ids
    vectors = search_docs.astype("<f4").tobytes()
    swap("live/vectors/search-fp32.f32", vectors)
    changed["sets"]["search"]["vectors"]["minilm"] = {"path": "vectors/search-fp32.f32", "bytes": len(vectors),
                                                      "sha256": hashlib.sha256(vectors).hexdigest()}
    swap("live/manifest.json", json.dumps(changed).encode())
    page = fresh().open()
    for text in TEXTS[:4]:
        got = ask(page, "search", text)
        want = encode(minilm, [text])[0]
        assert np.abs(np.array(got["vectors"]["minilm"]) - want).max() < FP32_TOLERANCE, text
        assert np.abs(np.array(got["scores"]["minilm"]) - search_docs.astype(np.float32) @ want).max() < FP32_TOLERANCE


# ---- compare --------------------------------------------------------------------------------


def test_compare_agrees_with_both_python_models(session, minilm, tuned, manifest):
    texts = manifest["sets"]["helpdesk"]["texts"]
    ids = manifest["sets"]["helpdesk"]["ids"]
    docs = {"minilm": encode(minilm, texts), "tuned": encode(tuned, texts)}
    models = {"minilm": minilm, "tuned": tuned}
    chips = demo(session.page, "compare").locator(".live-chip").count()
    assert chips >= 2
    for i in range(chips):
        got = ask(session.page, "compare", chip=i)
        for key in ("minilm", "tuned"):
            python = docs[key] @ encode(models[key], [got["query"]])[0]
            shown_ok(got, key, python, ids, got["query"])
            top_two = np.sort(python)[-2:]
            if top_two[1] - top_two[0] > 2 * INT8_TOLERANCE:  # a clear winner: the page must find it too
                assert got["rankings"][key][0]["id"] == ids[int(np.argmax(python))], (key, got["query"])
    heads = demo(session.page, "compare").locator(".live-head").all_inner_texts()
    assert heads == ["Untouched model", "Fine-tuned on the help-desk questions"]


def test_fine_tuned_body_comes_as_what_fine_tuning_changed(book, swap, fresh, manifest):
    """Lesson 7's fine-tuned body is sent as the bytes to add to the untouched body (which the
    comparison fetches anyway): the sum is the fine-tuned body, byte for byte; a sum that is not is named."""
    import gzip

    tuned, base = manifest["models"]["tuned"]["files"]["model"], manifest["models"]["minilm"]["files"]["model"]
    assert tuned["plus"] == "base" and manifest["models"]["tuned"]["files"]["base"] == base
    untouched = np.frombuffer(gzip.decompress((book / "live" / base["path"]).read_bytes()), dtype=np.uint8)
    added = untouched + np.frombuffer(gzip.decompress((book / "live" / tuned["path"]).read_bytes()), dtype=np.uint8)
    assert hashlib.sha256(added.tobytes()).hexdigest() == tuned["raw"]["sha256"]
    assert tuned["bytes"] < base["bytes"] / 2, (tuned["bytes"], base["bytes"])
    changed = json.loads(json.dumps(manifest))
    changed["models"]["tuned"]["files"]["model"]["raw"]["sha256"] = "0" * 64
    swap("live/manifest.json", json.dumps(changed).encode())
    page = fresh().open()
    demo(page, "compare").locator(".live-chip").nth(0).click()
    until(page, "compare", "s.status === 'fallback'")
    note = demo(page, "compare").locator(".live-note").inner_text()
    assert tuned["path"] in note and "does not make the fine-tuned one" in note, note


# ---- pooling --------------------------------------------------------------------------------


def test_pooling_is_labs_pooling(session, minilm):
    """The page's poolings of its own token vectors are labs' (float64), and its tokens are the Python tokenizer's."""
    import torch

    page = session.page
    pairs = [("The cat sat on the mat.", "A kitten was asleep on the rug by the kitchen door."),
             ("Un café, s'il vous plaît 😊", "咖啡"), ("same length", "same words")]
    for a, b in pairs:
        box = demo(page, "pooling")
        box.locator("input").nth(0).fill(a)
        box.locator("input").nth(1).fill(b)
        got = until(page, "pooling", "s.texts && s.pooled && !s.stored && s.texts.join('|') === arg", f"{a}|{b}")
        enc = minilm.tokenizer([a, b], padding=True)
        assert got["ids"] == enc["input_ids"] and got["mask"] == enc["attention_mask"]
        grid = torch.tensor(got["grid"], dtype=torch.float64).reshape(2, got["T"], got["D"])
        labs = labs_pools(grid, torch.tensor(got["mask"]))
        for name, v in labs.items():
            assert np.abs(np.array(got["pooled"][name]) - v).max() < EXACT, name
            cos = float(v[0] @ v[1] / np.linalg.norm(v[0]) / np.linalg.norm(v[1]))
            assert abs(got["cosines"][name] - cos) < EXACT, name
        cells = demo(page, "pooling").locator("tbody td").all_inner_texts()
        assert cells == [f"{got['cosines'][k]:.3f}" for k in ("mean_masked", "mean_unmasked", "cls")]
        # the token vectors come from the model in the page: their masked mean is the Python model's vector
        python = encode(minilm, [a, b])
        page_mean = labs["mean_masked"]
        page_mean /= np.linalg.norm(page_mean, axis=1, keepdims=True)
        assert np.abs(page_mean - python).max() < INT8_TOLERANCE
        pads = sum(1 for t in got["tokens"][0] + got["tokens"][1] if t == "[PAD]")
        assert demo(page, "pooling").locator(".live-pad").count() == pads


@pytest.mark.parametrize("kind, text, result, said, hidden", [
    ("search", "", "rankings", "empty", ".live-columns"), ("search", "   \n ", "rankings", "empty", ".live-columns"),
    ("pooling", "  ", "cosines", "Sentence A is empty", "table")])
def test_empty_text_is_said(session, kind, text, result, said, hidden):
    box = demo(session.page, kind)
    box.locator("input").first.fill(text)
    box.locator("input").first.press("Enter")
    got = state(session.page, kind)
    assert got["message"] == "empty" and got[result] is None
    assert said in box.locator(".live-message").inner_text() and box.locator(hidden).is_hidden()


# ---- InfoNCE --------------------------------------------------------------------------------


def infonce_is_labs(page, nth: int = 0) -> dict:
    """The InfoNCE demo's state, its numbers checked against labs from its own angles and temperature."""
    from labs.lessons.duplicates import row_shares
    from labs.lessons.hard_negatives import info_nce_grads
    from labs.lessons.infonce import info_nce_rows

    got = state(page, "infonce", nth)
    tau = got["tau"]
    rad = np.radians
    Q = np.array([[np.cos(rad(got["angles"]["question"])), np.sin(rad(got["angles"]["question"]))]])
    P = np.array([[np.cos(rad(a)), np.sin(rad(a))] for a in got["angles"]["cards"]])
    S = Q @ P.T
    dQ, dP = info_nce_grads(Q, P, tau)
    want = {"question": Q[0], "scores": S[0], "shares": row_shares(S[0], tau), "loss": info_nce_rows(S, tau)[0],
            "gradQuestion": dQ[0], "gradCards": dP}
    for key, labs in want.items():
        assert np.abs(np.array(got[key]) - labs).max() < EXACT, key
    assert np.abs(np.array(got["steps"]["question"]) + tau * dQ[0]).max() < EXACT
    assert np.abs(np.array(got["steps"]["cards"]) + tau * dP).max() < EXACT
    return got


def test_infonce_moves_agree_with_labs(session):
    page = session.page
    box = demo(page, "infonce")
    assert infonce_is_labs(page)["tau"] == 0.5 and box.locator(".live-number").input_value() == "0.500"
    box.scroll_into_view_if_needed()
    answer = box.locator('[role="slider"][aria-label="Answer card"]')
    answer.focus()
    for key in ("ArrowRight", "ArrowRight", "Shift+ArrowLeft", "PageUp"):
        before = state(page, "infonce")["angles"]["cards"][0]
        page.keyboard.press(key)
        got = infonce_is_labs(page)
        step = {"ArrowRight": 1, "Shift+ArrowLeft": -10, "PageUp": 15}[key]
        assert got["angles"]["cards"][0] == (round(before) + step) % 360
        assert answer.get_attribute("aria-valuenow") == str(round(got["angles"]["cards"][0]) % 360)
    # a pointer drag of the question to the top of the circle
    circle = box.locator("svg.live-circle").bounding_box()
    cx, cy = circle["x"] + circle["width"] / 2, circle["y"] + circle["height"] / 2
    handle = box.locator('[role="slider"][aria-label="Question"]').bounding_box()
    page.mouse.move(handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2)
    page.mouse.down()
    page.mouse.move(cx - 40, cy - 100, steps=5)
    page.mouse.up()
    got = infonce_is_labs(page)
    assert abs(got["angles"]["question"] - np.degrees(np.arctan2(100, -40)) % 360) < 3  # the pointer's angle
    # the temperature: the slider's keys (continuous, on a log scale) and a typed value
    box.locator(".live-range").focus()
    page.keyboard.press("ArrowLeft")
    got = infonce_is_labs(page)
    assert got["tau"] == pytest.approx(10 ** float(box.locator(".live-range").input_value()), rel=1e-12)
    assert 0.49 < got["tau"] < 0.5  # one step of the slider: about 0.2% colder
    number = box.locator(".live-number")
    number.fill("0.07")
    number.press("Enter")
    got = infonce_is_labs(page)
    assert got["tau"] == 0.07
    # the arrows drawn are the steps
    drawn = [[float(x) for x in a.split()] for a in box.locator(".live-arrow").evaluate_all(
        "gs => gs.map(g => g.getAttribute('data-step'))")]
    assert np.abs(np.array(drawn) - np.array([got["steps"]["question"]] + got["steps"]["cards"])).max() < EXACT
    expect(box.locator(".live-summary")).to_have_text(got["summary"])  # once the moves settle
    assert f"{100 * got['shares'][0]:.1f}%" in got["summary"]


def test_infonce_bad_temperature(session):
    box = demo(session.page, "infonce", 1)
    before = infonce_is_labs(session.page, 1)["tau"]
    assert before == 0.05 and box.locator(".live-number").input_value() == "0.050"  # the lesson's start
    for typed in ("0", "-1", "5", "1e9"):
        number = box.locator(".live-number")
        number.fill(typed)
        number.press("Enter")
        assert state(session.page, "infonce", 1)["tau"] == before
        assert "must be a number from 0.01 to 2" in box.locator(".live-message").inner_text()


# ---- what the page cannot do, it says -------------------------------------------------------


def test_bad_model_file_names_it(book, swap, fresh):
    """A missing, a truncated and a wrong model file (one browser: what it cached stays, the bad file is never cached)."""
    data = (book / MODEL_FILE).read_bytes()
    half = len(data) // 2
    s = fresh()
    for damage, bad, said in (("missing", None, "is missing"), ("truncated", data[:half], "is truncated"),
                              ("wrong", data[:half] + bytes([data[half] ^ 0xFF]) + data[half + 1:], "SHA-256 differs")):
        swap(MODEL_FILE, bad)
        page = s.open()
        demo(page, "search").locator(".live-chip").nth(1).click()
        got = until(page, "search", "s.status === 'fallback'")
        note = demo(page, "search").locator(".live-note").inner_text()
        assert MODEL_FILE in note and said in note, (damage, note)
        assert got["stored"] and got["rankings"]["minilm"], damage
        assert "Stored result" in demo(page, "search").locator(".live-message").inner_text(), damage


def test_token_table_comes_by_the_row(book, swap, fresh, minilm, manifest):
    """The model file holds no token table: a question fetches the table's files that hold its own
    tokens' rows, none other, each once; a missing one is named, as a missing model file is."""
    entry = manifest["models"]["minilm"]["files"]["table"]
    index = json.loads((book / "live" / entry["path"]).read_text())
    folder = "/live/" + entry["path"].rsplit("/", 1)[0] + "/"
    per = index["rowsPerFile"]

    def files(text):
        return {f"{folder}{i // per:04d}.bin" for i in minilm.tokenizer(text)["input_ids"]}

    s = fresh()
    page = s.open()
    asked = ["my kettle is leaking water", "my kettle is leaking", "Wipe the camera with a dry soft cloth."]
    for text in asked:
        ask(page, "search", text)
    fetched = [p for p in s.live_requests() if p.startswith(folder) and p.endswith(".bin")]
    assert sorted(fetched) == sorted(set().union(*map(files, asked))), fetched  # each once, only these
    assert len(fetched) * per * index["dim"] < index["rows"] * index["dim"] / 20

    text = "zebra xylophone quokka"
    missing = sorted(files(text) - set(fetched))[0].removeprefix("/")
    swap(missing, None)
    demo(page, "search").locator("input").fill(text)
    until(page, "search", "s.status === 'fallback'")
    note = demo(page, "search").locator(".live-note").inner_text()
    assert missing in note and "is missing" in note, note


@pytest.mark.parametrize("how, want", [("file", "make serve"), ("no-wasm", "no WebAssembly"),
                                       ("old-browser", "too old")])
def test_cannot_run_says_how_and_shows_the_stored_example(how, want, site, fresh):
    s = fresh()
    if how == "no-wasm":
        s.context.add_init_script("delete window.WebAssembly")
    elif how == "old-browser":
        s.context.add_init_script("delete HTMLScriptElement.prototype.noModule")  # no JavaScript modules
    page = s.open((site / live_page.FIXTURE).resolve().as_uri() if how == "file" else live_page.FIXTURE)
    for kind in ("search", "pooling", "compare"):
        note = demo(page, kind).locator(".live-note")
        assert want in note.inner_text(), kind
        assert state(page, kind)["stored"], kind
    demo(page, "search").locator(".live-chip").nth(2).click()
    assert state(page, "search")["query"] == demo(page, "search").locator(".live-chip").nth(2).inner_text()
    demo(page, "search").locator("input").fill("my own question")  # kept as typed; the stored result stays
    assert demo(page, "search").locator("input").input_value() == "my own question"
    assert state(page, "search")["stored"]
    infonce_is_labs(page)  # no model needed: the explorable works anyway
    assert not [u for u in s.requests if "/live/models/" in u or "/live/runtime/" in u]


# ---- weight, network, every reader ---------------------------------------------------------


def test_no_model_bytes_before_use(session, fresh):
    """Each lesson holds its demos (LESSON_DEMOS, in order). The fixture page (before any test used it) and
    the lesson pages, scrolled through and idle, fetch no model byte; a page without a demo nothing from live/."""
    assert session.before_use == BEFORE_USE
    assert any(p.endswith("body_quantized.onnx.gz") for p in session.live_requests())
    s = fresh(**DESKTOP)
    for rel in ["book/index.html"] + sorted(LESSON_DEMOS):
        s.requests.clear()
        page = s.open(rel)
        demos = [(d.get_attribute("data-live"), d.get_attribute("data-tau")) for d in page.locator(".live-demo").all()]
        assert demos == LESSON_DEMOS.get(rel, []), rel
        page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
        page.wait_for_timeout(300)
        fetched = set(s.live_requests())
        assert fetched == (BEFORE_USE if demos else set()), (rel, fetched)


def test_every_reader(session, fresh):
    """axe-core: no serious or critical problem inside the demos at 1280 and 390 px (and dark); nothing cut
    at 390 px; every input and button named."""
    phone = fresh(**PHONE).open()
    ask(phone, "search", chip=0)
    for page, width in ((session.page, "1280 px"), (phone, "390 px")):
        assert not axe_problems(page, ".live-demo"), width
        if page is phone:  # and in the theme's dark mode
            page.evaluate("() => document.documentElement.setAttribute('data-theme', 'dark')")
            assert not axe_problems(page, ".live-demo"), f"{width}, dark theme"
        assert not unnamed(page, ".live-demo input, .live-demo button, .live-demo [role=slider]"), width
    assert not cut_demos(phone), "cut at 390 px"


# ---- a page that never freezes, and loads only when used ------------------------------------


def test_no_long_task_while_loading_and_ranking(fresh):
    """CPU slowed 4x: from the reader's first key to the ranking, no script of the demos runs on the page's
    thread for over LONG_TASK_MS (the model runs in a worker), and the box takes every key meanwhile. The
    page's whole tasks, which count other jobs' time too, are benchmarks/live_phone.py's."""
    s = fresh(**PHONE)
    s.context.add_init_script(LONG_SCRIPTS)
    page = s.open()
    page.wait_for_timeout(1500)  # the page's own start (theme, MathJax) is not the demo's
    cdp = s.context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": 4})
    try:
        held = []  # the model file, held back until the typing below is done
        s.context.route("**/*.onnx.gz", lambda r: held.append(r))
        t0 = page.evaluate("() => performance.now()")
        box = demo(page, "search").locator("input")
        box.click()
        page.keyboard.type("my kettle", delay=30)
        for _ in range(WAIT_MS // 100):
            if held:
                break
            page.wait_for_timeout(100)
        assert held and state(page, "search")["status"] == "loading"
        # typing while the model loads: every key lands in the box
        page.keyboard.type(" leaks")
        assert box.input_value() == "my kettle leaks"
        assert state(page, "search")["status"] == "loading"
        for r in held:
            r.continue_()
        until(page, "search", RANKED, "my kettle leaks")  # ranked by the page, not stored
        page.keyboard.type(" water")  # a second ranking, model loaded
        until(page, "search", RANKED, "my kettle leaks water")
        scripts = page.evaluate("t0 => window.__scripts.filter(e => e[0] >= t0 && e[2].includes('/live/'))", t0)
    finally:
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
    assert page.evaluate("() => PerformanceObserver.supportedEntryTypes.includes('long-animation-frame')")
    slow = [e for e in scripts if e[1] > LONG_TASK_MS]
    assert not slow, f"the demos' scripts ran over {LONG_TASK_MS} ms on the page's thread: {slow}"
    assert any(u.endswith("/live/worker.mjs") for u in s.live_requests())


def test_focus_loads_nothing(fresh):
    """Tabbing through every demo, and a tap into a box, fetch no model byte: only typing, a click or Enter do."""
    s = fresh(**PHONE)
    page = s.open()
    for _ in range(80):
        page.keyboard.press("Tab")
    demo(page, "search").locator("input").tap()
    demo(page, "compare").locator("input").focus()
    demo(page, "pooling").locator("input").nth(1).focus()
    page.wait_for_timeout(500)
    assert set(s.live_requests()) <= BEFORE_USE, s.live_requests()  # no model byte, nor any other file of live/
    with page.expect_request("**/live/manifest.json*", timeout=WAIT_MS):
        page.keyboard.press("Enter")  # Enter in the pooling form: that is a use


def test_leaving_the_page_stops_the_download(fresh):
    """pagehide while the model downloads (slowed to 4 Mbit/s): the downloads stop, the demo is idle
    again, and its next use loads the model afresh."""
    s = fresh()
    page = s.open()
    failed = []
    s.context.on("requestfailed", lambda r: failed.append((r.url, r.failure)))
    cdp = s.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 40, "downloadThroughput": 4e6 / 8,
                                                   "uploadThroughput": 4e6 / 8})
    demo(page, "search").locator(".live-chip").first.click()
    until(page, "search", "s.status === 'loading' && +d.querySelector('progress').value > 0")
    page.evaluate("() => window.dispatchEvent(new PageTransitionEvent('pagehide', {persisted: true}))")
    assert until(page, "search", "s.status === 'idle'")["stored"]  # the stored example stays in view
    onnx = [f for f in failed if f[0].endswith(".onnx.gz")]
    assert onnx and all("ABORTED" in (f[1] or "") for f in onnx), failed
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 0, "downloadThroughput": -1,
                                                   "uploadThroughput": -1})
    ask(page, "search", chip=0)  # the page's own ranking: the model loaded afresh


def test_maths_module_is_labs(session):
    """maths.mjs (imported as a module) and maths.js (its classic copy) against numpy and labs on random inputs."""
    import torch

    rng = np.random.default_rng(0)
    B, T, D = 2, 7, 16
    grid = rng.standard_normal((B, T, D)).astype(np.float32)
    mask = [[1] * 7, [1] * 4 + [0] * 3]
    docs = rng.standard_normal((9, D))
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    docs[4] = docs[2]  # a tie: document order
    query = docs[2] + 0.1 * rng.standard_normal(D)
    query /= np.linalg.norm(query)
    got = session.page.evaluate("""async ([grid, mask, B, T, D, docs, query]) => {
        const out = {};
        const classic = window.labsLiveMaths;
        const m = await import(window.labsLive.root + 'live/maths.mjs?v=' + window.labsLiveStored.version);
        for (const [name, lib] of [['module', m], ['classic', classic]]) {
            const g = {grid: new Float32Array(grid), mask, B, T, D};
            const s = lib.scores(new Float32Array(docs), query, D);
            out[name] = {meanUnit: Array.from(lib.meanUnit(new Float32Array(grid.slice(0, T * D)), T, D)),
                pool: lib.pool(g), cosine: lib.cosine(docs.slice(0, D), docs.slice(D, 2 * D)), scores: s,
                rank: lib.rank(s, 5)};
        }
        return out;
    }""", [grid.ravel().tolist(), mask, B, T, D, docs.astype(np.float32).ravel().tolist(), query.tolist()])
    assert got["module"] == got["classic"]
    g = got["module"]
    mean0 = grid[0].astype(np.float64).mean(axis=0)
    assert np.abs(np.array(g["meanUnit"]) - mean0 / np.linalg.norm(mean0)).max() < EXACT
    for name, pooled in labs_pools(torch.tensor(grid, dtype=torch.float64), torch.tensor(mask)).items():
        assert np.abs(np.array(g["pool"][name]) - pooled).max() < EXACT, name
    assert abs(g["cosine"] - float(docs[0].astype(np.float32).astype(np.float64) @ docs[1].astype(np.float32))) < 1e-6
    python = docs.astype(np.float32).astype(np.float64) @ query
    assert np.abs(np.array(g["scores"]) - python).max() < EXACT
    assert g["rank"] == list(np.argsort(-python, kind="stable")[:5])
    assert g["rank"][:2] == [2, 4]


# ---- a phone: 390 px ----------------------------------------------------------------------


def test_phone_example_stored_at_once_then_live_under_the_box(fresh):
    """390 px: a one-click example shows its stored ranking at once, marked as stored, then the page's own,
    its first result right under the box and the short load report after the results."""
    page = fresh(**PHONE).open()
    d = demo(page, "search")
    d.locator(".live-chip").nth(1).tap()
    got = state(page, "search")
    assert got["stored"] and got["rankings"]["minilm"]
    assert d.locator(".live-columns").get_attribute("data-stored") == "true"
    said = d.locator(".live-message").inner_text()
    assert said.startswith("Stored result") and "as soon as the model has loaded" in said
    got = ask(page, "search", chip=1)
    assert not got["stored"] and d.locator(".live-columns").get_attribute("data-stored") is None
    assert d.locator(".live-message").inner_text().startswith("Ranked for")
    form = d.locator("form").bounding_box()
    first = d.locator(".live-ranking li").first.bounding_box()
    assert first["y"] - (form["y"] + form["height"]) < 60, (form, first)
    last = d.locator(".live-ranking li").last.bounding_box()
    report = d.locator(".live-status").bounding_box()
    assert report["y"] > last["y"] + last["height"]
    assert report["height"] < 80, d.locator(".live-status").inner_text()  # three short lines at most
    caption = demo(page, "pooling").locator("caption").inner_text()  # untouched: it names what it is for
    assert caption.startswith("Stored result for \u201cA cat sleeps on the mat.\u201d and \u201cMy kitten"), caption


def test_phone_compare_is_one_compact_table(fresh):
    page = fresh(**PHONE).open()
    got = ask(page, "compare", chip=0)
    d = demo(page, "compare")
    assert d.locator(".live-compact").is_visible()
    assert not d.locator(".live-column").first.is_visible()
    rows = d.locator(".live-compact tbody tr")
    assert rows.count() == 5
    for column, key in enumerate(("minilm", "tuned")):
        ids = [rows.nth(i).locator("td").nth(column).get_attribute("data-id") for i in range(5)]
        assert ids == [r["id"] for r in got["rankings"][key]]
    table = d.locator(".live-compact").bounding_box()
    assert table["height"] < 650 and table["x"] + table["width"] <= 390  # the two lists stacked: over 1,300 px
    cell = rows.first.locator("td").first
    assert not cell.locator(".live-text").is_visible()
    cell.locator("summary").tap()
    assert cell.locator(".live-text").is_visible()  # the full text a tap away
    assert cell.locator(".live-text").inner_text() == got["rankings"]["minilm"][0]["text"]


def test_phone_arrows_stay_in_the_figure(fresh):
    """390 px: at every temperature and layout tried, each arrow lies inside the figure; a shortened one
    is marked, and the note under the figure shows while there is one."""
    page = fresh(**PHONE).open()
    d = demo(page, "infonce", 1)
    d.scroll_into_view_if_needed()
    seen = 0
    for tau in ("0.05", "2"):
        d.locator(".live-number").fill(tau)
        d.locator(".live-number").press("Enter")
        for key in ("Home",) + ("PageUp",) * 7:  # the question from 30 to 135 degrees
            d.locator('[role="slider"][aria-label="Question"]').press(key)
            out = d.evaluate("d => { const f = d.querySelector('svg.live-circle').getBoundingClientRect();"
                             " return [...d.querySelectorAll('.live-arrow line, .live-arrow polygon')]"
                             ".map(e => e.getBoundingClientRect()).filter(r => r.left < f.left - .5"
                             " || r.top < f.top - .5 || r.right > f.right + .5 || r.bottom > f.bottom + .5).length; }")
            assert out == 0, (tau, key)  # no part of an arrow outside the figure
            got = infonce_is_labs(page, 1)
            assert d.locator(".live-clamp-note").is_visible() == (got["clamped"] > 0)
            assert d.locator(".live-arrow.live-clamped").count() == got["clamped"]
            seen += got["clamped"]
    assert seen > 0  # some layouts needed it


def test_phone_messages_match_the_text(session):
    """Two models, two limits; a long sentence's chips counted, its cut said first."""
    page = session.page
    got = ask(page, "compare", LONG)
    said = demo(page, "compare").locator(".live-message").inner_text()
    assert "untouched model reads only its first 256" in said and "fine-tuned one its first 128" in said, said
    box = demo(page, "pooling")
    box.locator("input").nth(0).fill(LONG)
    assert until(page, "pooling", "s.texts && s.texts[0] === arg && s.pooled && !s.stored", LONG)["cut"][0]
    message = box.locator(".live-message")
    assert message.inner_text().startswith("Sentence A is ") and "tokens long" in message.inner_text().split(".")[0]
    for row in range(2):
        assert box.locator(".live-token-row").nth(row).locator("li").count() <= 41
    more = box.locator(".live-more").all_inner_texts()
    assert more and "[PAD]" in more[1]
    assert message.bounding_box()["y"] < box.locator(".live-tokens").bounding_box()["y"]


def test_phone_book_pages(fresh, site):
    """390 px on a lesson page: the header's buttons show keyboard focus, input code wraps rather than
    scrolls, and a page opened as a file shows a note in place of each diagram's source."""
    s = fresh(**PHONE)
    page = s.open("notebooks/01_pooling.html", wait_demos=False)
    page.keyboard.press("Tab")
    buttons = page.locator(".bd-header-article button")
    visible = [buttons.nth(i) for i in range(buttons.count()) if buttons.nth(i).is_visible()]
    assert len(visible) >= 4, len(visible)
    for b in visible:
        b.focus()
        ring = b.evaluate("e => [e.matches(':focus-visible'), getComputedStyle(e).outlineStyle, "
                          "parseFloat(getComputedStyle(e).outlineWidth)]")
        assert ring[0] and ring[1] != "none" and ring[2] >= 2, (b.get_attribute("aria-label"), ring)
    wide = page.evaluate("() => [...document.querySelectorAll('.bd-article .cell_input pre')].filter(p => "
                         "p.offsetParent && p.scrollWidth > p.clientWidth + 1).length")
    assert wide == 0
    diagram_page = next(p for p in sorted((site / "notebooks").glob("*.html"))
                        if 'class="mermaid"' in p.read_text(encoding="utf-8"))
    s.open(diagram_page.resolve().as_uri(), wait_demos=False)
    diagrams = page.locator("pre.mermaid").count()
    assert diagrams > 0
    expect(page.locator(".course-file-note")).to_have_count(diagrams)
    expect(page.locator("pre.mermaid:visible")).to_have_count(0)
