"""What a glossary link says, in the sources (where it lands is Sphinx's -n -W). A {term} with its own
text names the entry it lands on ({term}`hard negatives <hard negative>`, not {term}`padding <chunking>`),
and a plain link to the glossary page says it is the glossary.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "book").glob("*.md"))
TERM = re.compile(r"\{term\}`([^`<]*?)\s*<([^`>]+)>`")
PAGE_LINK = re.compile(r"\[([^\]]*)\]\(([^)#]*glossary(?:\.md)?)\)")


def prose(path: Path) -> str:
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return path.read_text(encoding="utf-8")


def stems(text: str) -> set[str]:
    """Word stems, crudely: the first five letters ("negatives" and "negative", "chunk" and "chunking")."""
    return {w[:5] for w in re.findall(r"[a-z0-9]+", text.lower())}


def problems(text: str) -> list[str]:
    found = [f"{{term}}`{shown} <{entry}>` lands on the entry {entry!r}, which its text does not name"
             for shown, entry in TERM.findall(text) if not stems(shown) & stems(entry)]
    return found + [f"[{shown}]({target}) lands at the top of the glossary, not on its entry (write {{term}}`...`)"
                    for shown, target in PAGE_LINK.findall(text) if "glossary" not in shown.lower()]


def test_the_rules_on_made_up_prose():
    assert problems("{term}`hard negatives <hard negative>`, {term}`chunk <Chunking>`, the [glossary](glossary.md)") == []
    found = problems("{term}`padding <Chunking>` and [padding](../book/glossary.md)")
    assert len(found) == 2 and "which its text does not name" in found[0] and "top of the glossary" in found[1]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_every_glossary_link_names_what_it_lands_on(path):
    found = problems(prose(path))
    assert not found, f"{path.relative_to(ROOT)}: " + "; ".join(found)
