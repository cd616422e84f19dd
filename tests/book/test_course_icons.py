"""book/_ext/course_icons.py: the theme's icons as CSS masks, and the page head without fontawesome.js."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def icons():
    spec = importlib.util.spec_from_file_location("course_icons", ROOT / "book" / "_ext" / "course_icons.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def packs(icons):
    return icons.theme_icons(icons._fontawesome().read_text(encoding="utf-8"))


def test_the_theme_script_is_read_pack_by_pack(packs):
    assert {"brands", "solid", "regular"} <= set(packs)
    width, height, path = packs["solid"]["bars"]
    assert (width, height) == (448, 512) and path.startswith("M0 96")
    assert packs["brands"]["github"][0] == 496
    assert "magnifying-glass" in packs["solid"] and len(packs["solid"]) > 1000


def test_the_icons_a_page_uses_are_found_with_their_pack(icons, tmp_path):
    page = tmp_path / "a.html"
    page.write_text('<i class="fa-solid fa-magnifying-glass fa-lg"></i><span class="fa-solid fa-bars"></span>'
                    '<i class="fab fa-github"></i><i class="theme-switch fa-solid fa-sun fa-lg"></i>'
                    '<div class="fa-not-an-icon"></div><i class="fas fa-nonexistent-icon"></i>')
    used = icons.used_icons([page])
    assert used == {("solid", "magnifying-glass"), ("solid", "bars"), ("brands", "github"), ("solid", "sun"),
                    ("solid", "nonexistent-icon")}


def test_each_icon_becomes_a_mask_and_an_unknown_one_is_named(icons, packs):
    css, missing = icons.icon_css(packs, {("solid", "bars"), ("brands", "github"), ("solid", "no-such-icon")})
    assert missing == ["fa-solid fa-no-such-icon"]
    assert ".fas.fa-bars, .fa-solid.fa-bars, .fa.fa-bars { --course-icon: url(\"data:image/svg+xml," in css
    assert ".fab.fa-github, .fa-brands.fa-github {" in css
    assert "content: none" in css and "CC BY 4.0" in css  # no icon font is fetched; the licence is named
    svg = re.search(r"fa-bars \{ --course-icon: url\(\"data:image/svg\+xml,([^\"]+)\"\)", css).group(1)
    assert "%3Csvg" in svg and "viewBox=%270 0 448 512%27" in svg


def test_the_page_head_is_the_themes_without_fontawesome_js():
    """The override renders the theme's own macros, less the one script (whatever the theme's digest)."""
    import jinja2

    theme = (Path(__import__("pydata_sphinx_theme").__file__).parent / "theme" / "pydata_sphinx_theme" / "static"
             / "webpack-macros.html")
    ours = ROOT / "book" / "_templates" / "static" / "webpack-macros.html"
    env = jinja2.Environment(loader=jinja2.DictLoader({"!static/webpack-macros.html": theme.read_text(),
                                                       "static/webpack-macros.html": ours.read_text()}))
    context = {"pathto": lambda name, resource=0: f"../{name}"}
    mine = env.get_template("static/webpack-macros.html").make_module(context)
    theirs = env.get_template("!static/webpack-macros.html").make_module(context)
    assert "fontawesome.js" in str(theirs.head_js_preload())
    assert "fontawesome.js" not in str(mine.head_js_preload())
    kept = [line.strip() for line in str(theirs.head_js_preload()).splitlines() if line.strip()
            and "fontawesome" not in line and "So that users can add custom icons" not in line]
    assert kept and all(line in str(mine.head_js_preload()) for line in kept)
    assert str(mine.head_pre_assets()).strip() == str(theirs.head_pre_assets()).strip()
    assert str(mine.body_post()).strip() == str(theirs.body_post()).strip()
