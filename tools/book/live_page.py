"""A page with one live demo of each kind, in a copy of the built book, for test_live*.py and
benchmarks/live_model.py. The copy is links (a test replaces one file without touching the book); the
page, `FIXTURE`, is a built lesson page with its article replaced by `DEMOS`, so the demos meet the
theme's and the course's scripts and styles as a reader's page has them.
"""

from __future__ import annotations

import os
import re
import shutil
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


def mirror(book: Path, target: Path) -> Path:
    """A copy of the built book at ``target`` (links), with `FIXTURE` added; returns ``target``."""
    if not (book / "live" / "manifest.json").is_file():
        raise FileNotFoundError(f"{book}: no live/manifest.json in the built book (make book builds it with "
                                "make live first)")
    shutil.copytree(book, target, copy_function=os.symlink, dirs_exist_ok=True)  # a link for each file
    page = (book / TEMPLATE).read_text(encoding="utf-8")
    if not ARTICLE.search(page):
        raise ValueError(f"{book / TEMPLATE}: no <article class=\"bd-article\"> to put the demos in")
    (target / FIXTURE).write_text(ARTICLE.sub(lambda m: m.group(1) + DEMOS + m.group(2), page, count=1),
                                  encoding="utf-8")
    return target

