"""Lesson 5's adapter, trained in the page, in headless Chromium, against labs and torch on the same vectors.

The page is lesson 5 itself (notebooks/05_hard_negatives.html), served as test_live.py serves the
fixture (every request off 127.0.0.1 refused). What holds:

- the stored look-alike vectors are the experiment's: on them labs' untouched exam and seed 0 of
  both arms give the committed results' numbers (labs/classroom/experiment/lookalike_experiment.json);
- book/live/adapter.mjs, imported in the page, on the same vectors, identity start and batch
  order: its batch plan is labs' `batch_plan`, its gradient at step 1 is torch autograd's in
  float64 within EXACT, its W after 50 steps is `train_adapter_torch`'s within EXACT (both arms);
- the demo: Train with its defaults, then the in-batch arm: the losses are labs' within EXACT, the
  held-out accuracy and the password question's rank are labs' exactly, and both arms' rows are in
  the table; the reader's own pairs move their questions (the right article first, adapter on);
- bad input gets one line and no training: steps or tau out of range, no pairs, one pair, a
  look-alike that is the answer itself;
- every reader: labelled controls, Enter trains, an aria-live result, a visible focus ring, axe-core
  and nothing cut at 390 px, no script of the demo over LONG_TASK_MS on the page's thread while it
  trains; nothing fetched before the reader acts (focus is not an act), and Train fetches no model byte.

    pytest tests/book/test_live_adapter.py --html-root _build/html      (make checked-book runs it)
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.book.live_helpers import (DESKTOP, LONG_SCRIPTS, PHONE, Session, axe_problems, cut_demos, demo, state,
                                     unnamed, until)

PAGE = "notebooks/05_hard_negatives.html"
EXACT = 1e-9  # float64 arithmetic, page against torch and labs
LONG_TASK_MS = 200  # no script of the demo runs longer than this on the page's thread
RESULTS = Path(__file__).resolve().parents[2] / "labs" / "classroom" / "experiment" / "lookalike_experiment.json"

# In the page: adapter.mjs and the stored set, a plan, then the gradient of step 1 or a whole run.
RUN = """async ([root, arm, steps, seed, tau, gradOnly]) => {
  const ad = await import(root + '/live/adapter.mjs');
  const model = await import(root + '/live/model.mjs');
  const s = await model.lookalikeSet();
  const m = s.meta, d = m.dim;
  const b = (n) => ad.rows(s.table, d, m.blocks[n][0], m.blocks[n][1]);
  const set = { Q: b('Q'), P: b('P'), L: b('L') };
  const plan = ad.batchPlan(m.train.topics.length, m.train.wordings, m.defaults.batch, steps, seed);
  if (gradOnly) {
    const g = ad.lossAndGrad(ad.identity(d), plan[0].map((r) => set.Q[r]), ad.columns(set, plan[0], arm), tau);
    return { plan, loss: g.loss, dW: Array.from(g.dW) };
  }
  const r = ad.train(set, plan, { arm, steps, tau, lr: m.defaults.lr });
  return { plan, losses: r.losses, W: Array.from(r.W) };
}"""


@functools.lru_cache(maxsize=None)
def stored(book: Path) -> tuple[dict, dict]:
    """The manifest's look-alike set and its blocks of vectors (float64, as Python trains on them)."""
    meta = json.loads((book / "live" / "manifest.json").read_text(encoding="utf-8"))["sets"]["lookalike"]
    table = np.fromfile(book / "live" / meta["vectors"]["minilm"]["path"], dtype="<f4").astype(np.float64)
    table = table.reshape(meta["rows"], meta["dim"])
    return meta, {name: table[start:start + n] for name, (start, n) in meta["blocks"].items()}


def measure(meta: dict, v: dict, W: np.ndarray) -> dict:
    """The experiment's exam (benchmarks/lookalike_experiment.py Exam.measure) on the stored vectors."""
    from labs.lessons.adapter import adapt

    U = adapt(W, v["Qh"])
    pair = np.einsum("ij,ij->i", U, v["Ph"]) > np.einsum("ij,ij->i", U, v["Lh"])
    p = meta["heldOut"]["password"]
    s = v["D"] @ U[p]
    return {"accuracy": float(pair.mean()), "pair": pair.tolist(),
            "passwordRank": int(1 + (s > s[meta["heldOut"]["answer"][p]]).sum())}


def labs_run(meta: dict, v: dict, arm: str, steps: int, seed: int, tau: float):
    from labs.lessons import adapter as ad

    plan = ad.batch_plan(len(meta["train"]["topics"]), meta["train"]["wordings"], ad.BATCH, steps, seed)
    return ad.train_adapter(v["Q"], v["P"], v["L"] if arm == "lookalike" else None, plan, steps=steps, tau=tau)


@pytest.fixture(scope="module")
def lesson(browser, live_url, outside):
    s = Session(browser, live_url, outside, **DESKTOP)
    s.open(PAGE)
    yield s
    s.close()


def run(s: Session, live_url: str, arm: str, steps: int, seed: int, tau: float, grad_only: bool = False) -> dict:
    return s.page.evaluate(RUN, [live_url, arm, steps, seed, tau, grad_only])


def train_in_demo(page, arm: str | None = None, source: str | None = None, **boxes) -> dict:
    """Set the demo's controls, press Train, and wait for a new run or a problem line; the demo's state."""
    d = demo(page, "adapter")
    if arm:
        d.locator(f"input[type=radio][value={arm}]").check()
    if source:
        d.locator(f"input[type=radio][value={source}]").check()
    for label, value in boxes.items():
        d.get_by_label({"tau": "Temperature \u03c4", "steps": "Steps", "seed": "Seed"}[label], exact=True).fill(str(value))
    before = len(state(page, "adapter")["runs"])
    d.get_by_role("button", name="Train").click()
    return until(page, "adapter", "!s.busy && (s.runs.length > arg || s.problem)", before)


# ---- the stored vectors are the experiment's ----------------------------------------------


def test_stored_vectors_give_the_committed_results(book):
    """On the page's vectors, labs gives the experiment's untouched exam and seed 0 of both arms."""
    meta, v = stored(book)
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    assert meta["heldOut"]["questions"][meta["heldOut"]["password"]] == results["data"]["password_question"]
    untouched = measure(meta, v, np.eye(meta["dim"]))
    assert untouched["accuracy"] == results["untouched"]["pair"]
    assert untouched["passwordRank"] == results["untouched"]["password_rank"]
    for arm in ("inbatch", "lookalike"):
        W, _ = labs_run(meta, v, arm, meta["defaults"]["steps"], 0, meta["defaults"]["tau"])
        got = measure(meta, v, W)
        committed = results["adapter"]["arms"][arm]
        assert round(got["accuracy"], 4) == committed["pair"]["per_seed"][0], arm
        assert got["passwordRank"] == committed["password_rank"][0], arm


# ---- adapter.mjs against torch and labs ----------------------------------------------------------


def torch_loss(W: torch.Tensor, Q: torch.Tensor, columns: torch.Tensor, tau: float) -> torch.Tensor:
    """The adapter's InfoNCE in torch, for autograd: unit(Q W^T) against the columns as stored. (labs'
    ``train_adapter_torch`` also rescales the columns to length 1, which moves float32-unit vectors
    by about 1e-7, and the loss by about 1e-8: more than EXACT.)"""
    A = Q @ W.T
    U = A / A.norm(dim=1, keepdim=True)
    return torch.nn.functional.cross_entropy(U @ columns.T / tau, torch.arange(len(Q)))


def torch_run(v: dict, arm: str, plan: np.ndarray, steps: int, tau: float, lr: float) -> np.ndarray:
    """W after ``steps`` plain SGD steps, each gradient by torch autograd in float64."""
    Q, P, L = (torch.tensor(v[k]) for k in ("Q", "P", "L"))
    W = torch.eye(Q.shape[1], dtype=torch.float64, requires_grad=True)
    for rows in plan[:steps]:
        idx = torch.as_tensor(rows)
        columns = P[idx] if arm == "inbatch" else torch.cat([P[idx], L[idx]])
        (grad,) = torch.autograd.grad(torch_loss(W, Q[idx], columns, tau), W)
        with torch.no_grad():
            W -= lr * grad
    return W.detach().numpy()


@pytest.mark.parametrize("arm, seed, tau", [("inbatch", 0, 0.05), ("lookalike", 3, 0.05), ("lookalike", 1, 0.5)])
def test_gradient_at_step_one_is_torch_autograd(lesson, live_url, book, arm, seed, tau):
    from labs.lessons.adapter import batch_plan

    meta, v = stored(book)
    got = run(lesson, live_url, arm, 1, seed, tau, grad_only=True)
    plan = batch_plan(len(meta["train"]["topics"]), meta["train"]["wordings"], meta["defaults"]["batch"], 1, seed)
    assert got["plan"] == plan.tolist()
    rows = torch.as_tensor(plan[0])
    Q, P, L = (torch.tensor(v[k]) for k in ("Q", "P", "L"))
    columns = P[rows] if arm == "inbatch" else torch.cat([P[rows], L[rows]])
    W = torch.eye(meta["dim"], dtype=torch.float64, requires_grad=True)
    loss = torch_loss(W, Q[rows], columns, tau)
    (grad,) = torch.autograd.grad(loss, W)
    assert abs(got["loss"] - loss.item()) <= EXACT
    dW = np.array(got["dW"]).reshape(meta["dim"], meta["dim"])
    assert np.abs(dW - grad.numpy()).max() <= EXACT
    assert np.abs(grad.numpy()).max() > 1e-3  # a gradient, not zeros


@pytest.mark.parametrize("arm", ["inbatch", "lookalike"])
def test_matrix_after_50_steps_is_torch_and_labs(lesson, live_url, book, arm):
    from labs.lessons import adapter as ad

    meta, v = stored(book)
    got = run(lesson, live_url, arm, 50, 0, meta["defaults"]["tau"])
    plan = ad.batch_plan(len(meta["train"]["topics"]), meta["train"]["wordings"], ad.BATCH, 50, 0)
    W_torch = torch_run(v, arm, plan, 50, meta["defaults"]["tau"], meta["defaults"]["lr"])
    W_labs, losses = ad.train_adapter(v["Q"], v["P"], v["L"] if arm == "lookalike" else None, plan, steps=50)
    W = np.array(got["W"]).reshape(meta["dim"], meta["dim"])
    assert np.abs(W - W_torch).max() <= EXACT
    assert np.abs(W - W_labs).max() <= EXACT
    assert np.abs(np.array(got["losses"]) - losses).max() <= EXACT
    assert np.abs(W - np.eye(meta["dim"])).max() > 1e-3  # it moved


# ---- the demo ------------------------------------------------------------------------------------


def test_demo_runs_both_arms_as_labs(lesson, book):
    """Train with the defaults (look-alike arm), then the in-batch arm: the page's numbers are labs'."""
    meta, v = stored(book)
    page = lesson.page
    first = train_in_demo(page)
    assert not first.get("problem"), first.get("problem")
    second = train_in_demo(page, arm="inbatch")
    assert [r["arm"] for r in second["runs"]] == ["lookalike", "inbatch"]
    for r in second["runs"]:
        W, losses = labs_run(meta, v, r["arm"], r["steps"], r["seed"], r["tau"])
        want = measure(meta, v, W)
        assert (r["steps"], r["seed"], r["tau"]) == (meta["defaults"]["steps"], 0, meta["defaults"]["tau"])
        assert np.abs(np.array(r["losses"]) - losses).max() <= EXACT
        assert r["pair"] == want["pair"] and r["accuracy"] == want["accuracy"]
        assert r["passwordRank"] == want["passwordRank"]
    assert second["untouched"] == {**measure(meta, v, np.eye(meta["dim"]))}
    d = demo(page, "adapter")
    text = d.locator("table").first.inner_text()
    assert "+ look-alikes" in text and "in-batch" in text
    summary = d.locator(".live-summary").inner_text()
    assert f"rank {second['runs'][1]['passwordRank']} of 32" in summary
    assert d.locator("svg.live-loss polyline").count() == 1
    assert not lesson.live_errors()


def ranked(page, question: str) -> dict:
    """Ask ``question`` in the adapter demo's own form and return its new ranking (not an earlier one of the same question)."""
    d = demo(page, "adapter")
    before = (state(page, "adapter").get("own") or {}).get("count", 0)
    d.get_by_label("Your question, ranked among the 84 articles of the set").fill(question)
    d.get_by_role("button", name="Rank").click()
    return until(page, "adapter", "s.own && s.own.question === arg[0] && s.own.count > arg[1]",
                 [question, before])["own"]


def mark(page, article: str, what: str) -> None:
    name = ("Right article for your question: " if what == "right" else "Wrong for your question, its look-alike: ")
    demo(page, "adapter").get_by_role("button", name=name + article, exact=True).click()


def test_bad_input_is_one_line_and_no_training(lesson):
    page = lesson.page
    d = demo(page, "adapter")
    runs = len(state(page, "adapter")["runs"])
    cases = [({"steps": 0}, "Steps must be a whole number from 1 to 500"),
             ({"steps": 501}, "Steps must be a whole number from 1 to 500"),
             ({"steps": 2.5}, "Steps must be a whole number"),
             ({"tau": 0.001}, "\u03c4 must be a number from 0.01 to 2"),
             ({"tau": 3}, "\u03c4 must be a number from 0.01 to 2"),
             ({"tau": ""}, "\u03c4 must be a number"),
             ({"seed": -1}, "The seed must be a whole number")]
    for boxes, line in cases:
        got = train_in_demo(page, source="lesson", **{"steps": 100, "tau": 0.05, "seed": 0, **boxes})
        assert got["problem"].startswith(line), (boxes, got["problem"])
        assert len(got["runs"]) == runs, boxes
        assert d.locator(".live-problem").inner_text().count("\n") == 0
    got = train_in_demo(page, source="yours", steps=100, tau=0.05, seed=0)
    assert got["problem"].startswith("No pairs yet") and len(got["runs"]) == runs
    ranked(page, "how can I change my password")
    mark(page, "password/steps", "right")
    got = train_in_demo(page, source="yours")
    assert got["problem"].startswith("One pair cannot train") and len(got["runs"]) == runs
    ranked(page, "where do I update my card number")
    mark(page, "card/steps", "right")
    mark(page, "card/steps", "wrong")
    got = train_in_demo(page, source="yours")
    assert "is its right article itself" in got["problem"] and len(got["runs"]) == runs
    assert d.locator(".live-problem").is_visible()
    # fixed: the pairs train, and the line goes
    mark(page, "card/look-alike", "wrong")
    got = train_in_demo(page, arm="lookalike", source="yours")
    assert not got["problem"] and len(got["runs"]) == runs + 1
    assert not d.locator(".live-problem").is_visible()
    moved = {m["question"]: m for m in got["moved"]}
    assert set(moved) == {"how can I change my password", "where do I update my card number"}
    for m in moved.values():
        assert m["on"] == 1 and m["topOn"] == m["answer"], m
    # the reader's own question, asked again, is ranked with the adapter on
    own = ranked(page, "where do I update my card number")
    assert own["ranking"][0]["id"] == "card/steps"
    assert "adapter of your last run on" in d.locator(".live-own-form ~ .live-message").first.inner_text()
    assert not lesson.live_errors()


# ---- every reader --------------------------------------------------------------------------------


def test_every_reader_keyboard_names_and_phone(browser, live_url, outside):
    """At 390 px: nothing cut, every control named, axe-core clean; the keyboard alone trains (Tab to a
    box, Enter); focus is visible; the result is aria-live; no long task on the page's thread meanwhile."""
    s = Session(browser, live_url, outside, **PHONE)
    try:
        s.context.add_init_script(LONG_SCRIPTS)
        page = s.open(PAGE)
        d = demo(page, "adapter")
        d.scroll_into_view_if_needed()
        assert not cut_demos(page), "cut at 390 px"
        assert not unnamed(page, ".live-demo input, .live-demo button, .live-demo select")
        assert d.locator(".live-summary[aria-live=polite]").count() == 1
        assert d.locator(".live-problem[aria-live=polite]").count() == 1
        steps = d.get_by_label("Steps", exact=True)
        steps.focus()
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Tab")  # focus arrives by keyboard: the ring shows
        ring = steps.evaluate("e => { const c = getComputedStyle(e); return [e.matches(':focus-visible'), c.outlineStyle, c.outlineWidth]; }")
        assert ring[0] and ring[1] != "none" and ring[2] != "0px", ring
        steps.fill("40")
        t0 = page.evaluate("() => performance.now()")
        page.keyboard.press("Enter")
        got = until(page, "adapter", "s.runs.length")
        assert got["runs"][0]["steps"] == 40 and len(got["runs"][0]["losses"]) == 40
        assert page.evaluate("() => PerformanceObserver.supportedEntryTypes.includes('long-animation-frame')")
        slow = page.evaluate("([t0, ms]) => window.__scripts.filter(e => e[0] >= t0 && e[2].includes('/live/') && e[1] > ms)",
                             [t0, LONG_TASK_MS])
        assert not slow, f"the demo's scripts ran over {LONG_TASK_MS} ms on the page's thread: {slow}"
        assert d.evaluate("d => d.scrollWidth <= d.clientWidth + 1 && d.getBoundingClientRect().right <= innerWidth + 1")
        assert not axe_problems(page, ".live-demo[data-live=adapter]")
        small = d.evaluate("d => [...d.querySelectorAll('*')].filter(e => e.childNodes.length && [...e.childNodes].some(n => "
                           "n.nodeType === 3 && n.textContent.trim()) && parseFloat(getComputedStyle(e).fontSize) * "
                           "(e.closest('svg') ? e.closest('svg').getBoundingClientRect().width / e.closest('svg').viewBox.baseVal.width : 1)"
                           " < 10).map(e => e.textContent.slice(0, 30))")
        assert not small, small
        assert not s.live_errors()
    finally:
        s.close()


def test_nothing_loads_before_the_reader_acts(browser, live_url, outside):
    """Lesson 5 scrolled through, every control of the demo tabbed past and the question box focused: only
    the page files every demo page fetches; a press of Train then fetches the set's vectors (not the model)."""
    s = Session(browser, live_url, outside, **DESKTOP)
    try:
        page = s.open(PAGE)
        page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
        d = demo(page, "adapter")
        d.locator("input").first.focus()
        for _ in range(20):
            page.keyboard.press("Tab")
        d.get_by_label("Your question, ranked among the 84 articles of the set").focus()
        page.wait_for_timeout(300)
        fetched = {p.split("?")[0] for p in s.live_requests()}
        assert fetched == {"/live/stored.js", "/live/maths.js", "/live/demos.js", "/live/live.css"}, fetched
        d.get_by_role("button", name="Train").click()
        until(page, "adapter", "s.runs.length")
        fetched = {p.split("?")[0] for p in s.live_requests()}
        assert "/live/vectors/lookalike-minilm.f32" in fetched
        assert not [p for p in fetched if p.startswith(("/live/models/", "/live/runtime/", "/live/worker.mjs"))], fetched
        assert not s.live_errors()
    finally:
        s.close()
