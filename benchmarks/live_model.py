"""Benchmark: the book's in-page model (the live demos) against the Python model, in one run.

Serves the built book on 127.0.0.1 (every other request refused), opens the page with one demo of
each kind (tools/book/live_page.py) in headless Chromium, and measures:

- the first load in a fresh browser (cold: the network, an empty cache) and a second one after a
  reload (warm: this browser's Cache Storage), each as the page times it, from the reader's first
  use to the model ready, with the bytes the server sent for it;
- the time to embed one question, the median over the same texts (lesson 1's help questions) in
  the page (all-MiniLM-L6-v2 with 8-bit weights, onnxruntime-web, one WebAssembly thread), in
  Python with sentence-transformers (torch, float32, this machine's threads) and in Python with
  onnxruntime on the same 8-bit file (one thread): their ratios.

    python benchmarks/live_model.py [--html-root _build/html] [--queries 40]

Timings on a shared machine vary run to run; the ratios inside one run are what to compare.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/ and tools/ are not installed packages

from tools.book import browser, live_page  # noqa: E402

LOAD = """async needs => {
    const m = await import(window.labsLive.root + 'live/model.mjs?v=' + window.labsLiveStored.version);
    const ctx = await m.prepare(needs);
    return ctx.report;
}"""
EMBED = """async texts => {
    const m = await import(window.labsLive.root + 'live/model.mjs?v=' + window.labsLiveStored.version);
    const model = (await m.prepare({models: ['minilm'], sets: []})).models.minilm;
    await model.embed('a first question, to warm up');
    const ms = [];
    for (const t of texts) { const t0 = performance.now(); await model.embed(t); ms.push(performance.now() - t0); }
    return ms;
}"""


class Counting(browser.Quiet):
    """The book's files, counting the bytes of every response body sent."""

    sent = 0
    lock = threading.Lock()

    def copyfile(self, source, outputfile):
        data = source.read()
        with Counting.lock:
            Counting.sent += len(data)
        outputfile.write(data)


def serve_counting(root: Path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Counting, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{model}, {os.cpu_count()} cores, load average {load:.1f} at the start"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python benchmarks/live_model.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--html-root", default="_build/html", help="the built book (make book)")
    parser.add_argument("--queries", type=int, default=40, help="questions embedded one at a time, on each side")
    args = parser.parse_args(argv)

    from playwright.sync_api import sync_playwright

    from labs.lessons.help_articles import PRODUCTS, help_questions
    from labs.retrieval.models import load_minilm
    from tools.live_model import OnnxEncoder, _minilm_folder, max_tokens

    texts = [q for q, _ in help_questions(list(PRODUCTS), (1, 2))][: args.queries]
    started = machine()
    out: dict = {"machine": started, "queries": len(texts)}
    with tempfile.TemporaryDirectory() as tmp:
        site = live_page.mirror(Path(args.html_root).resolve(), Path(tmp) / "html")
        server, base = serve_counting(site)
        try:
            with sync_playwright() as pw:
                chromium = pw.chromium.launch(executable_path=browser.CHROMIUM, headless=True, args=browser.FLAGS)
                # No request routing here: Playwright turns the browser's HTTP cache off for a routed
                # context, and the warm load is the cached one (tests/book/test_live.py holds that
                # nothing leaves the book).
                context = chromium.new_context()
                page = context.new_page()
                for name in ("cold", "warm"):
                    page.goto(f"{base}/{live_page.FIXTURE}", wait_until="load")
                    page.wait_for_function("() => window.labsLive && window.labsLive.start && window.labsLiveStored")
                    Counting.sent = 0
                    wall = time.perf_counter()
                    report = page.evaluate(LOAD, {"models": ["minilm"], "sets": ["search"]})
                    out[f"{name}_load_s"] = round(report["seconds"], 2)
                    out[f"{name}_load_wall_s"] = round(time.perf_counter() - wall, 2)
                    out[f"{name}_bytes_sent"] = Counting.sent
                    out[f"{name}_model_files_bytes"] = report["totalBytes"]
                    out[f"{name}_session_s"] = round(report["sessionSeconds"], 2)
                page_ms = page.evaluate(EMBED, texts)
                chromium.close()
        finally:
            server.shutdown()

    model = load_minilm()
    model.encode(["a first question, to warm up"])
    python_ms = []
    for text in texts:
        t0 = time.perf_counter()
        model.encode([text], normalize_embeddings=True)
        python_ms.append(1000 * (time.perf_counter() - t0))
    live = ROOT / "_live" / "work" / "minilm" / "model_quantized.onnx"
    encoder = OnnxEncoder(live, _minilm_folder(), max_tokens(_minilm_folder()))
    encoder.encode(["a first question, to warm up"])
    onnx_ms = []
    for text in texts:
        t0 = time.perf_counter()
        encoder.encode([text])
        onnx_ms.append(1000 * (time.perf_counter() - t0))

    med = {k: statistics.median(v) for k, v in (("page", page_ms), ("python", python_ms), ("onnx", onnx_ms))}
    out.update(query_ms_page=round(med["page"], 1), query_ms_sentence_transformers=round(med["python"], 1),
               query_ms_onnxruntime_python=round(med["onnx"], 1),
               ratio_page_to_sentence_transformers=round(med["page"] / med["python"], 2),
               ratio_page_to_onnxruntime_python=round(med["page"] / med["onnx"], 2))
    print(f"Machine: {out['machine']}")
    print(f"Model load, first use to ready (the page's own timing; wall time in brackets):")
    for name in ("cold", "warm"):
        print(f"  {name}: {out[f'{name}_load_s']:.2f} s ({out[f'{name}_load_wall_s']:.2f} s), "
              f"{out[f'{name}_bytes_sent'] / 1e6:.1f} MB sent by the book "
              f"(the model's files: {out[f'{name}_model_files_bytes'] / 1e6:.1f} MB); making the ONNX session "
              f"{out[f'{name}_session_s']:.2f} s of it")
    print(f"One question, median of {len(texts)}: page {med['page']:.1f} ms, sentence-transformers {med['python']:.1f} ms "
          f"(ratio {out['ratio_page_to_sentence_transformers']:.2f}), onnxruntime in Python on the same file "
          f"{med['onnx']:.1f} ms (ratio {out['ratio_page_to_onnxruntime_python']:.2f})")
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
