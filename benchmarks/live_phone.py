"""Benchmark: the live demos on a slow phone, two builds of the book side by side, in one run.

Serves each built book as static hosts serve it (gzip for HTML, CSS, JS, JSON and wasm; the
model's ``.onnx`` and ``.gz`` and the vectors' ``.f32`` as they are) and opens its lesson pages in headless
Chromium under a phone profile:

- 390 x 844 px, touch;
- the CPU slowed 4x (DevTools ``Emulation.setCPUThrottlingRate``). Chromium slows the page's
  thread only: on a worker the call answers "Operation is only supported for pages, not workers".
  Where the model runs in a worker, the run also reports the worker's session time and adds
  three times it (the model's start at a quarter of the speed) as ``worker_4x_estimate_s``;
- 20 Mbit/s down and 40 ms before each response, enforced by the server itself for every request
  (DevTools' network emulation does not reach a worker's requests in every Chromium), every
  connection sharing the one rate.

For each build it reports, from a fresh browser (an empty cache):

- the lesson page itself before any demo is used: seconds to ``load`` and MB on the wire;
- lesson 1's search: a question typed, until the page's own ranking of it (not a stored one);
  lesson 7's comparison likewise (two models): seconds and MB on the wire from the first key;
- the longest task on the page's main thread during that time (``longtask`` observer), and each
  long animation frame over 200 ms with the scripts that ran in it (file, what called it, ms) and
  the rest of its time (style, layout, paint, and what the machine's other jobs took);
- on a desktop profile (1280 px, no throttling): lesson 1's first ranking cold, then warm (a
  reload: the model from this browser's Cache Storage), and the next question's latency in the
  page (median of ``--queries``) against sentence-transformers in Python on this machine.

    python benchmarks/live_phone.py --old /work/wt/baseline-book --new _build/html

MB on the wire are the response bodies the server sent (compressed where it compresses). Timings on a shared machine vary run to run: the machine's load is printed.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import io
import json
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tools/ is not an installed package

from benchmarks.live_model import machine  # noqa: E402
from tools.book import browser  # noqa: E402

GZIP = (".html", ".css", ".js", ".mjs", ".json", ".wasm", ".svg", ".txt", ".map")  # what static hosts compress
PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True}
DESKTOP = {"viewport": {"width": 1280, "height": 900}}
RATE = 20e6 / 8  # bytes a second, down
LATENCY = 0.040  # seconds before each response
CPU = 4
LONG_TASKS = """window.__longTasks = []; window.__frames = [];
new PerformanceObserver(l => { for (const e of l.getEntries()) window.__longTasks.push([e.startTime, e.duration]); })
    .observe({type: 'longtask', buffered: true});
new PerformanceObserver(l => { for (const f of l.getEntries()) window.__frames.push([f.startTime, f.duration,
    (f.scripts || []).map(s => [s.duration, s.sourceURL.split('?')[0].split('/').slice(-2).join('/'), s.invoker,
    s.forcedStyleAndLayoutDuration])]); }).observe({type: 'long-animation-frame', buffered: true});"""
LONG = 200  # ms: a main-thread task the reader feels
#: What the long animation frames over LONG ms spent their time on: the scripts in them (file, invoker,
#: ms), and the rest of the frame (style, layout, paint, and what the machine's other jobs took).
FRAMES = """([t0, long]) => window.__frames.filter(f => f[0] >= t0 && f[1] > long).map(f => ({ms: Math.round(f[1]),
    scripts: f[2].filter(s => s[0] >= 20).map(s => `${s[1] || '(none)'} ${s[2]} ${Math.round(s[0])} ms`
        + (s[3] >= 20 ? ` (forced layout ${Math.round(s[3])} ms)` : '')),
    rest_ms: Math.round(f[1] - f[2].reduce((a, s) => a + s[0], 0))}))"""
QUESTION = "my kettle is leaking water"
WAIT = """([kind, want]) => new Promise((ok, no) => { const t0 = Date.now(); (function poll() {
    const d = document.querySelector('.live-demo[data-live=' + kind + ']'), s = d && d.labsLive;
    if (s && s.query === want && s.rankings && !s.stored) return ok(performance.now());
    if (s && s.status === 'fallback') return no(new Error(s.fallback));
    if (Date.now() - t0 > 600000) return no(new Error('no ranking')); setTimeout(poll, 10); })(); })"""
LESSONS = {"search": "notebooks/01_pooling.html", "compare": "notebooks/07_finetuning.html"}


class Link:
    """The one downlink every connection shares: RATE bytes a second."""

    def __init__(self, rate: float | None):
        self.rate = rate
        self.lock = threading.Lock()
        self.free_at = time.monotonic()
        self.sent = 0

    def send(self, out, data: bytes) -> None:
        for at in range(0, len(data), 16384):
            chunk = data[at:at + 16384]
            if self.rate:
                with self.lock:
                    now = time.monotonic()
                    start = max(now, self.free_at)
                    self.free_at = start + len(chunk) / self.rate
                    wait = self.free_at - now
                time.sleep(wait)
            out.write(chunk)
            with self.lock:
                self.sent += len(chunk)


class Static(browser.Quiet):
    """A static host: gzip where it compresses, the link's rate and latency on every response."""

    link: Link = Link(None)
    latency = 0.0
    cache: dict = {}

    def send_head(self):
        path = self.translate_path(self.path)
        if self.latency:
            time.sleep(self.latency)
        if not Path(path).is_file() or not path.endswith(GZIP) or "gzip" not in self.headers.get("Accept-Encoding", ""):
            return super().send_head()
        body = Static.cache.get(path)
        if body is None:
            body = Static.cache[path] = gzip.compress(Path(path).read_bytes(), 6)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        return io.BytesIO(body)

    def copyfile(self, source, outputfile):
        self.link.send(outputfile, source.read())


def serve(root: Path, rate: float | None, latency: float):
    link = Link(rate)
    handler = type("Handler", (Static,), {"link": link, "latency": latency})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}", link


def first_ranking(chromium, base: str, kind: str, profile: dict, cpu: int, link: Link) -> dict:
    context = chromium.new_context(**profile)
    context.set_default_timeout(600_000)  # a loaded machine under the phone profile is slow, not broken
    context.add_init_script(LONG_TASKS)
    page = context.new_page()
    if cpu > 1:
        context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": cpu})
    link.sent = 0
    t = time.perf_counter()
    page.goto(f"{base}/{LESSONS[kind]}", wait_until="load")
    page_s = time.perf_counter() - t
    page.wait_for_function("() => document.querySelectorAll('.live-demo.live-built').length === "
                           "document.querySelectorAll('.live-demo').length")
    page.wait_for_timeout(1000)
    page_bytes = link.sent
    link.sent = 0
    box = page.locator(f'.live-demo[data-live="{kind}"] input').first
    box.scroll_into_view_if_needed()
    t0 = page.evaluate("() => performance.now()")
    box.click()
    page.keyboard.type(QUESTION)
    done = page.evaluate(WAIT, [kind, QUESTION])
    tasks = page.evaluate("t0 => window.__longTasks.filter(e => e[0] >= t0).map(e => e[1])", t0)
    frames = page.evaluate(FRAMES, [t0, LONG])
    loaded = page.evaluate(f"() => document.querySelector('.live-demo[data-live={kind}]').labsLive.loaded || null")
    in_worker = page.evaluate("() => performance.getEntriesByType('resource').some(e => e.name.includes('/live/worker.mjs'))")
    out = {"page_s": round(page_s, 2), "page_MB": round(page_bytes / 1e6, 2),
           "first_ranking_s": round((done - t0) / 1000, 2), "MB": round(link.sent / 1e6, 2),
           "longest_task_ms": round(max(tasks, default=0)), "long_tasks": len(tasks), "model_in_worker": in_worker,
           "frames_over_200ms": frames}
    if in_worker and loaded and cpu > 1:
        out["worker_session_s"] = round(loaded["sessionSeconds"], 2)
        out["worker_4x_estimate_s"] = round(out["first_ranking_s"] + (cpu - 1) * loaded["sessionSeconds"], 2)
    out["_context"] = context
    out["_page"] = page
    return out


def run_build(chromium, root: Path, queries: list[str]) -> dict:
    result: dict = {}
    server, base, link = serve(root, RATE, LATENCY)
    try:
        for kind in LESSONS:
            r = first_ranking(chromium, base, kind, PHONE, CPU, link)
            r.pop("_context").close()
            r.pop("_page")
            result[f"phone_{kind}"] = r
    finally:
        server.shutdown()
    server, base, link = serve(root, None, 0.0)
    try:
        cold = first_ranking(chromium, base, "search", DESKTOP, 1, link)
        context, page = cold.pop("_context"), cold.pop("_page")
        link.sent = 0
        page.reload(wait_until="load")
        page.wait_for_function("() => document.querySelectorAll('.live-demo.live-built').length === "
                               "document.querySelectorAll('.live-demo').length")
        box = page.locator('.live-demo[data-live="search"] input').first
        t0 = page.evaluate("() => performance.now()")
        box.click()
        page.keyboard.type(QUESTION)
        done = page.evaluate(WAIT, ["search", QUESTION])
        warm = {"first_ranking_s": round((done - t0) / 1000, 2), "MB": round(link.sent / 1e6, 2)}
        ms = []
        for q in queries:
            t = page.evaluate("() => performance.now()")
            box.fill(q)
            end = page.evaluate(WAIT, ["search", q])
            ms.append(end - t)
        context.close()
        result["desktop_cold"] = cold
        result["desktop_warm"] = warm
        result["query_ms_page"] = round(statistics.median(ms), 1)
    finally:
        server.shutdown()
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python benchmarks/live_phone.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", default=None, help="an earlier built book, measured first (optional)")
    parser.add_argument("--new", default="_build/html", help="the built book (make book)")
    parser.add_argument("--queries", type=int, default=20, help="questions for the next-question latency")
    args = parser.parse_args(argv)

    from playwright.sync_api import sync_playwright

    from labs.lessons.help_articles import PRODUCTS, help_questions
    from labs.retrieval.models import load_minilm

    queries = [q for q, _ in help_questions(list(PRODUCTS), (1, 2))][: args.queries]
    out: dict = {"machine": machine(), "profile": f"phone: 390 px, touch, CPU {CPU}x, {RATE * 8 / 1e6:.0f} Mbit/s down, "
                 f"{LATENCY * 1000:.0f} ms a response; gzip for {' '.join(GZIP)}, .onnx, .gz and .f32 as they are"}
    builds = {name: Path(path).resolve() for name, path in (("old", args.old), ("new", args.new)) if path}
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=browser.CHROMIUM, headless=True, args=browser.FLAGS)
        for name, root in builds.items():
            out[name] = run_build(chromium, root, queries)
        chromium.close()
    model = load_minilm()
    model.encode(["a first question, to warm up"])
    python_ms = []
    for text in queries:
        t0 = time.perf_counter()
        model.encode([text], normalize_embeddings=True)
        python_ms.append(1000 * (time.perf_counter() - t0))
    out["query_ms_sentence_transformers"] = round(statistics.median(python_ms), 1)

    print(f"Machine: {out['machine']}")
    print(f"Profile: {out['profile']}")
    for name in builds:
        r = out[name]
        print(f"{name} ({builds[name]}):")
        for kind in LESSONS:
            p = r[f"phone_{kind}"]
            print(f"  phone, {LESSONS[kind]}: page {p['page_s']} s / {p['page_MB']} MB before any demo; "
                  f"typed question to the first ranking {p['first_ranking_s']} s, {p['MB']} MB on the wire "
                  f"({p['MB'] * 1e6 / RATE:.1f} s of them on the link alone); "
                  f"longest main-thread task {p['longest_task_ms']} ms ({p['long_tasks']} over 50 ms)"
                  + (f"; the worker's model start {p['worker_session_s']} s at full speed, so about "
                     f"{p['worker_4x_estimate_s']} s with it slowed {CPU}x too" if "worker_4x_estimate_s" in p else ""))
            for f in p["frames_over_200ms"]:
                print(f"    a {f['ms']} ms frame: {'; '.join(f['scripts']) or 'no script over 20 ms'}; the rest {f['rest_ms']} ms")
        print(f"  desktop, lesson 1: cold {r['desktop_cold']['first_ranking_s']} s ({r['desktop_cold']['MB']} MB), "
              f"warm {r['desktop_warm']['first_ranking_s']} s ({r['desktop_warm']['MB']} MB); next question "
              f"{r['query_ms_page']} ms in the page against {out['query_ms_sentence_transformers']} ms in Python "
              f"(sentence-transformers), ratio {r['query_ms_page'] / out['query_ms_sentence_transformers']:.2f}")
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
