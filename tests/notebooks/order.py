"""The order of ideas: no lesson uses a term or a metric that only a later page teaches.

Each entry of book/glossary.md ends by naming the page that teaches it: ``Taught in {doc}`lesson 3
<../notebooks/03_infonce>`.`` (or a reference page). A lesson uses an entry through a ``{term}`` role or
a plain form of it in its markdown (case and plural ignored): its names, the text of the lessons' roles
pointing at it, `FORMS`, a metric's family (`METRICS`). Left out: code, URLs, glue and reference
targets, a link's text that only names a page, the "## Next" section and the `EVERYDAY` senses.

`check` reports, by lesson: an entry taught by a later lesson, or on a reference page in a paragraph
that does not link there; a "What to know first" naming a later page; a ``{term}`` naming no entry;
and, under "book/glossary", an entry naming no page of _toc.yml, the wrong lesson number, or a page
that never uses it. ``python -m tests.notebooks.order`` prints them all.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]

# Forms that the lessons write without a {term} role, and that the entry's names do not cover.
FORMS: dict[str, list[str]] = {
    "Fine-tuning": ["fine-tune", "fine-tuned"],
    "Validation set": ["validation"],
    "Test set": ["test split", "test once", "test used once"],
    "Bootstrap interval": ["bootstrap", "paired bootstrap"],
    "Checkpoint selection": ["checkpoint chosen", "kept checkpoint", "chosen checkpoint"],
    "Compute-matched control": ["compute-matched"],
    "Cosine similarity": ["cosine"],
    "Positive-aware mining": ["positive-aware"],
    "Approximate nearest-neighbour search": ["approximate nearest-neighbour", "ANN search"],
    "Multiple negatives ranking loss": ["MultipleNegativesRankingLoss"],
    "Query prefix": ["prefixes"],
    "Zero-shot classification": ["zero-shot"],
    "Gradient accumulation": ["accumulates gradients", "accumulation"],
}

# The metrics, by family: any of these patterns is a use of the entry.
METRICS: dict[str, str] = {
    "Recall@k": r"recall@(?!1(?![\d\w]))\w+",
    "Hit@1": r"hit@1|recall@1(?![\d\w])",
    "MRR@k": r"MRR(?:@\w+)?|(?:mean\s+)?reciprocal\s+rank",
    "nDCG@k": r"n?DCG(?:@\w+)?",
}

# Everyday senses of an entry's words that are not the entry.
EVERYDAY: dict[str, str] = {
    "Negative": r"negative\s+(?:slope|sign|number|values?|cosines?|gradient|scores?|infinity)"
                r"|(?:always|be|is|are|turns?)\s+negative|negative\s+(?:or|and)\s+positive",
    "Weight": r"weight(?:s|ed)?\s+by|weighted",
}

HTML_TAG = re.compile(r"</?(?:details|summary|div|span|p|br|a|img|sup|sub|b|i|em|strong|code|kbd|table|tr|td|th"
                      r"|figure|figcaption|small)\b[^>]*>", re.I)
MARK = "\x00"  # brackets a link's target in cleaned prose
NEXT_WORDS = r"\s+(?:Next|What's next|Up next)\b.*?"  # a "## Next" section, to the next heading of its level or higher
NEXT = re.compile(rf"^##{NEXT_WORDS}(?=^#{{1,2}}\s|\Z)|^###{NEXT_WORDS}(?=^#{{1,3}}\s|\Z)", re.M | re.S | re.I)
ROLE = re.compile(r"\{term\}`([^`<]*?)\s*(?:<([^`>]*)>)?`")
DOC_ROLE = re.compile(r"\{doc\}`([^`<]*?)\s*(?:<([^`>]*)>)?`")
MD_LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]*)[^)]*\)")
FENCE = re.compile(r"^(`{3,}|~{3,})(?!\{(?!code-cell))([^\n]*)\n.*?^\1[ \t]*$", re.S | re.M)
ENTRY = re.compile(r"^((?:\S.*\n)+)((?:[ \t]+.*\n|\s*\n)*)", re.M)  # its names, unindented; its definition
POINTER = re.compile(r"Taught in \{doc\}`([^`<]*?)\s*<([^`>]+)>`")
KNOW_FIRST = re.compile(r"\*\*What to know first:?\*\*:?(.*?)(?:\n\s*\n|\Z)", re.S | re.I)
LESSON_NUMBER = re.compile(r"\blessons?\s+(\d+)((?:\s*(?:,|and|to|-|–)\s*\d+)*)", re.I)


@dataclass
class Entry:
    names: list[str]
    taught_in: str | None  # a page of the contents, as _toc.yml writes it
    link_text: str

    @property
    def name(self) -> str:
        return self.names[0]


@dataclass
class Book:
    """What the rules read: the contents in order, the lessons' markdown cells, the pages, the glossary."""

    order: list[str]  # every page of _toc.yml in reading order, e.g. "notebooks/03_infonce"
    cells: dict[str, list[tuple[int, str]]]  # lesson -> its markdown cells, as (index in the notebook, source)
    titles: dict[str, str]  # page -> its title
    glossary: str  # the text of book/glossary.md
    pages: dict[str, str] = field(default_factory=dict)  # a markdown page -> its text

    @property
    def lessons(self) -> list[str]:
        return [p for p in self.order if p.startswith("notebooks/")]


# ---- reading the book ---------------------------------------------------------------------------

def toc_order(toc_text: str) -> list[str]:
    toc = yaml.safe_load(toc_text)
    order = [toc["root"]]
    for part in toc.get("parts", []):
        order += [chapter["file"] for chapter in part.get("chapters", [])]
    return order


def read_book(root: Path = ROOT) -> Book:
    order = toc_order((root / "_toc.yml").read_text())
    cells = {page: [(i, "".join(c["source"])) for i, c in enumerate(json.loads(path.read_text())["cells"])
                    if c["cell_type"] == "markdown"] for page in order if (path := root / f"{page}.ipynb").exists()}
    pages = {page: path.read_text() for page in order if (path := root / f"{page}.md").exists()}
    titles = {page: title.group(1).strip() if (title := re.search(r"^# (.+)$", text, re.M)) else ""
              for page, text in ({p: c[0][1] if c else "" for p, c in cells.items()} | pages).items()}
    return Book(order, cells, titles, (root / "book" / "glossary.md").read_text(), pages)


def parse_glossary(text: str) -> list[Entry]:
    """The entries of the ```{glossary} block, each with the page its last sentence says teaches it."""
    block = re.search(r"^```\{glossary\}[^\n]*\n(.*?)^```", text, re.S | re.M)
    entries = []
    for names, definition in ENTRY.findall(block.group(1) if block else ""):
        pointer = POINTER.search(" ".join(definition.split()))
        link_text, target = pointer.groups() if pointer else ("", None)
        entries.append(Entry([n.strip() for n in names.splitlines()], target and resolve("book/glossary", target),
                             link_text))
    return entries


def resolve(page: str, target: str) -> str:
    """A link target relative to ``page`` as _toc.yml names pages: "../notebooks/03_infonce.ipynb" from
    "book/glossary" is "notebooks/03_infonce"."""
    target = re.sub(r"\.(ipynb|md)$", "", target.split("#")[0])
    if target.startswith("/"):
        return target.lstrip("/")
    return posixpath.normpath(posixpath.join(posixpath.dirname(page), target))


def lookup(entries: list[Entry]) -> dict[str, Entry]:
    return {name.lower(): entry for entry in entries for name in entry.names}


def role_target(display: str, target: str | None) -> str:
    return " ".join((target or display).split()).lower()


# ---- what a lesson's prose says -------------------------------------------------------------------

def names_a_page(shown: str, titles) -> bool:
    """Text that only names a page: every word of it in one of the `titles`."""
    words = set(re.findall(r"[a-z0-9]+", shown.lower()))
    return bool(words) and any(words <= set(re.findall(r"[a-z0-9]+", title.lower())) for title in titles)


def clean(cell: str, page: str, titles: dict[str, str]) -> str:
    """The prose a reader reads as prose, with {term} roles kept for the caller."""
    text = FENCE.sub("\n", NEXT.sub("", cell))
    text = re.sub(r"\{(?:glue|glue:\w+|numref|eq|download)\}`[^`]*`", " ", text)
    text = re.sub(r"\{ref\}`([^`<]*?)\s*<[^`>]*>`",
                  lambda m: " " if names_a_page(m.group(1), titles.values()) else m.group(1), text)
    text = re.sub(r"\{ref\}`[^`]*`", " ", text)

    def link(display: str, target: str) -> str:
        shown = " " if names_a_page(display, [titles.get(resolve(page, target), "")]) else display
        return f"{shown} {MARK}{target}{MARK} "  # the target stays, marked, for the paragraph's links

    text = MD_LINK.sub(lambda m: link(m.group(1), m.group(2)), text)
    text = DOC_ROLE.sub(lambda m: link(m.group(1), m.group(2) or m.group(1)), text)
    text = re.sub(r"<https?://[^>]*>|https?://\S+", " ", text)
    return HTML_TAG.sub(" ", text)


def form_pattern(form: str) -> re.Pattern:
    words = [re.escape(w) for w in re.split(r"[\s-]+", form.strip()) if w]
    return re.compile(r"(?<![\w@./-])" + r"[\s-]+".join(words) + r"(?:s|es|d)?(?![\w@])", re.I)


def entry_patterns(entries: list[Entry], book: Book) -> dict[str, list[re.Pattern]]:
    """Every plain-text form of every entry (see the module's docstring)."""
    by_name = lookup(entries)
    forms = {e.name: {n.lower() for n in e.names + FORMS.get(e.name, []) if "@" not in n} for e in entries}
    for page in book.lessons:
        for _, cell in book.cells.get(page, []):
            for display, target in ROLE.findall(cell):
                entry = by_name.get(role_target(display, target))
                if entry is not None and "@" not in display:
                    forms[entry.name].add(" ".join(display.split()).lower())
    patterns = {name: [form_pattern(f) for f in sorted(fs, key=lambda f: (-len(f), f))] for name, fs in forms.items()}
    for name, metric in METRICS.items():
        if name in patterns:
            patterns[name].append(re.compile(r"(?<![\w@./-])(?:" + metric + r")(?![\w@])", re.I))
    return patterns


@dataclass(frozen=True)
class Use:
    page: str
    cell: int
    entry: str
    said: str  # the text that used it
    paragraph_links: frozenset  # the pages the paragraph links to


def uses(book: Book, entries: list[Entry]) -> list[Use]:
    """Every use of an entry in every lesson, once per entry and paragraph."""
    by_name = lookup(entries)
    patterns = entry_patterns(entries, book)
    found = []
    for page in book.lessons:
        for i, cell in book.cells.get(page, []):
            for paragraph in re.split(r"\n\s*\n", clean(cell, page, book.titles)):
                links = frozenset(resolve(page, t) for t in re.findall(f"{MARK}([^{MARK}]*){MARK}", paragraph))
                paragraph = re.sub(f"{MARK}[^{MARK}]*{MARK}", " ", paragraph)
                seen: set[str] = set()
                for role in ROLE.finditer(paragraph):
                    entry = by_name.get(role_target(*role.groups()))
                    if entry is not None and entry.name not in seen:
                        seen.add(entry.name)
                        found.append(Use(page, i, entry.name, role.group(0), links))
                plain = ROLE.sub(" ", paragraph)
                for entry in (e for e in entries if e.name not in seen):
                    everyday = EVERYDAY.get(entry.name)
                    text = re.sub(everyday, " ", plain, flags=re.I) if everyday else plain
                    match = next((m for p in patterns[entry.name] if (m := p.search(text))), None)
                    if match:
                        found.append(Use(page, i, entry.name, " ".join(match.group(0).split()), links))
    return found


# ---- the rules ------------------------------------------------------------------------------------

def pointer_problems(book: Book, entries: list[Entry], used: set[tuple[str, str]]) -> list[str]:
    """The glossary's rules of the module's docstring; `used`: the (page, entry) pairs of every use."""
    problems = []
    for entry in entries:
        if entry.taught_in is None:
            problems.append(f"{entry.name!r} does not say where it is taught "
                            "(end it with: Taught in {doc}`lesson N <../notebooks/NN_name>`.)")
        elif entry.taught_in not in book.order:
            problems.append(f"{entry.name!r} is taught in {entry.taught_in!r}, which is not in _toc.yml")
        elif entry.taught_in in book.lessons:
            number = book.lessons.index(entry.taught_in) + 1
            said = re.fullmatch(r"\s*lesson\s+(\d+)\s*", entry.link_text, re.I)
            if not said or int(said.group(1)) != number:
                problems.append(f"{entry.name!r} links to {entry.taught_in} as {entry.link_text!r}; "
                                f"the contents make it lesson {number}")
            if (entry.taught_in, entry.name) not in used:
                problems.append(f"{entry.name!r} is taught in lesson {number} ({entry.taught_in}), "
                                "whose prose never uses it")
    return problems


def check(book: Book) -> dict[str, list[str]]:
    """The rules of the module's docstring: "book/glossary" -> its pointers' problems, and each lesson ->
    its problems in cell order."""
    entries = parse_glossary(book.glossary)
    by_name, taught = lookup(entries), {e.name: e.taught_in for e in entries}
    position = {page: i for i, page in enumerate(book.order)}
    lessons = book.lessons
    found: dict[str, list[tuple[int, str]]] = {page: [] for page in lessons}

    def where(page: str) -> str:
        return f"lesson {lessons.index(page) + 1} ({page})" if page in lessons else page

    every_use = uses(book, entries)
    reported: set[tuple[str, int, str]] = set()  # one line per lesson, cell and entry
    for use in every_use:
        page = taught[use.entry]
        if page is None or (use.page, use.cell, use.entry) in reported:
            continue  # the glossary's problems say an entry names no page
        if page not in position:  # a lesson not written yet: nothing before it teaches the term
            why = f"taught in {page}, which the contents do not list yet"
        elif page in lessons and position[page] > position[use.page]:
            why = f"taught in {where(page)}"
        elif page not in lessons and page not in use.paragraph_links:
            why = f"taught on {page}, and the paragraph does not link there"
        else:
            continue
        reported.add((use.page, use.cell, use.entry))
        found[use.page].append((use.cell, f"cell {use.cell}: {use.said!r} ({use.entry}) is {why}"))
    for page in lessons:
        for i, cell in book.cells.get(page, []):
            for display, target in ROLE.findall(cell):
                if role_target(display, target) not in by_name:
                    found[page].append((i, f"cell {i}: {{term}}`{display}` names no entry of the glossary"))
            know_first = KNOW_FIRST.search(cell)
            text = know_first.group(1) if know_first else ""
            named = {resolve(page, t) for t in re.findall(r"\]\(([^)\s]+)", text)}
            named |= {resolve(page, t) for _, t in DOC_ROLE.findall(text) if t}
            for first, more in LESSON_NUMBER.findall(text):
                for n in [first, *re.findall(r"\d+", more)]:
                    if 1 <= int(n) <= len(lessons):
                        named.add(lessons[int(n) - 1])
                    else:
                        found[page].append((i, f"cell {i}: 'What to know first' names lesson {n}, "
                                               "which the contents do not have"))
            for target in sorted(named):
                if target in position and position[target] > position[page]:
                    found[page].append((i, f"cell {i}: 'What to know first' names {where(target)}, "
                                           "which comes after this lesson"))
    used = {(u.page, u.entry) for u in every_use}
    return {"book/glossary": pointer_problems(book, entries, used)} | {
        page: [text for _, text in sorted(items, key=lambda x: x[0])] for page, items in found.items()}


if __name__ == "__main__":
    for page, problems in check(read_book()).items():
        print(f"## {page}\n\n" + "\n".join(f"- {p}" for p in problems or ["none"]) + "\n")
