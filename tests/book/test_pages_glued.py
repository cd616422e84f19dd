"""One truth: the pages a reader trusts most quote the lessons' numbers, glued, never typed.

On the guide, the landing page, the course map, the self-test and the credits (``SUMMARY_PAGES``),
every decimal number, every percentage, and every count that reads as a result ("12 of 100", a
number with a thousands separator such as 1,904) is pasted from a notebook's stored output with
myst-nb's cross-document glue, ``{glue:text}`../notebooks/NN_name.ipynb::key:fmt```, or sits in a
sentence that cites a paper (links to the papers page). Not counted: code (inline or in a block),
link targets, directive options, versions and names with digits in them (``Qwen3-Embedding-0.6B``,
``2.13.0``, ``Apache-2.0``, "License 2.0"), and the level of an interval ("a 95% interval", a
setting, not a result).

On every page of book/, each glue reference names a notebook of the contents and a key that
notebook's stored outputs glue, in a format the value takes: the check a book build makes, without
building (a lesson that renames a key breaks a page here first).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from myst_nb.core.variables import format_plain_text

from tests.notebooks.order import resolve, toc_order

ROOT = Path(__file__).resolve().parents[2]
SUMMARY_PAGES = ["book/index", "book/course-map", "book/practitioners-guide", "book/self-test", "book/credits"]
PAGES = sorted(p.relative_to(ROOT).with_suffix("").as_posix() for p in (ROOT / "book").glob("*.md"))

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


def page_text(page: str) -> str:
    return (ROOT / f"{page}.md").read_text()


def readable(text: str) -> str:
    """The page as a reader reads its prose: no code, no glue, no link targets, no directive options."""
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = FENCE.sub("\n", text)
    text = re.sub(r"^\s*%.*$", "", text, flags=re.M)  # MyST comments
    text = re.sub(r"^\s*:[\w-]+:.*$", "", text, flags=re.M)  # directive options (:width: 100%)
    text = GLUE.sub(" ", text)
    text = re.sub(r"``.+?``|`[^`\n]*`(?<!\}`)", lambda m: " " if not m.group(0).startswith("{") else m.group(0),
                  text)
    text = re.sub(r"\{(?:doc|ref|numref|term|download)\}`([^`<]*?)\s*<[^`>]*>`", r"\1", text)
    text = re.sub(r"\{(?:doc|ref|numref|term|download)\}`[^`]*`", " ", text)
    text = re.sub(r"</?[A-Za-z][^>]*>", " ", text)
    return text


def sentences(paragraph: str) -> list[str]:
    return re.split(r"(?<=[.!?:;])\s+(?=[A-Z*(\[{$])", paragraph)


def unglued_numbers(text: str) -> list[str]:
    """Each number of the page that is neither glued nor cited, with its context."""
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    found = []
    for paragraph in re.split(r"\n\s*\n", FENCE.sub("\n", text)):
        for sentence in sentences(paragraph):
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
    found = unglued_numbers(page_text(page))
    assert not found, (f"{page}.md types numbers that a lesson should glue (or cite a paper in the sentence):\n"
                       + "\n".join(found))


@pytest.mark.parametrize("bad", [
    "The fine-tuned model scores 0.604 on test.",
    "The answer card takes 91% of the softmax.",
    "The answer card takes 91 % of the softmax.",
    "For 450 of 1904 pairs nothing passed the filter.",
    "It outscored the answer for 1,904 pairs.",
    "The loss falls to $0.03$ by step 90.",
    "A negative gap of -0.012, with {glue:text}`../notebooks/08_real_data.ipynb::x:.3f` beside it.",
    "Seventy per cent of them, 70 percent.",
    "It is right 95% of the time, inside the interval.",
])
def test_the_one_truth_rule_fails_on_a_typed_number(bad):
    assert unglued_numbers(f"# A page\n\n{bad}\n"), bad


@pytest.mark.parametrize("good", [
    "The fine-tuned model scores {glue:text}`../notebooks/07_finetuning.ipynb::ft_test_r1_tuned:.3f` on test.",
    "Lesson 7 runs Qwen3-Embedding-0.6B with torch 2.13.0 under Apache-2.0 (Apache License 2.0).",
    "DPR beat BM25 by 9 to 19 points, and CLIP capped the scale at 100 "
    "([Papers](papers.md#dpr)). Models train at 0.05 ({doc}`papers`).",
    "Run `python -m labs train --max-steps 2 --lr 0.5` first.",
    "```{figure} images/x.svg\n:width: 100%\n\nA caption.\n```",
    "```text\nloss 0.418\n```",
    "Ten lessons in 4 parts; 16 seeds.",
    "A paired 95% interval, two 95% bootstrap intervals and a 90 % confidence interval.",
])
def test_the_one_truth_rule_passes_glue_citations_and_code(good):
    assert unglued_numbers(f"# A page\n\n{good}\n") == [], good


# ---- every glue reference on the pages resolves ----------------------------------------------------

def glued_values(notebook: Path) -> dict[str, str]:
    """Each key the notebook's stored outputs glue, with its text/plain value."""
    values = {}
    for cell in json.loads(notebook.read_text())["cells"]:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                prefix = out["metadata"]["scrapbook"].get("mime_prefix", "")
                values[name] = "".join(out.get("data", {}).get(prefix + "text/plain", ""))
    return values


def glue_problems(page: str, text: str, order: list[str]) -> list[str]:
    problems, cache = [], {}
    for ref in GLUE.findall(text):
        if "::" not in ref:
            problems.append(f"{page}.md: glue {ref!r} names no notebook (a page glues as path::key)")
            continue
        path, rest = ref.split("::", 1)
        key, _, fmt = rest.partition(":")
        target = resolve(page, path)
        if target not in order or not (ROOT / f"{target}.ipynb").exists():
            problems.append(f"{page}.md: glue {ref!r}: {target} is not a notebook of the contents")
            continue
        values = cache.setdefault(target, glued_values(ROOT / f"{target}.ipynb"))
        if key not in values:
            problems.append(f"{page}.md: glue {ref!r}: {target} glues no key {key!r}")
            continue
        try:
            format_plain_text(values[key], fmt or "s")
        except (TypeError, ValueError) as exc:
            problems.append(f"{page}.md: glue {ref!r}: the value {values[key]!r} does not take {fmt!r} ({exc})")
    return problems


ORDER = toc_order((ROOT / "_toc.yml").read_text())


@pytest.mark.parametrize("page", PAGES, ids=[p.split("/")[-1] for p in PAGES])
def test_every_glue_reference_on_a_page_resolves(page):
    problems = glue_problems(page, page_text(page), ORDER)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("ref, said", [
    ("../notebooks/07_finetuning.ipynb::no_such_key:.3f", "glues no key"),
    ("../notebooks/99_gone.ipynb::ft_test_r1_tuned:.3f", "not a notebook of the contents"),
    ("ft_test_r1_tuned:.3f", "names no notebook"),
    ("../notebooks/07_finetuning.ipynb::ft_test_r1_tuned:.3q", "does not take"),
])
def test_a_broken_glue_reference_fails(ref, said):
    problems = glue_problems("book/practitioners-guide", f"It scores {{glue:text}}`{ref}`.", ORDER)
    assert len(problems) == 1 and said in problems[0], problems
