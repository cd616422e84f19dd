"""Sliders that work in the static HTML book as well as in a live notebook.

A kernel computes; a static page cannot. `live_slider` runs the notebook's own
function for every slider position when the cell runs (at `make outputs`),
stores each result in an ipywidgets `Output` (text as text, figures as compact
SVG or PNG), puts them in a `Stack`, and links the stack's `selected_index` to
the slider with `jsdlink`. The HTML widget manager runs that link in the
browser, so the book's slider swaps in the stored result for each position with
no kernel. In JupyterLab the same widget is live: a position with nothing
stored is computed by the kernel when the reader moves to it. Colab, whose
ipywidgets 7 has no `Stack`, gets a form driven by the kernel (below).

Usage: one call, the last line of the cell, in a cell tagged `nbval-ignore-output`
(nbval has no widget manager; the stored outputs are checked by
tests/classroom/test_sliders.py, which proves each equals what `fn` prints).

Before (live only; a dead control in the book)::

    tau_w = widgets.FloatLogSlider(value=0.2, base=10, min=-2.5, max=0.3, step=0.02, description="tau")
    gap_w = widgets.FloatSlider(value=0.15, min=0.0, max=0.6, step=0.01, description="cosine gap")
    out = widgets.interactive_output(show_share, {"tau": tau_w, "gap": gap_w})
    display(widgets.VBox([tau_w, gap_w, out]))

After (a slider of 25 taus times a dropdown of 4 gaps: 100 stored outputs)::

    from labs.classroom.sliders import live_slider

    def describe_share(tau, gap):
        share = positive_share(0.6 + gap, [0.6] * 3, tau)
        return f"At tau {tau:.3f} and a gap of {gap:.2f} the right card takes {share:.0%} of the softmax."

    taus = np.round(np.geomspace(0.005, 2.0, 25), 4)
    live_slider(show_share, taus, description="tau", value=0.2, fmt="{:.3f}",
                choices=[0.0, 0.15, 0.3, 0.5], choice_description="cosine gap", choice_value=0.15,
                alt=describe_share)

- `fn(value)` (or `fn(value, choice)` with `choices`) prints text and/or draws
  matplotlib figures (`plt.show()` is fine). Text and figures are stored in the
  order they appear. It must not call `display()`.
- `values`: the slider positions, a short sequence (tens). `fmt` formats the
  readout ("{:.3f}" or a function); `(label, value)` pairs are taken as given.
- `choices` (optional): a second control, a dropdown (or `toggle=True` for
  buttons), making a grid of len(values) x len(choices) stored outputs. Keep
  grids small: at most `MAX_STORED` stored outputs.
- `stored` (optional): which slider values to precompute (a collection or a
  predicate); the others are live-only and say so in place in the book.
- `image`: "svg" (default; text stays text) or "png" (for dense images).
- `alt`: a function with the same arguments as `fn` returning one sentence that says what the
  picture shows at that position, its numbers computed ("At tau 0.050 the right card takes 91%
  of the softmax."). Required when `fn` draws a figure: every figure is stored as an
  ``<img alt="...">`` (an HTML output, with the sentence as its text form too), so a screen
  reader reads it in the book, in JupyterLab and in Colab. A figure without `alt` is refused
  (`REQUIRE_ALT`; set False, it gets a description made from the figure's title and axis labels,
  and tests/notebooks/test_rules.py fails for the cell). The readout (`fmt`) is what
  a screen reader announces as the slider's value: keep it meaningful ("0.050", not "5").

The browser check (``tools/book/widget_state.py``) reads the stored positions back out of the page's widget
state and moves every slider to prove each one.

Three kernels, three behaviours (tests/classroom/test_sliders.py and ``make colab-twin``):

- **ipywidgets 8** (the course's environment, JupyterLab, the book): as above, every stored
  position in a `Stack`, linked to the controls in the browser.
- **ipywidgets 7** (Colab's runtime, which has no `Stack`): driven from Python. The controls are
  observed in the kernel; each move redraws the position into one `Output` (computed when first
  visited, then kept). Nothing is stored for a static page; Colab has a kernel.
- **No widget frontend** (a script, a terminal, a kernel without widget comms): nothing can
  move, so it prints one line saying the slider needs Jupyter or Colab, shows the start
  position's text and figures, and returns None.
"""

from __future__ import annotations

import base64
import contextlib
import html
import io
import math
import sys
from collections.abc import Callable, Collection, Sequence

import ipywidgets as widgets

from labs.classroom.figures import png_metadata

# Every lesson passes `alt=`: a figure drawn without it is refused (ValueError naming `alt`). Set
# False (a notebook of one's own, mid-edit), a description is made from the figure's title and axis
# labels instead, and tests/notebooks/test_rules.py still names each cell that lacks it.
REQUIRE_ALT = True
MAX_STORED = 150  # stored outputs per widget; tens are the aim (page weight: 3 MB per lesson page)
BOX_CLASS = "labs-live-slider"
STACK_CLASS = "labs-live-stack"
FIGURE_CLASS = "labs-live-figure"  # the <img> of a stored figure
LIVE_ONLY = "Not stored in the book"  # how a live-only position starts its message
NEEDS_A_NOTEBOOK = "needs Jupyter or Colab"  # the one line a slider prints with no widget frontend


def _pairs(items: Sequence, fmt: str | Callable | None) -> list[tuple[str, object]]:
    """(label, value) for each item; items already given as (str, value) pairs are kept."""
    items = list(items)
    if not items:
        raise ValueError("live_slider: `values` (and `choices`, if given) must not be empty")
    out = []
    for item in items:
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
            out.append(item)
        elif fmt is None:
            out.append((str(item), item))
        elif callable(fmt):
            out.append((fmt(item), item))
        else:
            out.append((fmt.format(item), item))
    labels = [label for label, _ in out]
    if len(set(labels)) != len(labels):
        raise ValueError(f"live_slider: two positions share a label ({labels}); give `fmt` more digits")
    return out


def _same(a: object, b: object) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _index(pairs: list[tuple[str, object]], value: object, name: str) -> int:
    if value is None:
        return 0
    for i, (_, v) in enumerate(pairs):
        if _same(v, value):
            return i
    raise ValueError(f"live_slider: {name}={value!r} is not one of the positions {[v for _, v in pairs]}")


def _figure_output(fig, image: str) -> dict:
    """One matplotlib figure as a compact display_data output (SVG with text as text, or PNG)."""
    buf = io.BytesIO()
    if image == "svg":
        import matplotlib

        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "labs"}):
            fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
        data = {"image/svg+xml": buf.getvalue().decode()}
    else:
        fig.savefig(buf, format="png", bbox_inches="tight", dpi=110, metadata=png_metadata(fig))
        data = {"image/png": base64.b64encode(buf.getvalue()).decode("ascii")}
    title = fig.axes[0].get_title() if fig.axes else ""
    data["text/plain"] = f"<Figure: {title}>" if title else "<Figure>"
    return {"output_type": "display_data", "data": data, "metadata": {"labs": {"about": _about(fig)}}}


def _about(fig) -> str:
    """What can be said of a figure from itself: its titles and axis labels (the fallback alt)."""
    parts = []
    for ax in fig.axes:
        bits = [f"titled '{ax.get_title()}'" if ax.get_title() else ""]
        bits += [f"{axis} axis '{label}'" for axis, label in (("x", ax.get_xlabel()), ("y", ax.get_ylabel())) if label]
        bits = [b for b in bits if b]
        if bits:
            parts.append("a panel " + ", ".join(bits))
    return "; ".join(parts) if parts else "a figure"


# What an SVG's text needs escaped in a data: URL (everything else may stay as it is).
_SVG_URL_ESCAPES = str.maketrans({"%": "%25", "#": "%23", "'": "%27", "\n": "%0A", "\r": "%0D", "\t": "%09"})


def image_html(data: dict, alt: str) -> str:
    """An <img> showing a stored SVG or PNG figure with `alt` as its alt text (a data: URL: the
    SVG as text, only %, #, quotes and line breaks escaped; the PNG in base64)."""
    if "image/svg+xml" in data:
        svg = "".join(data["image/svg+xml"])
        src = "data:image/svg+xml," + svg.translate(_SVG_URL_ESCAPES)
    else:
        src = "data:image/png;base64," + "".join(data["image/png"]).replace("\n", "")
    return f"<img class=\"{FIGURE_CLASS}\" alt=\"{html.escape(alt, quote=True)}\" src='{src.replace('&', '&amp;')}'>"


def with_alt(outputs: list[dict], alt: str | Sequence[str]) -> list[dict]:
    """The captured outputs with each figure as an <img alt> (an HTML output whose text form is the
    sentence): `alt` is one sentence for every figure, or one per figure."""
    figures = [o for o in outputs if o["output_type"] == "display_data"]
    texts = [alt] * len(figures) if isinstance(alt, str) else list(alt)
    if len(texts) != len(figures):
        raise ValueError(f"live_slider: alt gave {len(texts)} sentences for {len(figures)} figures")
    out, k = [], 0
    for o in outputs:
        if o["output_type"] != "display_data":
            out.append(o)
            continue
        text = " ".join(str(texts[k]).split())
        k += 1
        out.append({"output_type": "display_data", "metadata": {},
                    "data": {"text/html": image_html(o["data"], text), "text/plain": text}})
    return out


def capture(fn: Callable, args: tuple, image: str = "svg") -> list[dict]:
    """Run fn(*args); return what it printed and drew as notebook outputs (stream and display_data).

    Text and figures keep their order: each `plt.show()` (or the end of fn) flushes the
    text printed so far, then the figures drawn so far. Figures are closed afterwards.
    """
    if image not in ("svg", "png"):
        raise ValueError(f"live_slider: image={image!r}; use 'svg' or 'png'")
    import matplotlib.pyplot as plt

    outputs: list[dict] = []
    text = io.StringIO()
    before = set(plt.get_fignums())

    def flush(*_args, **_kwargs) -> None:
        if text.getvalue():
            outputs.append({"output_type": "stream", "name": "stdout", "text": text.getvalue()})
            text.seek(0)
            text.truncate()
        for num in [n for n in plt.get_fignums() if n not in before]:
            fig = plt.figure(num)
            outputs.append(_figure_output(fig, image))
            plt.close(fig)

    show = plt.show
    plt.show = flush
    try:
        with contextlib.redirect_stdout(text):
            fn(*args)
        flush()
    finally:
        plt.show = show
        for num in [n for n in plt.get_fignums() if n not in before]:
            plt.close(num)
    return outputs


def _reaches_a_frontend(widget: widgets.Widget) -> bool:
    """Whether a widget's messages can reach a notebook frontend: its comm belongs to a running
    kernel. Outside one, ipywidgets 8 gives a `comm.DummyComm` and ipywidgets 7 a comm with no
    kernel; both send nothing anywhere."""
    comm = getattr(widget, "comm", None)
    if comm is None or type(comm).__name__ == "DummyComm":
        return False
    return getattr(comm, "kernel", True) is not None


def _publish(outputs: list[dict]) -> None:
    """Show captured outputs where the code runs: text on its stream, figures through IPython's
    display (inside `with output:` they land in that Output widget). With no IPython at all (a
    plain script) a figure is named by its text form, "<Figure: title>"."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        get_ipython = display = None
    shell = get_ipython() if get_ipython is not None else None
    for out in outputs:
        if out["output_type"] == "stream":
            stream = sys.stderr if out.get("name") == "stderr" else sys.stdout
            stream.write(out["text"])
        elif shell is not None:
            sys.stdout.flush()
            display(out["data"], raw=True, metadata=out.get("metadata") or None)
        else:
            sys.stdout.write(out["data"].get("text/plain", "<Figure>") + "\n")
    sys.stdout.flush()


def _live_only(description: str, label: str) -> list[dict]:
    msg = (f"{LIVE_ONLY} for {description} = {label}: this position is computed only in a running "
           "notebook (Jupyter or Colab). Move the slider to a stored position, or run the notebook.\n")
    return [{"output_type": "stream", "name": "stdout", "text": msg}]


def live_slider(
    fn: Callable[..., object],
    values: Sequence,
    *,
    description: str = "value",
    value: object = None,
    fmt: str | Callable | None = None,
    choices: Sequence | None = None,
    choice_description: str = "",
    choice_value: object = None,
    choice_fmt: str | Callable | None = None,
    toggle: bool = False,
    stored: Collection | Callable[[object], bool] | None = None,
    image: str = "svg",
    alt: Callable[..., str | Sequence[str]] | None = None,
) -> widgets.VBox | None:
    """A slider over `values` (and optionally a dropdown over `choices`) showing fn's output.

    With ipywidgets 8, every stored position is computed now and kept in the widget; with
    ipywidgets 7 the kernel computes each position when the reader moves to it (see the module
    docstring). Returns the VBox to display (make it the cell's last expression), or None where
    no widget frontend can show it (then it prints one line and the start position instead).
    """
    if not callable(fn):
        raise TypeError(f"live_slider: fn must be a function, got {type(fn).__name__}")
    if image not in ("svg", "png"):
        raise ValueError(f"live_slider: image={image!r}; use 'svg' or 'png'")
    if alt is not None and not callable(alt):
        raise TypeError(f"live_slider: alt must be a function of the same arguments as fn (one sentence per "
                        f"position), got {type(alt).__name__}")
    slider_pairs = _pairs(values, fmt)
    choice_pairs = _pairs(choices, choice_fmt) if choices is not None else [("", None)]
    start = _index(slider_pairs, value, "value")
    choice_start = _index(choice_pairs, choice_value, "choice_value") if choices is not None else 0
    if stored is None:
        keep = [True] * len(slider_pairs)
    elif callable(stored):
        keep = [bool(stored(v)) for _, v in slider_pairs]
    else:
        keep = [any(_same(v, s) for s in stored) for _, v in slider_pairs]
    n_stored = sum(keep) * len(choice_pairs)
    if n_stored > MAX_STORED:
        raise ValueError(f"live_slider: {n_stored} stored outputs (over {MAX_STORED}); use fewer values or "
                         "choices, or pass stored= to keep some positions live-only")

    def args(i: int, j: int) -> tuple:
        return (slider_pairs[i][1],) if choices is None else (slider_pairs[i][1], choice_pairs[j][1])

    def where(i: int, j: int) -> str:
        return f"{description}={slider_pairs[i][1]!r}" + (
            f", {choice_description or 'choice'}={choice_pairs[j][1]!r}" if choices is not None else "")

    def compute(i: int, j: int) -> list[dict]:
        try:
            outputs = capture(fn, args(i, j), image)
        except Exception as err:
            raise RuntimeError(f"live_slider: {getattr(fn, '__name__', 'fn')} failed at {where(i, j)}: {err}") from err
        if not any(o["output_type"] == "display_data" for o in outputs):
            return outputs
        if alt is None:
            if REQUIRE_ALT:
                raise ValueError(f"live_slider: {getattr(fn, '__name__', 'fn')} draws a figure, so alt= is required: "
                                 "a function of the same arguments returning one sentence that says what the "
                                 "picture shows at that position")
            shown = f"{description} = {slider_pairs[i][0]}" + (
                f", {choice_description or 'choice'} = {choice_pairs[j][0]}" if choices is not None else "")
            about = [o["metadata"].get("labs", {}).get("about", "a figure") for o in outputs
                     if o["output_type"] == "display_data"]
            return with_alt(outputs, [f"At {shown}: {a}." for a in about])
        try:
            sentence = alt(*args(i, j))
        except Exception as err:
            raise RuntimeError(f"live_slider: alt failed at {where(i, j)}: {err}") from err
        sentences = [sentence] if isinstance(sentence, str) else list(sentence) if isinstance(
            sentence, (list, tuple)) else None
        if not sentences or not all(isinstance(t, str) and t.strip() for t in sentences):
            raise ValueError(f"live_slider: alt must return a sentence (or one per figure) at {where(i, j)}, "
                             f"got {sentence!r}")
        return with_alt(outputs, sentence)

    def static() -> None:
        """No widget frontend: one line, then the start position as a static output."""
        shown = f"{description} = {slider_pairs[start][0]}"
        if choices is not None:
            shown += f", {choice_description or 'choice'} = {choice_pairs[choice_start][0]}"
        print(f"This slider {NEEDS_A_NOTEBOOK} to move (a notebook with widgets); showing {shown}.")
        _publish(compute(start, choice_start))

    style = {"description_width": "initial"}
    if not hasattr(widgets, "Stack"):  # ipywidgets 7 (Colab): the kernel redraws one Output
        return _python_driven(slider_pairs, choice_pairs if choices is not None else None, start, choice_start,
                              description, choice_description, toggle, style, compute, static)

    grid = [[widgets.Output() for _ in slider_pairs] for _ in choice_pairs]
    if not _reaches_a_frontend(grid[0][0]):
        for row in grid:
            for out in row:
                out.close()
        static()
        return None
    for j, row in enumerate(grid):
        for i, out in enumerate(row):
            out.outputs = tuple(compute(i, j) if keep[i] else _live_only(description, slider_pairs[i][0]))

    slider = widgets.SelectionSlider(
        options=slider_pairs, index=start, description=description, style=style,
        continuous_update=all(keep), layout=widgets.Layout(width="100%", max_width="34em"),
    )
    inner = [widgets.Stack(row, selected_index=start) for row in grid]
    links = [widgets.jsdlink((slider, "index"), (stack, "selected_index")) for stack in inner]
    controls: list[widgets.Widget] = [slider]
    choice = None
    if choices is None:
        shown = inner[0]
    else:
        kind = widgets.ToggleButtons if toggle else widgets.Dropdown
        choice = kind(options=choice_pairs, index=choice_start, description=choice_description, style=style)
        shown = widgets.Stack(inner, selected_index=choice_start)
        links.append(widgets.jsdlink((choice, "index"), (shown, "selected_index")))
        controls.append(choice)
    shown.add_class(STACK_CLASS)
    box = widgets.VBox([*controls, shown])
    box.add_class(BOX_CLASS)
    box._live_links = links  # keep the link widgets referenced with the box
    box._live_compute = compute  # fn afresh at a position (i, j): tools/platforms/colab_frontend.py compares with it

    def refresh(_change=None) -> None:
        """In a live kernel: compute a live-only position when the reader moves to it."""
        i, j = slider.index, (choice.index if choice is not None else 0)
        out = grid[j][i]
        if not keep[i] and out.outputs and out.outputs[0].get("text", "").startswith(LIVE_ONLY):
            out.outputs = tuple(compute(i, j))

    slider.observe(refresh, "index")
    if choice is not None:
        choice.observe(refresh, "index")
    return box


def _python_driven(slider_pairs, choice_pairs, start, choice_start, description, choice_description, toggle,
                   style, compute, static) -> widgets.VBox | None:
    """ipywidgets 7 (no `Stack`): the controls are observed in the kernel, and each move redraws
    one `Output` with `with output:` (the way Colab's widget frontend shows kernel output). A
    position is computed when first shown and kept for the next visit."""
    from IPython.display import clear_output

    slider = widgets.SelectionSlider(
        options=slider_pairs, index=start, description=description, style=style,
        continuous_update=False, layout=widgets.Layout(width="100%", max_width="34em"),
    )
    if not _reaches_a_frontend(slider):
        slider.close()
        static()
        return None
    controls: list[widgets.Widget] = [slider]
    choice = None
    if choice_pairs is not None:
        kind = widgets.ToggleButtons if toggle else widgets.Dropdown
        choice = kind(options=choice_pairs, index=choice_start, description=choice_description, style=style)
        controls.append(choice)
    shown = widgets.Output()
    shown.add_class(STACK_CLASS)
    kept: dict[tuple[int, int], list[dict]] = {}

    def redraw(_change=None) -> None:
        """Show the controls' position in the Output; a failure is shown there too (a move
        happens outside any cell, so an error raised here would reach only the kernel's log)."""
        where = (slider.index, choice.index if choice is not None else 0)
        with shown:
            if where not in kept:
                kept[where] = compute(*where)
            clear_output(wait=bool(kept[where]))
            _publish(kept[where])

    kept[(start, choice_start)] = compute(start, choice_start)  # a failure here fails the cell
    redraw()
    slider.observe(redraw, "index")
    if choice is not None:
        choice.observe(redraw, "index")
    box = widgets.VBox([*controls, shown])
    box.add_class(BOX_CLASS)
    box._live_compute = compute  # fn afresh at a position (i, j): tools/platforms/colab_frontend.py compares with it
    return box
