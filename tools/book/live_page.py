"""A page with one live demo of each kind, in a copy of the built book: what test_live.py and
benchmarks/live_model.py drive in Chromium.

`mirror` makes the copy cheaply (links to the built book's files, so that a test can replace one
file of the model, or the manifest, without touching the book), and writes `FIXTURE`: a lesson
page of the built book with its article replaced by the six demos (search, pooling, InfoNCE at
tau 0.5 and 0.05, compare, the batch lab). It is the built page otherwise, with the theme's and the course's
scripts and styles and the live loader as Sphinx put them there, so the demos are tested as a
reader meets them whether or not the lessons have their demos yet.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

FIXTURE = "notebooks/live-fixture.html"
TEMPLATE = "notebooks/03_infonce.html"  # a lesson page: MathJax, widgets, require.js all on it
DEMOS = """
<section id="live-fixture">
<h1>Live demos<a class="headerlink" href="#live-fixture">#</a></h1>
<p>One live demo of each kind.</p>
<div class="live-demo" data-live="search"></div>
<div class="live-demo" data-live="pooling"></div>
<div class="live-demo" data-live="infonce" data-tau="0.5"></div>
<div class="live-demo" data-live="infonce" data-tau="0.05"></div>
<div class="live-demo" data-live="compare"></div>
<div class="live-demo" data-live="batch"></div>
</section>
"""
ARTICLE = re.compile(r'(<article class="bd-article">).*?(</article>)', re.S)


def _link_tree(source: Path, target: Path) -> None:
    """``target`` holds a link to every file under ``source``, in the same folders."""
    for folder, _, names in os.walk(source):
        here = target / Path(folder).relative_to(source)
        here.mkdir(parents=True, exist_ok=True)
        for name in names:
            os.symlink(Path(folder) / name, here / name)


def mirror(book: Path, target: Path) -> Path:
    """A copy of the built book at ``target`` (links), with `FIXTURE` added; returns ``target``."""
    if not (book / "live" / "manifest.json").is_file():
        raise FileNotFoundError(f"{book}: no live/manifest.json in the built book (make book builds it with "
                                "make live first)")
    target.mkdir(parents=True, exist_ok=True)
    for entry in book.iterdir():
        if entry.name in ("live", "notebooks"):
            _link_tree(entry, target / entry.name)
        else:
            os.symlink(entry, target / entry.name)
    page = (book / TEMPLATE).read_text(encoding="utf-8")
    if not ARTICLE.search(page):
        raise ValueError(f"{book / TEMPLATE}: no <article class=\"bd-article\"> to put the demos in")
    (target / FIXTURE).write_text(ARTICLE.sub(lambda m: m.group(1) + DEMOS + m.group(2), page, count=1),
                                  encoding="utf-8")
    return target


def replace_file(site: Path, rel: str, data: bytes | None) -> None:
    """Put ``data`` at ``site/rel`` in place of the link there (None: leave the file out)."""
    path = site / rel
    if path.is_symlink() or path.exists():
        path.unlink()
    if data is not None:
        path.write_bytes(data)


def restore_file(book: Path, site: Path, rel: str) -> None:
    """The link to the built book's file again."""
    path = site / rel
    if path.is_symlink() or path.exists():
        path.unlink()
    os.symlink(book / rel, path)
