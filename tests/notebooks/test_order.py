"""Nothing is used before it is taught: the rules of tests/notebooks/order.py on the book as it is,
and on a constructed bad book, to show that each rule can fail."""

from __future__ import annotations

import pytest

from tests.notebooks.order import (Book, parse_glossary, pointer_problems, read_book, report, role_target,
                                   lookup, violations, ROLE)

BOOK = read_book()
LESSONS = BOOK.lessons


def test_every_glossary_entry_names_the_page_that_teaches_it():
    problems = pointer_problems(BOOK, parse_glossary(BOOK.glossary))
    assert not problems, "\n".join(problems)


def test_every_term_role_in_a_lesson_names_a_glossary_entry():
    names = lookup(parse_glossary(BOOK.glossary))
    missing = [f"{page}: {{term}}`{display}{' <' + target + '>' if target else ''}`"
               for page in LESSONS for _, cell in BOOK.cells.get(page, [])
               for display, target in ROLE.findall(cell) if role_target(display, target) not in names]
    assert not missing, "no glossary entry for:\n" + "\n".join(missing)


@pytest.mark.parametrize("page", LESSONS, ids=[p.split("/")[-1] for p in LESSONS])
def test_a_lesson_uses_only_what_it_or_an_earlier_lesson_teaches(page):
    found = violations(BOOK)[page]
    assert not found, f"{page} (python -m tests.notebooks.order lists them all):\n" + "\n".join(found)


# ---- a constructed book, to show that each rule fails --------------------------------------------

GLOSSARY = """# Glossary

```{glossary}
Softmax
  Scores into shares. Taught in {doc}`lesson 1 <../notebooks/01_one>`.

Bootstrap interval
  A range from resamples. Taught in {doc}`lesson 2 <../notebooks/02_two>`.

MRR@k
  One over the rank. Taught in {doc}`lesson 2 <../notebooks/02_two>`.

Negative
  A text pushed away. Taught in {doc}`lesson 2 <../notebooks/02_two>`.

GradCache
  A cached loss. Taught in {doc}`Scaling out <scaling>`.
```
"""

ORDER = ["book/index", "notebooks/01_one", "notebooks/02_two", "book/scaling"]
TITLES = {"book/index": "Home", "notebooks/01_one": "One: the softmax", "notebooks/02_two": "Two: intervals",
          "book/scaling": "Scaling out"}


def constructed(one: list[str], two: list[str] | None = None, glossary: str = GLOSSARY) -> Book:
    two = two if two is not None else ["# Two: intervals\n\nA {term}`bootstrap interval`, the MRR@10 and "
                                       "a negative text, pushed away."]
    return Book(ORDER, {"notebooks/01_one": list(enumerate(one)), "notebooks/02_two": list(enumerate(two))},
                TITLES, glossary)


GOOD = ["# One: the softmax\n\n**What to know first:** nothing.\n\nThe {term}`softmax` turns scores "
        "into shares; a negative slope means the loss falls.",
        "## Next\n\nBootstrap intervals and MRR@10: [Two: intervals](02_two.ipynb)."]


def test_a_good_constructed_book_passes():
    book = constructed(GOOD)
    assert violations(book) == {"notebooks/01_one": [], "notebooks/02_two": []}
    assert pointer_problems(book, parse_glossary(book.glossary)) == []


@pytest.mark.parametrize("bad, said", [
    ("We add {term}`bootstrap intervals <Bootstrap interval>`.", "Bootstrap interval"),  # a role
    ("We report 95% bootstrap intervals.", "Bootstrap interval"),  # a plain form, plural
    ("Scores on MRR@10 rise.", "MRR@k"),  # a metric of the family
    ("Its mean reciprocal rank rises.", "MRR@k"),
    ("Each negative is pushed away.", "Negative"),  # the entry, not an everyday sense
    ("A cached loss (GradCache) saves memory.", "GradCache"),  # a reference term, unlinked
])
def test_a_term_used_before_its_lesson_fails(bad, said):
    book = constructed([GOOD[0] + "\n\n" + bad, GOOD[1]])
    found = violations(book)["notebooks/01_one"]
    assert len(found) == 1 and f"({said})" in found[0], found


def test_a_reference_term_beside_a_link_to_its_page_passes():
    book = constructed([GOOD[0] + "\n\nA cached loss (GradCache, in [Scaling out](../book/scaling.md)) does.", GOOD[1]])
    assert violations(book)["notebooks/01_one"] == []


@pytest.mark.parametrize("first", [
    "**What to know first:** the intervals of [Two: intervals](02_two.ipynb).",
    "**What to know first:** the intervals of lesson 2.",
    "**What to know first:** {doc}`the intervals <02_two>`.",
    "**What to know first:** lessons 1 and 2.",
])
def test_what_to_know_first_naming_a_later_lesson_fails(first):
    book = constructed(["# One: the softmax\n\n" + first + "\n\nThe {term}`softmax`."])
    found = violations(book)["notebooks/01_one"]
    assert len(found) == 1 and "What to know first" in found[0] and "02_two" in found[0], found


@pytest.mark.parametrize("old, new, said", [
    ("Taught in {doc}`lesson 1 <../notebooks/01_one>`.", "", "does not say where"),
    ("lesson 1 <../notebooks/01_one>", "lesson 2 <../notebooks/01_one>", "the contents make it lesson 1"),
    ("lesson 1 <../notebooks/01_one>", "lesson 3 <../notebooks/03_gone>", "not in _toc.yml"),
    ("Softmax\n", "Sigmoid\n", "never uses it"),
])
def test_a_wrong_glossary_pointer_fails(old, new, said):
    book = constructed(GOOD, glossary=GLOSSARY.replace(old, new, 1))
    problems = pointer_problems(book, parse_glossary(book.glossary))
    assert len(problems) == 1 and said in problems[0], problems


def test_the_report_lists_every_lesson():
    text = report(BOOK)
    assert all(page in text for page in LESSONS)
