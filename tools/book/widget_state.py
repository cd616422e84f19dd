"""Live sliders read back out of a widget state: what the built book should show at each position.

A slider made by the course's `live_slider` is a VBox (class `labs-live-slider`) holding the
slider, optionally a dropdown or toggle buttons, and a Stack (class `labs-live-stack`) of Output
widgets, one per position (a Stack of Stacks with a second control). The notebook stores that
state in its metadata and the built page embeds it; `live_sliders` reads it back, so the browser
check can move each slider and compare the page with the stored output. Test code only: the
package builds sliders, it never reads them back.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import unquote

from labs.classroom.sliders import BOX_CLASS, LIVE_ONLY


@dataclass
class LiveSlider:
    """One live slider read back from a widget state: what the browser should show where."""

    model_id: str  # the VBox (the model a widget view names)
    labels: list[str]  # slider readouts, in order
    start: int
    choice_labels: list[str] = field(default_factory=list)  # empty without a second control
    choice_start: int = 0
    choice_kind: str = ""  # "Dropdown" or "ToggleButtons"
    outputs: dict[tuple[int, int], list[dict]] = field(default_factory=dict)  # (choice, position) -> outputs

    def text(self, position: int, choice: int = 0) -> str:
        """The stored text at a position, as the page shows it."""
        return "".join(o.get("text", "") for o in self.outputs[(choice, position)] if o["output_type"] == "stream")

    def images(self, position: int, choice: int = 0) -> int:
        return sum(1 for o in self.outputs[(choice, position)] if o["output_type"] == "display_data")

    def live_only(self, position: int, choice: int = 0) -> bool:
        return self.text(position, choice).startswith(LIVE_ONLY)


class _FirstImg(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.attrs: dict[str, str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "img" and self.attrs is None:
            self.attrs = {k: v or "" for k, v in attrs}


def img_attributes(markup: str) -> dict[str, str]:
    """The attributes of the first <img> in some HTML, entities decoded (as a browser reads them)."""
    parser = _FirstImg()
    parser.feed(markup)
    parser.close()
    return parser.attrs or {}


def data_url(src: str) -> tuple[str, bytes]:
    """A data: URL as ("svg" or "png", its bytes)."""
    header, _, payload = src.partition(",")
    kind = "svg" if header.startswith("data:image/svg") else "png"
    if header.endswith(";base64"):
        return kind, base64.b64decode("".join(unquote(payload).split()))
    return kind, unquote(payload).encode()


def stored_figure(output: dict) -> tuple[str, bytes, str | None] | None:
    """A stored figure output as (kind "svg" or "png", its bytes, its alt text): live_slider stores an
    <img alt> (text/html); a bare image/svg+xml or image/png output has no alt (None)."""
    data = output.get("data", {})
    if "text/html" in data:
        attrs = img_attributes("".join(data["text/html"]))
        if attrs.get("src", "").startswith("data:image/"):
            kind, picture = data_url(attrs["src"])
            return kind, picture, attrs.get("alt")
    if "image/svg+xml" in data:
        return "svg", "".join(data["image/svg+xml"]).encode(), None
    if "image/png" in data:
        return "png", base64.b64decode("".join(data["image/png"])), None
    return None


def _ref(value: str) -> str:
    return value.removeprefix("IPY_MODEL_")


def live_sliders(state: dict) -> list[LiveSlider]:
    """Every live slider in a widget state ({"state": {model_id: {...}}} or the bare mapping), in the
    state's order, not the page's (model ids are random): see notebook_live_sliders."""
    models = state.get("state", state)
    found = []
    for model_id, model in models.items():
        s = model.get("state", {})
        if model.get("model_name") != "VBoxModel" or BOX_CLASS not in s.get("_dom_classes", []):
            continue
        kids = [models[_ref(c)] for c in s["children"]]
        slider, stack = kids[0]["state"], kids[-1]["state"]
        spec = LiveSlider(model_id, list(slider["_options_labels"]), slider["index"])
        if len(kids) == 3:
            choice = kids[1]
            spec.choice_labels = list(choice["state"]["_options_labels"])
            spec.choice_start = choice["state"]["index"]
            spec.choice_kind = choice["model_name"].removesuffix("Model")
            rows = [models[_ref(c)]["state"] for c in stack["children"]]
        else:
            rows = [stack]
        for j, row in enumerate(rows):
            for i, child in enumerate(row["children"]):
                spec.outputs[(j, i)] = list(models[_ref(child)]["state"].get("outputs", []))
        found.append(spec)
    return found


def notebook_live_sliders(nb: dict) -> list[LiveSlider]:
    """Every live slider stored in a notebook (a dict as read by json or nbformat), in cell order."""
    state = nb.get("metadata", {}).get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    views = [out["data"]["application/vnd.jupyter.widget-view+json"].get("model_id")
             for cell in nb.get("cells", []) for out in cell.get("outputs", [])
             if "application/vnd.jupyter.widget-view+json" in out.get("data", {})]
    shown = {model_id: i for i, model_id in enumerate(views)}
    return sorted(live_sliders(state), key=lambda spec: shown.get(spec.model_id, len(shown)))
