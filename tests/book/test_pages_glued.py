"""One truth: the pages a reader trusts most quote the lessons' numbers, glued, never typed.

On the guide, the landing page, the course map, the self-test and the credits (``SUMMARY_PAGES``),
every decimal number, every percentage, and every count that reads as a result ("12 of 100", a
number with a thousands separator such as 1,904) is pasted from a notebook's stored output with
myst-nb's cross-document glue, ``{glue:text}`../notebooks/NN_name.ipynb::key:fmt```, or sits in a
sentence that cites a paper (links to the papers page). Code, link targets, directive options,
versions, names with digits and an interval's level are not results (the table below shows each).
That each glue reference resolves is the book build's: Sphinx -W -n, and myst-nb warns on each.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUMMARY_PAGES = ["book/index", "book/course-map", "book/practitioners-guide", "book/self-test", "book/credits"]

GLUE = re.compile(r"\{glue(?::\w+)?\}`([^`]*)`")
FENCE = re.compile(r"^(`{3,}|~{3,})(?!\{(?:figure|admonition|note|warning|tip|important|caution|seealso|hint|"
                   r"margin|dropdown|attention|mermaid|glossary|list-table|table)\})[^\n]*\n.*?^\1[ \t]*$",
                   re.S | re.M)
PAPERS_LINK = re.compile(r"\]\((?:\./)?papers(?:\.md)?(?:#[^)]*)?\)|\{doc\}`(?:[^`<]*<)?(?:\./)?papers>?`")
NUMBER = re.compile(
    r"(?<![\w.])(?<!\w-)[-+−]?\d+\.\d+(?![\w.])"  # a decimal, not a version or a name's part
    r"|(?<![\w.])(?<!\w-)\d+(?:\.\d+)?\s?%"  # a percentage
    r"|(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\w,])"  # a count with a thousands separator
    r"|(?<![\w.])\d+\s+(?:out\s+)?of\s+(?:the\s+)?\d[\d,]*(?![\w.])"  # "12 of 100"
    r"|\d+(?:\.\d+)?\s+per\s?cent\b",
    re.I)
INTERVAL_LEVEL = re.compile(r"\d+\s?%(?:\s+(?:paired|bootstrap|confidence))*\s+intervals?\b", re.I)
VERSION_BEFORE = re.compile(r"(?:licen[cs]e|version|python|v)\s*$", re.I)


def readable(text: str) -> str:
    """A sentence (comments and code blocks already gone) as a reader reads it: no inline code, no glue,
    no link targets, no directive options."""
    text = re.sub(r"^\s*%.*$", "", text, flags=re.M)  # MyST comments
    text = re.sub(r"^\s*:[\w-]+:.*$", "", text, flags=re.M)  # directive options (:width: 100%)
    text = GLUE.sub(" ", text)
    text = re.sub(r"``.+?``|`[^`\n]*`(?<!\}`)", lambda m: " " if not m.group(0).startswith("{") else m.group(0),
                  text)
    text = re.sub(r"\{(?:doc|ref|numref|term|download)\}`([^`<]*?)\s*<[^`>]*>`", r"\1", text)
    text = re.sub(r"\{(?:doc|ref|numref|term|download)\}`[^`]*`", " ", text)
    text = re.sub(r"</?[A-Za-z][^>]*>", " ", text)
    return text


def unglued_numbers(text: str) -> list[str]:
    """Each number of the page that is neither glued nor cited, with its context."""
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    found = []
    for paragraph in re.split(r"\n\s*\n", FENCE.sub("\n", text)):
        for sentence in re.split(r"(?<=[.!?:;])\s+(?=[A-Z*(\[{$])", paragraph):
            if PAPERS_LINK.search(sentence):
                continue  # a paper's number, with its reference
            plain = re.sub(r"\]\([^)]*\)", "]", readable(sentence))
            plain = INTERVAL_LEVEL.sub(lambda m: "interval", plain)
            for match in NUMBER.finditer(plain):
                if VERSION_BEFORE.search(plain[:match.start()]):
                    continue
                context = " ".join(plain[max(0, match.start() - 50):match.end() + 30].split())
                found.append(f"{match.group(0)!r} in: ...{context}...")
    return found


@pytest.mark.parametrize("page", SUMMARY_PAGES, ids=[p.split("/")[-1] for p in SUMMARY_PAGES])
def test_every_number_on_a_summary_page_is_glued_or_cited(page):
    found = unglued_numbers((ROOT / f"{page}.md").read_text())
    assert not found, (f"{page}.md types numbers that a lesson should glue (or cite a paper in the sentence):\n"
                       + "\n".join(found))


TYPED = [
    "The fine-tuned model scores 0.604 on test.",
    "The answer card takes 91% of the softmax.",
    "The answer card takes 91 % of the softmax.",
    "For 450 of 1904 pairs nothing passed the filter.",
    "It outscored the answer for 1,904 pairs.",
    "The loss falls to $0.03$ by step 90.",
    "A negative gap of -0.012, with {glue:text}`../notebooks/08_real_data.ipynb::x:.3f` beside it.",
    "Seventy per cent of them, 70 percent.",
    "It is right 95% of the time, inside the interval.",
]
NOT_RESULTS = [
    "The fine-tuned model scores {glue:text}`../notebooks/07_finetuning.ipynb::ft_test_r1_tuned:.3f` on test.",
    "Lesson 7 runs Qwen3-Embedding-0.6B with torch 2.13.0 under Apache-2.0 (Apache License 2.0).",
    "DPR beat BM25 by 9 to 19 points, and CLIP capped the scale at 100 "
    "([Papers](papers.md#dpr)). Models train at 0.05 ({doc}`papers`).",
    "Run `python -m labs train --max-steps 2 --lr 0.5` first.",
    "```{figure} images/x.svg\n:width: 100%\n\nA caption.\n```",
    "```text\nloss 0.418\n```",
    "Ten lessons in 4 parts; 16 seeds.",
    "A paired 95% interval, two 95% bootstrap intervals and a 90 % confidence interval.",
]


@pytest.mark.parametrize("text, typed", [(t, True) for t in TYPED] + [(t, False) for t in NOT_RESULTS])
def test_the_one_truth_rule_on_made_up_prose(text, typed):
    assert bool(unglued_numbers(f"# A page\n\n{text}\n")) == typed, text

