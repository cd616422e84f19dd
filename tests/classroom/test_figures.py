"""labs.classroom.figures: the figure defaults setup() applies (a phone's column, 4.5:1 colours) and the
measurement of every text a figure draws."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from labs.classroom import figures  # noqa: E402
from labs.classroom.figures import MIN_TEXT_PT, PALETTE, contrast, smallest_text_pt, style  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_contrast_is_the_wcag_ratio():
    assert contrast("black") == pytest.approx(21)
    assert contrast("white") == pytest.approx(1)
    assert contrast("#767676") == pytest.approx(4.54, abs=0.01)  # the lightest grey that passes 4.5:1
    assert contrast("#ff7f0e") == pytest.approx(2.5, abs=0.05)  # tab10's orange: the issue's 2.5:1


def test_every_colour_of_the_cycle_reads_as_text_on_white():
    assert len(set(PALETTE)) == 10
    for colour in PALETTE:
        assert contrast(colour) >= 4.5, colour  # text 4.5:1, marks 3:1: both hold


def test_the_cycle_keeps_tab10s_hues_in_order():
    """A lesson that says C2 means green and C3 red stays right."""
    import colorsys

    from matplotlib.colors import to_rgb

    tab10 = plt.rcParamsDefault["axes.prop_cycle"].by_key()["color"]
    for ours, theirs in zip(PALETTE, tab10):
        h1, _, _ = colorsys.rgb_to_hls(*to_rgb(ours))
        h2, _, _ = colorsys.rgb_to_hls(*to_rgb(theirs))
        assert min(abs(h1 - h2), 1 - abs(h1 - h2)) < 0.02, (ours, theirs)


def busy_figure():
    """Everything that carries text: title, labels, ticks of a log axis, a legend, an annotation."""
    fig, (top, low) = plt.subplots(2, 1)
    top.semilogx([0.005, 0.05, 0.5, 2], [4, 3, 2, 1], label="loss")
    top.set_title("loss against tau")
    top.set_xlabel("tau")
    top.legend(title="runs")
    top.annotate("cold", (0.005, 4))
    low.bar(["right card", "wrong"], [0.9, 0.1])
    fig.suptitle("two panels")
    return fig


def test_with_the_defaults_every_text_is_at_least_the_floor():
    with matplotlib.rc_context(style()):
        fig = busy_figure()
        assert fig.get_size_inches()[0] <= 4.8  # a phone's column
        smallest = smallest_text_pt(fig)
        plt.close(fig)
    assert smallest >= MIN_TEXT_PT + 1  # a point to spare: a tight bounding box may shrink it a little


def test_matplotlibs_own_defaults_fail_the_floor_and_the_measurement_says_so():
    """The issue's case: the log axis's exponents at 0.7 of the tick size, a small legend."""
    with matplotlib.rc_context({"font.size": 11}):
        fig = busy_figure()
        assert smallest_text_pt(fig) == pytest.approx(7.7)
        fig.axes[0].legend(fontsize=6)
        assert smallest_text_pt(fig) == pytest.approx(6)
        plt.close(fig)


def test_a_text_outside_the_canvas_is_measured_as_the_tight_picture_shows_it():
    """The PNGs are saved with a tight box, which takes in a text placed outside the canvas: the
    measurement (one plain draw) counts it too."""
    with matplotlib.rc_context({"font.size": 11}):
        fig = busy_figure()
        fig.text(1.3, 0.5, "a note beside the figure", fontsize=5)
        assert smallest_text_pt(fig) == pytest.approx(5)
        plt.close(fig)


def test_a_figure_without_text_measures_none():
    fig, ax = plt.subplots()
    ax.axis("off")
    assert smallest_text_pt(fig) is None
    assert figures.png_metadata(fig) == {"Software": None}
    plt.close(fig)


def test_svg_text_sizes_reads_texts_and_the_spans_of_mathtext():
    svg = ('<svg><text style="font-size: 11px; font-family: x">0.1</text>'
           '<text><tspan style="font-size: 11px">10</tspan><tspan style="font-size: 7.7px">\u22122</tspan>'
           '<tspan style="font-size: 5px">\xa0</tspan></text><text style="font-size: 3px"> </text></svg>')
    assert figures.svg_text_sizes(svg) == [11.0, 11.0, 7.7]  # blank text aside


PROBE = """
import base64, json
import matplotlib.pyplot as plt
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.enable_gui = lambda gui=None: None  # a terminal shell has no GUI loop to start; a kernel does this
from labs.classroom.setup import setup
setup(0, threads=1)
fig, ax = plt.subplots()
ax.semilogx([0.01, 1], [0, 1], label="x")
ax.legend()
data, meta = shell.display_formatter.format(fig)
png = base64.b64decode(data["image/png"])
from tools.book.browser import png_text, figure_width_pt
print(json.dumps({"text": png_text(png), "width_pt": figure_width_pt(png), "meta": meta.get("image/png"),
                  "colour": plt.rcParams["axes.prop_cycle"].by_key()["color"][1],
                  "size": plt.rcParams["legend.fontsize"]}))
"""


@pytest.mark.e2e  # a fresh process
def test_setup_applies_the_defaults_and_each_png_records_its_smallest_text(tmp_path):
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={"MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                               "IPYTHONDIR": str(tmp_path / "ipython"), "MPLCONFIGDIR": str(tmp_path / "mpl")})
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["colour"] == PALETTE[1] and got["size"] == 11
    assert float(got["text"][figures.TEXT_KEY]) == pytest.approx(11)  # decades in digits: no 7.7 pt exponent
    assert "Software" not in got["text"]
    assert got["meta"]["width"] > 0  # still a retina PNG, shown at half its pixels
    assert got["width_pt"] == pytest.approx(4.8 * 72, rel=0.15)
