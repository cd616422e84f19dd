"""The browser check's page-level rules that need no browser: glossary links, page weights, stored images."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bc():
    spec = importlib.util.spec_from_file_location("browser_check", ROOT / ".ci" / "browser_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GLOSSARY = """<html><body><dl class="glossary">
<dt id="term-Attention-mask">Attention mask<a class="headerlink" href="#term-Attention-mask">#</a></dt><dd>...</dd>
<dt id="term-Chunking">Chunking<a class="headerlink" href="#term-Chunking">#</a></dt><dd>...</dd>
<dt id="term-MRR-k">MRR@k<a class="headerlink" href="#term-MRR-k">#</a></dt><dd>...</dd>
</dl><h2 id="not-a-term">Other</h2></body></html>"""


@pytest.fixture()
def book(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "glossary.html").write_text(GLOSSARY)
    return tmp_path


def links(*pairs):
    return [{"href": href, "text": text} for text, href in pairs]


def test_glossary_links_that_land_on_their_entry_pass(bc, book):
    base = "http://127.0.0.1:8000/notebooks/01_pooling.html"
    ok = links(("attention masks", "../book/glossary.html#term-Attention-mask"),
               ("chunk", "../book/glossary.html#term-Chunking"),
               ("MRR@10", "../book/glossary.html#term-MRR-k"),
               ("the glossary", "../book/glossary.html"))
    assert bc.check_glossary_links(book, ok, base) == []


def test_glossary_links_that_miss_their_entry_are_reported(bc, book):
    base = "http://127.0.0.1:8000/notebooks/01_pooling.html"
    bad = links(("padding", "../book/glossary.html"),
                ("padding", "../book/glossary.html#not-a-term"),
                ("padding", "../book/glossary.html#term-Chunking"))
    problems = bc.check_glossary_links(book, bad, base)
    assert len(problems) == 3
    assert "lands at the top of the glossary" in problems[0]
    assert "not a glossary entry" in problems[1]
    assert "lands on the entry 'Chunking', which it does not name" in problems[2]


def test_page_weight_counts_the_html_and_the_images_it_loads(bc, tmp_path):
    (tmp_path / "_images").mkdir()
    (tmp_path / "_images" / "fig.png").write_bytes(b"x" * 1000)
    (tmp_path / "_images" / "other.png").write_bytes(b"y" * 500)
    page = tmp_path / "notebooks" / "01.html"
    page.parent.mkdir()
    html = '<img src="../_images/fig.png"><img src="../_images/fig.png"><img src="data:image/png;base64,AAAA">'
    page.write_text(html)
    weights = bc.page_weights(tmp_path, [page])
    assert weights["pages"] == {"notebooks/01.html": len(html) + 1000}
    assert weights["total_bytes"] == len(html) + 1500


def test_shown_images_compare_with_the_stored_ones(bc):
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><text>a &amp; b</text></svg>'
    from urllib.parse import quote

    outputs = [{"output_type": "display_data", "data": {"image/svg+xml": svg}},
               {"output_type": "display_data", "data": {"image/png": "iVBOR\nw0K"}}]
    shown = ["data:image/svg+xml," + quote(svg), "data:image/png;base64,iVBORw0K"]
    assert [bc._image_data(s) for s in shown] == bc._stored_images(outputs)


@pytest.mark.parametrize("fmt, dpi", [("png", 100), ("png", 200), ("svg", 72)])
def test_figure_width_in_points_is_read_from_the_image_itself(bc, fmt, dpi):
    """What the figure-text rule divides by: 5 in drawn at any dpi (retina is 2x) is 360 pt."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot([0, 1], [0, 1])
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=dpi)
    plt.close(fig)
    assert bc.figure_width_pt(buf.getvalue()) == pytest.approx(360, abs=0.5)


def test_a_png_without_its_resolution_has_no_width_in_points(bc):
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 1, 8, 0, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(b"\x00\x00\x00")) + chunk(b"IEND", b""))
    assert bc.figure_width_pt(png) is None
