"""How the course draws its figures: for a phone's column, in colours every reader can tell from white.

`setup()` applies `STYLE` to matplotlib for every lesson. A figure drawn for a phone is at most
4.8 in wide (the default size below) with panels stacked; shown in the 358 px column of a 390 px
screen it keeps about 0.95 of its size, so text drawn at `MIN_TEXT_PT` or more (11 pt for tick
labels and legends here) shows at 10 px or more. Log axes label their decades 0.001 ... 1000
in plain digits, not as 10 with a small superscript exponent (matplotlib draws exponents at 0.7
of the label's size: 7.7 pt for an 11 pt label).

`PALETTE` is matplotlib's tab10 with each colour darkened (in HLS lightness, hue kept) to a
contrast of at least 4.5:1 against white: marks need 3:1 (WCAG 1.4.11) and text 4.5:1 (1.4.3),
so a coloured mark and a coloured label are both legible. The order is tab10's, so "C2" is still
green and "C3" still red.

`smallest_text_pt(fig)` measures every text a figure draws (tick labels, legends, annotations,
mathtext super- and subscripts) in points; the slider's stored figures and the notebooks' PNG
figures carry that number (`TEXT_KEY`), which the browser check turns into pixels on screen.
"""

from __future__ import annotations

import io
import re

__all__ = ["MIN_TEXT_PT", "PALETTE", "STYLE", "TEXT_KEY", "contrast", "png_metadata", "smallest_text_pt", "style",
           "svg_text_sizes"]

MIN_TEXT_PT = 10.0  # no figure text below this, in points (the browser check: 10 px at 390 px)
TEXT_KEY = "labs-smallest-text-pt"  # a PNG tEXt keyword: the smallest text the figure draws, in points

# tab10, darkened where it was lighter than 4.5:1 against white (orange 2.5:1, green 3.4:1, ...).
PALETTE = ("#1f77b4", "#bb5800", "#258625", "#d62728", "#8f60ba",
           "#8c564b", "#d12b9e", "#757575", "#777816", "#10818c")

STYLE = {
    "font.size": 12,
    "axes.titlesize": 12,
    "axes.labelsize": 12,
    "xtick.labelsize": 11,
    "ytick.labelsize": 11,
    "legend.fontsize": 11,
    "legend.title_fontsize": 11,
    "figure.titlesize": 12,
    "axes.formatter.min_exponent": 4,  # log axes: 0.001 ... 1000 in digits, no 7.7 pt exponents
    "figure.figsize": (4.8, 3.4),  # a phone's column
    "figure.dpi": 100,
    "text.color": "black",
    "axes.labelcolor": "black",
    "xtick.color": "black",
    "ytick.color": "black",
}


def style() -> dict:
    """STYLE and the colour cycle (a cycler over PALETTE): the rcParams setup() applies."""
    from cycler import cycler

    return {**STYLE, "axes.prop_cycle": cycler(color=list(PALETTE))}


def _linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def contrast(color, background="white") -> float:
    """WCAG contrast ratio of two matplotlib colours (1 to 21)."""
    from matplotlib.colors import to_rgb

    def luminance(c) -> float:
        r, g, b = (_linear(x) for x in to_rgb(c))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    a, b = sorted((luminance(color), luminance(background)), reverse=True)
    return (a + 0.05) / (b + 0.05)


_SIZE = re.compile(r"font-size:\s*([\d.]+)px")
_TSPAN = re.compile(r"<tspan\b([^>]*)>([^<]*)</tspan>")


def svg_text_sizes(svg: str) -> list[float]:
    """The font size (in the SVG's units: points for matplotlib) of every visible text in an SVG
    drawn with ``svg.fonttype: none``: each <text>, and each <tspan> of a mathtext label."""
    sizes = []
    for m in re.finditer(r"<text\b([^>]*)>(.*?)</text>", svg, re.S):
        attrs, body = m.group(1), m.group(2)
        spans = _TSPAN.findall(body)
        if spans:
            sizes += [float(s.group(1)) for a, t in spans if t.strip(" \xa0\n") and (s := _SIZE.search(a))]
        elif body.strip() and (s := _SIZE.search(attrs)):
            sizes.append(float(s.group(1)))
    return sizes


def smallest_text_pt(fig) -> float | None:
    """The smallest text a matplotlib figure draws, in points, mathtext exponents included (None
    if it draws no text). Measured on an SVG rendering with text kept as text."""
    import matplotlib

    buf = io.StringIO()
    # Every text is written out whether or not it lies inside the canvas, so the whole figure is
    # drawn once (no tight box: that draws it twice).
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(buf, format="svg")
    sizes = svg_text_sizes(buf.getvalue())
    return min(sizes) if sizes else None


def png_metadata(fig) -> dict[str, str | None]:
    """PNG metadata for a figure: no Software stamp, and its smallest text (TEXT_KEY) when it has text."""
    smallest = smallest_text_pt(fig)
    meta: dict[str, str | None] = {"Software": None}
    if smallest is not None:
        meta[TEXT_KEY] = f"{smallest:.2f}"
    return meta
