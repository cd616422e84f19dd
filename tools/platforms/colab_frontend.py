"""A notebook frontend cut down to what a live slider needs, driving a real kernel.

A reader moving a slider makes the frontend send the kernel a widget ``update`` message (the new
``index``); what the observers print inside ``with output:`` comes back on IOPub with that message
as its parent. `move` sends exactly that message through a running nbclient `NotebookClient`, whose
own Output-widget mimic routes the answer, so its widget state is what a frontend would show.

`walk` moves every live slider of a cell (`labs.classroom.sliders.live_slider`) through its
positions and compares what is shown after each move with what the slider's function computes
afresh in the kernel there: with ipywidgets 7 (Colab) the box's one Output widget, with ipywidgets 8
the stored output the browser's links would pick from the box's Stack.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import nbformat
from nbclient.exceptions import CellExecutionComplete

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
BOX_CLASS = "labs-live-slider"  # labs.classroom.sliders.BOX_CLASS (read here without importing labs)
PREFIX = "IPY_MODEL_"


@dataclass
class Slider:
    """A live slider as the frontend knows it: model ids and labels from the widget state."""

    box: str
    slider: str
    choice: str | None
    shown: str  # the Output (ipywidgets 7) or the Stack (ipywidgets 8) under the controls
    kind: str  # "output" or "stack"
    labels: list[str]
    choice_labels: list[str]
    start: int
    choice_start: int
    checked: int = 0  # positions compared with what the code computes
    changed: int = 0  # of them, moves after which the shown output had to change
    problems: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"slider {self.labels[0]}..{self.labels[-1]}" + (
            f" x {len(self.choice_labels)} choices" if self.choice_labels else "")


def sliders_in(client, cell) -> list[Slider]:
    """The live sliders a cell displayed, read from the widget state nbclient keeps."""
    found = []
    for out in cell.get("outputs", []):
        view = out.get("data", {}).get(WIDGET_VIEW) if out.get("output_type") in ("display_data",
                                                                                  "execute_result") else None
        if not view:
            continue
        state = client.widget_state.get(view["model_id"], {})
        if BOX_CLASS not in state.get("_dom_classes", []):
            continue
        slider_id, *middle, shown_id = [c.removeprefix(PREFIX) for c in state["children"]]
        choice_id = middle[0] if middle else None
        slider = client.widget_state[slider_id]
        choice = client.widget_state[choice_id] if choice_id else {}
        shown = client.widget_state[shown_id]
        found.append(Slider(
            box=view["model_id"], slider=slider_id, choice=choice_id, shown=shown_id,
            kind="output" if shown.get("_model_name") == "OutputModel" else "stack",
            labels=list(slider["_options_labels"]), choice_labels=list(choice.get("_options_labels", [])),
            start=slider["index"], choice_start=choice.get("index", 0)))
    return found


def shown_outputs(client, s: Slider) -> list[dict]:
    """What the frontend shows under the controls now."""
    state = client.widget_state
    if s.kind == "output":
        return [dict(o) for o in state[s.shown].get("outputs", [])]
    i = state[s.slider]["index"]
    j = state[s.choice]["index"] if s.choice else 0
    stack = state[s.shown]
    inner = state[stack["children"][j].removeprefix(PREFIX)] if s.choice else stack
    return [dict(o) for o in state[inner["children"][i].removeprefix(PREFIX)].get("outputs", [])]


def normal(outputs: list[dict]) -> list[dict]:
    """Outputs in one comparable form: adjacent text on the same stream joined (a frontend joins
    it), a figure by its data only."""
    merged: list[dict] = []
    for out in json.loads(json.dumps(outputs)):
        if out["output_type"] == "stream":
            if merged and merged[-1].get("output_type") == "stream" and merged[-1]["name"] == out["name"]:
                merged[-1]["text"] += out["text"]
                continue
            merged.append({"output_type": "stream", "name": out["name"], "text": out["text"]})
        else:
            merged.append({"output_type": "display_data", "data": out.get("data", {})})
    return merged


async def _drain(client, msg_id: str, timeout: float) -> list[dict]:
    """Feed the kernel's IOPub answer to a message through nbclient until the kernel is idle
    again; return what no widget captured (an error would land there)."""
    sink = nbformat.v4.new_code_cell(metadata={"execution": {}})  # nbclient may time-stamp it
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the kernel did not answer within {timeout:.0f} s")
        msg = await client.kc.iopub_channel.get_msg(timeout=left)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        try:
            client.process_message(msg, sink, -1)
        except CellExecutionComplete:
            return [dict(o) for o in sink.outputs]


async def move(client, model_id: str, index: int, timeout: float = 600) -> list[dict]:
    """Move a control (a slider, dropdown or toggle) to ``index`` the way a reader does."""
    kc = client.kc
    msg = kc.session.msg("comm_msg", {"comm_id": model_id, "data": {
        "method": "update", "state": {"index": index}, "buffer_paths": []}})
    client.widget_state[model_id]["index"] = index  # the frontend's own model follows the move
    kc.shell_channel.send(msg)
    return await _drain(client, msg["header"]["msg_id"], timeout)


async def run(client, code: str, timeout: float = 600) -> str:
    """Run code in the kernel (not in the notebook) and return what it printed."""
    msg_id = client.kc.execute(code, store_history=False)
    stray = await _drain(client, msg_id, timeout)
    errors = [o for o in stray if o["output_type"] == "error"]
    if errors:
        raise RuntimeError(f"{errors[0]['ename']}: {errors[0]['evalue']}")
    return "".join(o.get("text", "") for o in stray if o["output_type"] == "stream" and o["name"] == "stdout")


EXPECTED = """\
import json as _json, ipywidgets as _widgets
_known = getattr(_widgets.Widget, "widgets", None)
if not isinstance(_known, dict):
    from ipywidgets.widgets.widget import _instances as _known
print(_json.dumps(_known[{box!r}]._live_compute({i}, {j})))
del _json, _widgets, _known
"""


def _describe(outputs: list[dict]) -> str:
    parts = [repr(o["text"][:80]) if o["output_type"] == "stream" else o["data"].get("text/plain", "<display>")
             for o in outputs]
    return ", ".join(parts) or "nothing"


async def check(client, s: Slider, i: int, j: int, stray: list[dict], before: list[dict] | None) -> list[dict]:
    """Compare what is shown at (i, j) with what the slider's function computes afresh in the kernel
    there; return what is shown."""
    where = f"{s.labels[i]}" + (f" / {s.choice_labels[j]}" if s.choice_labels else "")
    now = normal(shown_outputs(client, s))
    want = normal(json.loads(await run(client, EXPECTED.format(box=s.box, i=i, j=j))))
    s.checked += 1
    if stray:
        s.problems.append(f"{s.name} at {where}: the move printed outside the widget: {_describe(stray)}")
    if now != want:
        s.problems.append(f"{s.name} at {where}: shows {_describe(now)}, the code computes {_describe(want)}")
    elif before is not None and want != before:
        s.changed += 1
    return now


async def walk(client, s: Slider, timeout: float = 600) -> Slider:
    """Every slider position under the starting choice, then every other choice at the starting
    position, and back to the start; after each move, compare what is shown with what the code
    computes there. Problems are collected in ``s.problems``."""
    def around(n: int, start: int) -> list[int]:
        return [k for k in range(n) if k != start] + [start]

    moves = [(s.slider, i, i, s.choice_start) for i in around(len(s.labels), s.start)]  # (control, its index, i, j)
    if s.choice:
        moves += [(s.choice, j, s.start, j) for j in around(len(s.choice_labels), s.choice_start)]
    before = await check(client, s, s.start, s.choice_start, [], None)
    for control, index, i, j in moves:
        stray = await move(client, control, index, timeout)
        before = await check(client, s, i, j, stray, before)
    if not s.changed:
        s.problems.append(f"{s.name}: no move changed what is shown (the walk proved nothing)")
    return s
