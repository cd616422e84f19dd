"""Cross-references held like numbers: "lesson N shows X" must point at the cell of lesson N that does.

A sentence that says another lesson shows, does or teaches something is a claim about that
lesson, and claims drift when lessons change (a sentence said lesson 7 adds up the gradients of
small batches to imitate a big one after lesson 7 had come to teach the opposite). So such a
sentence must carry a reference to the place that holds it, and the place must be in the lesson
named.

The convention. The place is a MyST target in one of lesson N's markdown cells, a line of its
own before the paragraph or heading it names,

    (sec-accumulation)=

(labels start with ``sec-``; each is defined once in the book), and the sentence links to it with
the ``{ref}`` role: ``{ref}`lesson 7 shows <sec-accumulation>```, or a plain
``{ref}`sec-accumulation```. Sphinx checks that the label exists (``-W -n``); this module checks
that it is in the lesson the sentence names.

What counts as a claim (`CLAIM`): a mention of a lesson ("lesson 7", "lessons 7", a link
``[Fine-tuning](07_finetuning.ipynb)``, ``{doc}`...<../notebooks/07_finetuning>```), followed by
one of the verbs of `VERBS` ("lesson 7 shows", "[Mining](06_mining.ipynb) found"). A ``{ref}``
whose label lives in lesson N is itself a mention of lesson N and holds the claim.

The rules (`problems`):

1. A claim about lesson N has, in its sentence, a ``{ref}`` to a label defined in lesson N.
2. Every ``{ref}`` label a page uses is defined in some lesson or page (Sphinx says so too, but
   only in a full build).
3. A label is defined once.

Scope: the markdown cells of the lessons and the book's pages (``book/*.md``); code blocks and
inline code are left out. ``python -m tests.notebooks.xref`` prints every problem.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

VERBS = ("shows", "showed", "does", "did", "teaches", "taught", "adds", "added", "trains", "trained",
         "computes", "computed", "finds", "found", "measures", "measured", "builds", "built", "asks",
         "asked", "derives", "derived", "proves", "proved", "runs", "ran", "mines", "mined", "explains",
         "explained", "compares", "compared", "checks", "checked", "uses", "used", "takes", "took")

LABEL = re.compile(r"^\((?P<label>[A-Za-z0-9_.:-]+)\)=\s*$", re.M)
REF = re.compile(r"\{ref\}`(?:[^`<]*<(?P<target>[^>`]+)>|(?P<plain>[^`<>]+))`")
MENTION = re.compile(
    r"\blessons? (?P<n>\d{1,2})\b"
    r"|\[[^\]]*\]\((?:\.\./notebooks/|\.\./|\./)?(?P<link>\d\d)_[a-z0-9_]+(?:\.ipynb|\.md)?(?:#[^)]*)?\)"
    r"|\{doc\}`[^`<]*<(?:\.\./notebooks/|\.\./)?(?P<doc>\d\d)_[a-z0-9_]+>`"
    r"|\{ref\}`[^`<]*<(?P<refd>[^>`]+)>`|\{ref\}`(?P<refp>[^`<>]+)`")
ADVERB = r"(?:(?:also|then|first|already|now|later|again)\s+)?"
CLAIM = re.compile(rf"(?:{MENTION.pattern})\)?\s+{ADVERB}(?:{'|'.join(VERBS)})\b")
CODE = re.compile(r"```.*?```|~~~.*?~~~|(?<!\{ref\})(?<!\{doc\})(?<!\{term\})(?<!\{glue:text\})`[^`\n]*`", re.S)
SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+(?=[A-Z*\[{(])|\n\s*\n")


@dataclass
class Text:
    where: str          # "notebooks/02_gradients.ipynb cell 13" or "book/credits.md"
    lesson: int | None  # the lesson this text is in (None for a book page)
    text: str


def read_texts(root: Path = ROOT) -> list[Text]:
    """The markdown of every lesson (one Text per cell) and every book page."""
    out = []
    for path in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for i, cell in enumerate(cells):
            if cell["cell_type"] == "markdown":
                out.append(Text(f"{path.relative_to(root)} cell {i}", int(path.name[:2]), "".join(cell["source"])))
    for path in sorted((root / "book").glob("*.md")):
        out.append(Text(str(path.relative_to(root)), None, path.read_text(encoding="utf-8")))
    return out


def labels(texts: list[Text]) -> tuple[dict[str, int | None], list[str]]:
    """label -> the lesson that defines it (None: a book page), and the labels defined twice."""
    found: dict[str, int | None] = {}
    twice = []
    for t in texts:
        for m in LABEL.finditer(t.text):
            if m["label"] in found:
                twice.append(f"{t.where}: label ({m['label']})= is defined twice")
            found[m["label"]] = t.lesson
    return found, twice


def sentences(text: str) -> list[str]:
    """The text without code, cut into sentences (a blank line also ends one)."""
    return [s.strip() for s in SENTENCE_END.split(CODE.sub(" ", text)) if s.strip()]


def _lesson_of(m: re.Match, defined: dict[str, int | None]) -> int | None:
    for group in ("n", "link", "doc"):
        if m[group]:
            return int(m[group])
    return defined.get(m["refd"] or m["refp"] or "")


def claims(sentence: str, defined: dict[str, int | None]) -> list[tuple[int, str]]:
    """The lessons a sentence makes a claim about, with the words of each claim."""
    out = []
    for m in CLAIM.finditer(sentence):
        lesson = _lesson_of(m, defined)
        if lesson is not None:
            out.append((lesson, m[0]))
    return out


def refs(sentence: str) -> list[str]:
    return [m["target"] or m["plain"] for m in REF.finditer(sentence)]


def problems(texts: list[Text]) -> list[str]:
    """Every broken rule of the module docstring, one line each."""
    defined, out = labels(texts)
    for t in texts:
        for sentence in sentences(t.text):
            held = {defined.get(label, -1) for label in refs(sentence)}
            for label in refs(sentence):
                if label not in defined:
                    out.append(f"{t.where}: {{ref}}`{label}` names no label of the book")
            for lesson, words in claims(sentence, defined):
                if lesson == t.lesson:
                    continue  # a lesson speaking of itself
                if lesson not in held:
                    out.append(f"{t.where}: {words!r} claims something of lesson {lesson} without a {{ref}} "
                               f"to a label in lesson {lesson}: {sentence[:160]!r}")
    return out


if __name__ == "__main__":
    found = problems(read_texts())
    print("\n".join(found) or "no problems")
