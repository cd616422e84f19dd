"""The slider exercises work in JupyterLab, where readers run the notebooks: what test_lab.py runs
(`make lab-check`).

Starts JupyterLab headless on a free 127.0.0.1 port with a random token, in a
temporary folder holding a trimmed copy of one lesson (its import cells, its
first slider cell, and a probe cell). Headless Chromium (Playwright) opens it,
runs the cells, moves the first slider of the slider cell's output one step
with ArrowRight, and waits for the output to change. The probe cell then reads
the controls' values back from the kernel, and this script computes, in its own
Python, what the slider cell's function shows for those values: the text it
prints and the figures it draws (rendered as labs.classroom.sliders renders
them). The check passes when the page shows exactly that text, and figures
whose words and numbers are those (SVG) or whose pixels match (PNG, within
IMAGE_TOLERANCE). Nothing leaves 127.0.0.1.

    pytest tests/book/test_lab.py [--lab-notebook notebooks/NN_temperature.ipynb]
"""

from __future__ import annotations

import ast
import base64
import contextlib
import io
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The temperature lesson: its first slider cell needs only a few cheap cells before it.
DEFAULT = min((ROOT / "notebooks").glob("*_temperature.ipynb"), default=ROOT / "notebooks" / "temperature.ipynb")
TIMEOUT_S = 240  # the whole check: about 25 s alone, longer beside make test's other jobs
PROBE_MARK = "LAB_CHECK_VALUES"
# Two PNG renderings of one figure "match" when no more than this share of their pixels differ by
# more than PIXEL_STEP (of 255) in any channel; a figure for another slider position differs in its
# bars, labels and title, far more than this.
IMAGE_TOLERANCE = 0.002
PIXEL_STEP = 48
# The probe: the values of the controls the slider cell made, in creation order.
PROBE = f"""\
import json as _json
import ipywidgets as _widgets
_kinds = (_widgets.FloatSlider, _widgets.FloatLogSlider, _widgets.IntSlider, _widgets.SelectionSlider,
          _widgets.Dropdown, _widgets.ToggleButtons)
_values = [w.value for w in list(_widgets.Widget._active_widgets.values()) if isinstance(w, _kinds)]
print("{PROBE_MARK}", _json.dumps([float(v) if isinstance(v, (int, float)) else v for v in _values]))
"""


class LabCheckFailed(AssertionError):
    """The JupyterLab check found a problem (or could not run)."""


def fail(message: str) -> None:
    raise LabCheckFailed(f"lab check: {message}")


def source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def python_lines(code: str) -> str:
    """The cell without IPython magics (lines starting with % or !), so plain Python can run it."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines())


def names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(names a cell binds, names it reads), enough to find which earlier cells a cell needs."""
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store) else read).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return bound, read


def parse(code: str) -> ast.Module:
    return ast.parse(python_lines(code))


def plan(nb: dict) -> tuple[list[str], str]:
    """(the earlier cells the first slider cell needs, in order; the slider cell)."""
    code = [source(c) for c in nb["cells"] if c["cell_type"] == "code"]
    slider = next((i for i, s in enumerate(code) if re.search(r"Slider\(|live_slider\(", s)), None)
    if slider is None:
        fail("the notebook has no slider cell")
    bound, read = names(parse(code[slider]))
    needed, setup = read - bound, []
    for i in range(slider - 1, -1, -1):  # walk back: a needed cell's own needs come from before it
        cell_bound, cell_read = names(parse(code[i]))
        if cell_bound & needed:
            setup.insert(0, code[i])
            needed = (needed - cell_bound) | (cell_read - cell_bound)
    if not setup:
        fail("the slider cell needs no earlier cell: no imports found")
    return setup, code[slider]


def render(fig) -> dict[str, bytes]:
    """A figure as a slider shows it (labs.classroom.sliders): SVG with its text as text, and PNG."""
    import matplotlib

    svg, png = io.BytesIO(), io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "labs"}):
        fig.savefig(svg, format="svg", bbox_inches="tight", metadata={"Date": None})
    fig.savefig(png, format="png", bbox_inches="tight", dpi=110, metadata={"Software": None})
    return {"svg": svg.getvalue(), "png": png.getvalue()}


def expected_output(setup: list[str], slider_cell: str, values: list) -> tuple[str, list[dict[str, bytes]]]:
    """What the slider cell's function shows for these control values, computed here:
    (the text it prints, each figure it shows as {"svg": ..., "png": ...})."""
    tree = parse(slider_cell)
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "live_slider"
             and node.args and isinstance(node.args[0], ast.Name)]
    drawn = [f for f in functions if calls and f.name == calls[0].args[0].id]  # the function the slider shows
    if not drawn and len(functions) == 1:
        drawn = functions
    if len(drawn) != 1:
        fail(f"the slider cell should define the function its live_slider shows, found {[f.name for f in functions]}")
    fn = drawn[0]
    n_args = len(fn.args.args)
    if len(values) < n_args:
        fail(f"{fn.name} takes {n_args} arguments, but the kernel shows {len(values)} controls: {values}")
    os.environ.setdefault("MPLBACKEND", "Agg")
    import matplotlib.pyplot as plt

    namespace: dict = {"__name__": "__lab_check__"}
    for code in setup:
        exec(compile(python_lines(code), "<setup cell>", "exec"), namespace)
    # every function of the cell (the slider's may call the others, its alt= among them)
    exec(compile(ast.Module(body=functions, type_ignores=[]), "<slider cell>", "exec"), namespace)
    figures: list[dict[str, bytes]] = []

    def show(*args, **kwargs) -> None:  # render each open figure, then close it
        for number in plt.get_fignums():
            figures.append(render(plt.figure(number)))
        plt.close("all")

    out = io.StringIO()
    real_show, plt.show = plt.show, show
    try:
        with contextlib.redirect_stdout(out):
            namespace[fn.name](*values[:n_args])
            show()  # a figure left open at the end is shown too
    finally:
        plt.show = real_show
    return out.getvalue(), figures


def svg_text(svg: bytes) -> list[str]:
    """The words and numbers a reader sees in an SVG figure: its <text> elements, in order."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(svg)
    return [" ".join("".join(node.itertext()).split()) for node in root.iter() if node.tag.endswith("}text")]


def pixels(png: bytes):
    """An (height, width, 4) uint8 array of a PNG."""
    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGBA"))


def image_mismatch(kind: str, shown: bytes, expected: dict[str, bytes]) -> str | None:
    """None when the page's figure is the expected one; otherwise one line saying how they differ.
    SVG: the same text, word for word. PNG: the same size, and at most IMAGE_TOLERANCE of the
    pixels differing by more than PIXEL_STEP."""
    if kind == "svg":
        got, want = svg_text(shown), svg_text(expected["svg"])
        return None if got == want else f"its text reads {got}, the computed one {want}"
    a, b = pixels(shown), pixels(expected["png"])
    if a.shape != b.shape:
        return f"it is {a.shape[1]}x{a.shape[0]} px, the computed one {b.shape[1]}x{b.shape[0]} px"
    moved = (abs(a.astype(int) - b.astype(int)).max(axis=2) > PIXEL_STEP).mean()
    return None if moved <= IMAGE_TOLERANCE else f"{moved:.1%} of its pixels differ (at most {IMAGE_TOLERANCE:.1%} may)"


def compare(shown: tuple[str, list[tuple[str, bytes]]], expected: tuple[str, list[dict[str, bytes]]],
            values: list) -> None:
    """Fail unless the page shows the expected text and figures."""
    (text, images), (want_text, want_images) = shown, expected
    if squash(text) != squash(want_text):
        fail(f"after the slider moved, JupyterLab shows\n{text}\nbut the code computes, for {values},\n{want_text}")
    if len(images) != len(want_images):
        fail(f"after the slider moved, JupyterLab shows {len(images)} figures, but the code draws "
             f"{len(want_images)} for {values}")
    for i, ((kind, got), want) in enumerate(zip(images, want_images), start=1):
        problem = image_mismatch(kind, got, want)
        if problem:
            fail(f"after the slider moved, figure {i} is not what the code draws for {values}: {problem}")


def decode(src: str) -> tuple[str, bytes]:
    """An <img> data: URL as ("svg" or "png", its bytes)."""
    header, _, payload = src.partition(",")
    kind = "svg" if header.startswith("data:image/svg") else "png"
    if header.endswith(";base64"):
        return kind, base64.b64decode("".join(urllib.parse.unquote(payload).split()))
    return kind, urllib.parse.unquote(payload).encode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_server(url: str, deadline: float, server: subprocess.Popen, log: Path) -> None:
    while time.monotonic() < deadline:
        if server.poll() is not None:
            fail(f"JupyterLab exited with code {server.returncode}:\n{log.read_text(encoding='utf-8')[-3000:]}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    return
        time.sleep(0.3)
    fail("JupyterLab did not answer in time")


def squash(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def run(path: Path) -> str:
    """Open the lesson in JupyterLab, move its first slider, compare; a one-line account."""
    start = time.monotonic()
    deadline = start + TIMEOUT_S
    nb = json.loads(path.read_text(encoding="utf-8"))
    setup, slider_cell = plan(nb)
    trimmed = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "source": code, "outputs": [], "execution_count": None}
            for code in [*setup, slider_cell, PROBE]
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3 (course)", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    work = Path(tempfile.mkdtemp(prefix="lab-check-"))
    try:
        (work / path.name).write_text(json.dumps(trimmed), encoding="utf-8")
        for sub in ("config", "runtime", "data"):
            (work / f".jupyter-{sub}").mkdir()
        # No "notified about official Jupyter news?" toast over the cells the check clicks, and every
        # cell in the page (no windowing: a cell below a tall figure would otherwise not be there).
        lab_settings = work / ".jupyter-settings" / "@jupyterlab"
        for extension, name, value in (("apputils-extension", "notification", '{"fetchNews": "false"}'),
                                       ("notebook-extension", "tracker", '{"windowingMode": "none"}')):
            (lab_settings / extension).mkdir(parents=True, exist_ok=True)
            (lab_settings / extension / f"{name}.jupyterlab-settings").write_text(value)
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(work / ".jupyter-config"),
            "JUPYTER_RUNTIME_DIR": str(work / ".jupyter-runtime"),
            "JUPYTERLAB_WORKSPACES_DIR": str(work / ".jupyter-data"),
            "JUPYTERLAB_SETTINGS_DIR": str(work / ".jupyter-settings"),
            "PYTHONPATH": str(ROOT),  # the lesson imports labs, as in the repository
        }
        port, token = free_port(), secrets.token_hex(16)
        log_path = work / "jupyterlab.log"
        log = log_path.open("w", encoding="utf-8")
        server = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
             f"--ServerApp.root_dir={work}", "--LabApp.news_url=", "--LabApp.check_for_updates_class="
             "jupyterlab.NeverCheckForUpdate", "--MultiKernelManager.default_kernel_name=python3",
             "--LabApp.extension_manager=readonly", "--ServerApp.terminals_enabled=False", "--allow-root"],
            cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=log, text=True,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_for_server(f"{base}/api/status?token={token}", deadline, server, log_path)
            shown, values = drive_browser(f"{base}/lab/tree/{path.name}?token={token}", port, deadline,
                                          n_cells=len(trimmed["cells"]))
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
            log.close()
        compare(shown, expected_output(setup, slider_cell, values), values)
        elapsed = time.monotonic() - start
        times = ROOT / ".cache" / "timings"
        times.mkdir(parents=True, exist_ok=True)
        (times / "lab_check.json").write_text(json.dumps({"lab_check_s": round(elapsed, 1)}))
        return (f"{path.name} in JupyterLab, slider moved to {values}: the output is what the code computes "
                f"({elapsed:.1f} s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def drive_browser(url: str, port: int, deadline: float,
                  n_cells: int) -> tuple[tuple[str, list[tuple[str, bytes]]], list]:
    """Run the cells, move the slider, run the probe: ((the slider's output text, its figures as
    ("svg" or "png", bytes)), the control values)."""
    from playwright.sync_api import sync_playwright

    from tools.book.browser import CHROMIUM, FLAGS

    def left_ms() -> float:
        remaining = (deadline - time.monotonic()) * 1000
        if remaining <= 0:
            fail("the check ran past its time limit")
        return remaining

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1600})
            local = re.compile(rf"^(https?|wss?)://(127\.0\.0\.1|localhost):{port}/")
            page.route("**/*", lambda route: route.continue_() if local.match(route.request.url) else route.abort())
            page.goto(url, timeout=left_ms())
            cells = page.locator(".jp-Notebook .jp-CodeCell")
            cells.nth(n_cells - 1).wait_for(timeout=left_ms())
            # Wait until the kernel is idle once, then run every cell but the probe, top to bottom.
            page.get_by_text(re.compile(r"\|\s*Idle")).first.wait_for(timeout=left_ms())
            cells.first.locator(".jp-InputArea-editor").click(timeout=left_ms())
            for _ in range(n_cells - 1):
                page.keyboard.press("Shift+Enter")
            slider_cell = cells.nth(n_cells - 2)
            handle = slider_cell.locator(".jp-OutputArea .noUi-handle").first
            handle.wait_for(timeout=left_ms())
            output = slider_cell.locator(".jp-OutputArea .widget-output .jp-OutputArea-output")

            def shown() -> tuple[str, list[tuple[str, bytes]]]:
                parts = [o for o in output.all() if o.is_visible()]
                images = [img.get_attribute("src") or "" for o in parts for img in o.locator("img").all()]
                return ("\n".join(o.inner_text() for o in parts),
                        [decode(src) for src in images if src.startswith("data:")])

            before: tuple[str, list[tuple[str, bytes]]] = ("", [])
            while not (before[0].strip() or before[1]):  # the first position's output comes after the slider
                left_ms()
                before = shown()
                time.sleep(0.2)
            handle.focus()
            page.keyboard.press("ArrowRight")
            after = before
            while after == before:
                left_ms()
                time.sleep(0.2)
                after = shown()
            time.sleep(0.5)  # let the last line of the new output arrive
            after = shown()
            probe = cells.nth(n_cells - 1)
            probe.locator(".jp-InputArea-editor").click(timeout=left_ms())
            page.keyboard.press("Shift+Enter")
            line = probe.locator(".jp-OutputArea-output", has_text=PROBE_MARK).first
            line.wait_for(timeout=left_ms())
            values = json.loads(line.inner_text().split(PROBE_MARK, 1)[1])
            return after, values
        except Exception:
            with contextlib.suppress(Exception):
                page.screenshot(path=os.environ.get("LAB_CHECK_SCREENSHOT", "/tmp/lab_check_failure.png"))
            raise
        finally:
            browser.close()

