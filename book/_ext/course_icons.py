"""Icons without Font Awesome's 1.45 MB script on every page (issue 32, "Lighter pages").

pydata-sphinx-theme loads ``fontawesome.js`` (every Font Awesome Free icon, as JavaScript that
swaps each ``<i class="fa-solid fa-bars">`` for an SVG) on every page, for the 15 or so icons
its buttons use. This extension:

- drops that script from the page head (a template override, ``book/_templates``: the theme's
  own ``static/webpack-macros.html`` less the one line);
- writes ``_static/course-icons.css`` when the build finishes: for each icon class the built
  pages use, its SVG path (taken from the installed theme's own ``fontawesome.js``, so the
  shapes are the theme's) as a CSS mask painted in the text colour. An icon a page uses that
  the theme does not define is a build warning (an error under ``-W``).

Font Awesome Free icons: CC BY 4.0, https://fontawesome.com/license/free (credited in the CSS).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

CSS_NAME = "course-icons.css"
TEMPLATES = Path(__file__).resolve().parent.parent / "_templates"
PACKS = {"fab": "brands", "fa-brands": "brands", "fas": "solid", "fa-solid": "solid", "far": "regular",
         "fa-regular": "regular"}
# What fontawesome.js's CSS does: sizes and the alignment with the text around the icon.
NOT_ICONS = {"fa-lg", "fa-xs", "fa-sm", "fa-xl", "fa-2x", "fa-fw", "fa-brands", "fa-solid", "fa-regular"}
ENTRY = re.compile(r'(?:"([\w-]+)"|([A-Za-z_$][\w$]*)|(\d+)):\[(\d+),(\d+),\[[^\]]*\],"[0-9a-f]*",'
                   r'("(?:[^"\\]|\\.)*"|\[[^\]]*\])\]')
PACK_END = re.compile(r'd\("fa[bsr]",p\),d\("fa-(brands|solid|regular)",p\)')
CLASSES = re.compile(r'<(?:i|span)\b[^>]*\bclass="([^"]*)"')
BASE = """/* Font Awesome Free icons (CC BY 4.0, https://fontawesome.com/license/free), drawn as CSS masks in
   the text colour: written by book/_ext/course_icons.py from the theme's own fontawesome.js, which
   the pages no longer load. */
.fa, .fas, .far, .fab, .fa-solid, .fa-regular, .fa-brands {
  display: inline-block;
  width: 1.25em;
  height: 1em;
  vertical-align: -0.125em;
  background-color: currentColor;
  -webkit-mask: var(--course-icon) center / contain no-repeat;
  mask: var(--course-icon) center / contain no-repeat;
}
.fa-lg { font-size: 1.25em; line-height: 0.05em; vertical-align: -0.2em; }
/* No icon font: the theme's and the widgets' stylesheets would otherwise fetch one for a glyph
   the mask already draws. */
.fa, .fas, .far, .fab, .fa-solid, .fa-regular, .fa-brands { font-family: inherit !important; }
.fa::before, .fas::before, .far::before, .fab::before, .fa-solid::before, .fa-regular::before,
.fa-brands::before { content: none !important; }
"""


def theme_icons(script: str) -> dict[str, dict[str, tuple[int, int, str]]]:
    """Every icon fontawesome.js defines, by pack ("brands", "solid", "regular"): name -> (width,
    height, SVG path)."""
    packs: dict[str, dict[str, tuple[int, int, str]]] = {}
    start = 0
    for end in PACK_END.finditer(script):
        icons = packs.setdefault(end.group(1), {})
        for m in ENTRY.finditer(script, start, end.start()):
            name = m.group(1) or m.group(2) or m.group(3)
            path = m.group(6)
            if path.startswith("["):  # a duotone pair: draw both parts
                path = " ".join(re.findall(r'"((?:[^"\\]|\\.)*)"', path))
            else:
                path = path[1:-1]
            icons[name] = (int(m.group(4)), int(m.group(5)), path)
        start = end.end()
    return packs


def used_icons(pages: list[Path]) -> set[tuple[str, str]]:
    """(pack, icon) for every Font Awesome <i> or <span> in the pages ("solid" where the pack is not said)."""
    found = set()
    for page in pages:
        for classes in CLASSES.findall(page.read_text(encoding="utf-8", errors="replace")):
            names = classes.split()
            pack = next((PACKS[n] for n in names if n in PACKS), None)
            icons = [n[3:] for n in names if n.startswith("fa-") and n not in NOT_ICONS and n not in PACKS]
            if pack or (icons and "fa" in names):
                found |= {(pack or "solid", icon) for icon in icons}
    return found


def icon_css(packs: dict, used: set[tuple[str, str]]) -> tuple[str, list[str]]:
    """The stylesheet for these icons, and the ones the theme does not define."""
    rules, missing = [BASE], []
    for pack, icon in sorted(used):
        found = packs.get(pack, {}).get(icon)
        if not found:
            missing.append(f"fa-{pack} fa-{icon}")
            continue
        width, height, path = found
        svg = f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} {height}'><path d='{path}'/></svg>"
        selector = ", ".join(f".{p}.fa-{icon}" for p, name in PACKS.items() if name == pack)
        if pack == "solid":
            selector += f", .fa.fa-{icon}"
        rules.append(f'{selector} {{ --course-icon: url("data:image/svg+xml,{quote(svg, safe=" =/:,.-")}"); }}\n')
    return "".join(rules), missing


def _fontawesome() -> Path:
    import pydata_sphinx_theme

    return Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static" / "scripts" \
        / "fontawesome.js"


def _templates(app, config) -> None:
    if str(TEMPLATES) not in config.templates_path:
        config.templates_path.append(str(TEMPLATES))


def _write(app, exception) -> None:
    if exception or app.builder.format != "html":
        return
    from sphinx.util import logging

    out = Path(app.outdir)
    pages = [p for p in out.rglob("*.html") if not p.relative_to(out).as_posix().startswith("_static/")]
    css, missing = icon_css(theme_icons(_fontawesome().read_text(encoding="utf-8")), used_icons(pages))
    for name in missing:
        logging.getLogger(__name__).warning(f"course_icons: the pages use the icon {name!r}, which the theme's "
                                            "Font Awesome does not define")
    (out / "_static" / CSS_NAME).write_text(css, encoding="utf-8")


def setup(app):
    app.connect("config-inited", _templates)
    app.add_css_file(CSS_NAME)
    app.connect("build-finished", _write)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
