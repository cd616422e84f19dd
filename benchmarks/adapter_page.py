"""Benchmark: lesson 5's adapter trained in the page, beside torch float64 on the same data, on a desktop and a phone profile.

Serves the built book (tools/book/browser.py's server) and opens lesson 5 in headless Chromium:

- desktop: 1280 x 900 px, the CPU as it is;
- phone: 390 x 844 px, touch, the CPU slowed 4x (DevTools ``Emulation.setCPUThrottlingRate``).
  Chromium slows the page's thread only, never a worker's; the adapter trains on the page's
  thread (in slices of about 25 ms, book/live/adapter.mjs), so the slowdown applies to all of
  the training measured here. (The model that embeds the reader's own questions runs in a worker
  and is not part of this run.)

For each profile, from a fresh browser: the demo's default run (the look-alike arm, 100 steps,
tau 0.05, seed 0) from the press of Train to the result on the page (cold: the set's vectors
fetched first; then warm: a second press), the page's training time per step (the slices alone,
without the pauses between them), and the longest task on the page's main thread meanwhile.

The peer, in this process on this machine and on the same stored vectors and batch plan:
``labs.lessons.adapter.train_adapter_torch`` (torch autograd, float64) and ``train_adapter``
(numpy, the hand gradient), 100 steps each on one thread as the page, best of ``--repeats``. The
ratio is the page's steps a second over torch's. The longest task on the page's thread is reported
twice: the whole task (which also counts what the machine's other jobs take from the browser) and
the demo's own scripts in it (long-animation-frame attribution, as tests/book/test_live.py holds).

    nice -n 10 python benchmarks/adapter_page.py --html-root _build/html

Timings on a shared machine vary run to run: the machine's load is printed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tools/ is not an installed package

from benchmarks.live_model import machine  # noqa: E402
from tools.book import browser  # noqa: E402

PAGE = "notebooks/05_hard_negatives.html"
PROFILES = {"desktop": ({"viewport": {"width": 1280, "height": 900}}, 1),
            "phone": ({"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True}, 4)}
LONG_TASKS = """window.__longTasks = []; window.__scripts = [];
new PerformanceObserver(l => { for (const e of l.getEntries()) window.__longTasks.push([e.startTime, e.duration]); })
    .observe({type: 'longtask', buffered: true});
new PerformanceObserver(l => { for (const f of l.getEntries()) for (const s of f.scripts || [])
    window.__scripts.push([s.startTime, s.duration, s.sourceURL]); })
    .observe({type: 'long-animation-frame', buffered: true});"""
WAIT = """(n) => new Promise((ok, no) => { const t0 = Date.now(); (function poll() {
    const s = document.querySelector('.live-demo[data-live=adapter]').labsLive;
    if (!s.busy && s.runs.length >= n) return ok(performance.now());
    if (s.problem) return no(new Error(s.problem));
    if (Date.now() - t0 > 600000) return no(new Error('no run')); setTimeout(poll, 10); })(); })"""


def page_runs(chromium, base: str, profile: dict, cpu: int) -> dict:
    context = chromium.new_context(**profile)
    context.set_default_timeout(600_000)
    context.add_init_script(LONG_TASKS)
    page = context.new_page()
    if cpu > 1:
        context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": cpu})
    page.goto(f"{base}/{PAGE}", wait_until="load")
    page.wait_for_function("() => document.querySelector('.live-demo[data-live=adapter]').labsLive")
    button = page.locator('.live-demo[data-live="adapter"]').get_by_role("button", name="Train")
    button.scroll_into_view_if_needed()
    out = {}
    for n, name in ((1, "cold"), (2, "warm")):
        t0 = page.evaluate("() => performance.now()")
        button.click()
        done = page.evaluate(WAIT, n)
        run = page.evaluate("() => document.querySelector('.live-demo[data-live=adapter]').labsLive.last")
        tasks = page.evaluate("t0 => window.__longTasks.filter(e => e[0] >= t0).map(e => e[1])", t0)
        scripts = page.evaluate("t0 => window.__scripts.filter(e => e[0] >= t0 && e[2].includes('/live/')).map(e => e[1])", t0)
        out[name] = {"train_to_result_s": round((done - t0) / 1000, 2), "step_ms": round(run["stepMs"], 2),
                     "steps_per_s": round(1000 / run["stepMs"], 1), "accuracy": run["accuracy"],
                     "longest_task_ms": round(max(tasks, default=0)), "long_tasks": len(tasks),
                     "longest_demo_script_ms": round(max(scripts, default=0))}
    context.close()
    return out


def python_peer(html_root: Path, repeats: int) -> dict:
    import torch

    from labs.lessons import adapter as ad

    torch.set_num_threads(1)  # the page trains on one thread too
    meta = json.loads((html_root / "live" / "manifest.json").read_text(encoding="utf-8"))["sets"]["lookalike"]
    table = np.fromfile(html_root / "live" / meta["vectors"]["minilm"]["path"], dtype="<f4").astype(np.float64)
    table = table.reshape(meta["rows"], meta["dim"])
    Q, P, L = (table[s:s + n] for s, n in (meta["blocks"][k] for k in ("Q", "P", "L")))
    steps = meta["defaults"]["steps"]
    plan = ad.batch_plan(len(meta["train"]["topics"]), meta["train"]["wordings"], ad.BATCH, steps, 0)
    out = {}
    for name, fn in (("torch_float64", ad.train_adapter_torch), ("numpy_by_hand", ad.train_adapter)):
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn(Q, P, L, plan, steps=steps)
            best = min(best, time.perf_counter() - t0)
        out[name] = {"step_ms": round(1000 * best / steps, 2), "steps_per_s": round(steps / best, 1)}
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python benchmarks/adapter_page.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--html-root", default="_build/html", help="the built book (make book)")
    parser.add_argument("--repeats", type=int, default=3, help="torch and numpy runs of 100 steps (the best counts)")
    args = parser.parse_args(argv)
    root = Path(args.html_root).resolve()
    if not (root / PAGE).is_file() or not (root / "live" / "manifest.json").is_file():
        print(f"adapter_page: {root} has no built lesson 5 with live/: run make book first", file=sys.stderr)
        sys.exit(1)

    from playwright.sync_api import sync_playwright

    out: dict = {"machine": machine()}
    with browser.serve(root) as base, sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=browser.CHROMIUM, headless=True, args=browser.FLAGS)
        for name, (profile, cpu) in PROFILES.items():
            out[name] = page_runs(chromium, base, profile, cpu)
        chromium.close()
    out.update(python_peer(root, args.repeats))
    ratio = out["desktop"]["warm"]["steps_per_s"] / out["torch_float64"]["steps_per_s"]
    out["page_over_torch"] = round(ratio, 2)

    print(f"Machine: {out['machine']}")
    for name, (profile, cpu) in PROFILES.items():
        for when in ("cold", "warm"):
            r = out[name][when]
            print(f"{name} ({profile['viewport']['width']} px, CPU {cpu}x), {when}: Train to result "
                  f"{r['train_to_result_s']} s; {r['steps_per_s']} steps/s in the page ({r['step_ms']} ms a step); "
                  f"longest main-thread task {r['longest_task_ms']} ms ({r['long_tasks']} over 50 ms), of the demo's "
                  f"own scripts {r['longest_demo_script_ms']} ms; accuracy "
                  f"{r['accuracy']:.3f}")
    for name in ("torch_float64", "numpy_by_hand"):
        print(f"{name}: {out[name]['steps_per_s']} steps/s ({out[name]['step_ms']} ms a step)")
    print(f"page (desktop, warm) over torch float64: {out['page_over_torch']:.2f}x the steps a second")
    print("The phone profile slows the page's thread only (Chromium does not throttle workers); the adapter "
          "trains on the page's thread, so all of its training ran slowed.")
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
