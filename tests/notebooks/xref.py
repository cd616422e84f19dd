"""Cross-references held like numbers: "lesson N shows X" must point at the cell of lesson N that does.

A claim (`CLAIM`) is a mention of a lesson ("lesson 7", a link or ``{doc}`` to 07_..., or a ``{ref}``
to a label in lesson 7) followed by one of the `VERBS`. Its sentence must carry a ``{ref}`` to a MyST
label, ``(sec-accumulation)=``, defined in that lesson's markdown: ``{ref}`lesson 7 shows
<sec-accumulation>```. Sphinx (``-W -n``) fails on a label missing or defined twice; `problems` checks
that it is in the lesson named, over the lessons' markdown and the book's pages, code left out.
``python -m tests.notebooks.xref`` prints every problem.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.notebooks.order import Book, read_book

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


def read_texts(book: Book) -> list[Text]:
    """The markdown of every lesson (one Text per cell) and every page of the book."""
    lessons = [Text(f"{page}.ipynb cell {i}", int(page.split("/")[-1][:2]), text)
               for page in book.lessons for i, text in book.cells.get(page, [])]
    return lessons + [Text(f"{page}.md", None, text) for page, text in book.pages.items()]


def sentences(text: str) -> list[str]:
    """The text without code, cut into sentences (a blank line also ends one)."""
    return [s.strip() for s in SENTENCE_END.split(CODE.sub(" ", text)) if s.strip()]


def claims(sentence: str, defined: dict[str, int | None]) -> list[tuple[int, str]]:
    """The lessons a sentence makes a claim about, with the words of each claim."""
    out = []
    for m in CLAIM.finditer(sentence):
        number = m["n"] or m["link"] or m["doc"]
        lesson = int(number) if number else defined.get(m["refd"] or m["refp"])
        if lesson is not None:
            out.append((lesson, m[0]))
    return out


def problems(texts: list[Text]) -> list[str]:
    """Every claim of a sentence about another lesson without a {ref} to a label in that lesson."""
    defined = {m["label"]: t.lesson for t in texts for m in LABEL.finditer(t.text)}  # -> its lesson (None: a page)
    out = []
    for t in texts:
        for sentence in sentences(t.text):
            held = {defined.get(m["target"] or m["plain"]) for m in REF.finditer(sentence)}
            out += [f"{t.where}: {words!r} claims something of lesson {lesson} without a {{ref}} to a label in "
                    f"lesson {lesson}: {sentence[:160]!r}"
                    for lesson, words in claims(sentence, defined) if lesson != t.lesson and lesson not in held]
    return out


if __name__ == "__main__":
    print("\n".join(problems(read_texts(read_book()))) or "no problems")
