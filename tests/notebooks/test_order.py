"""Nothing is used before it is taught: the rules of tests/notebooks/order.py on the book as it is,
and on a constructed bad book, to show that each rule can fail."""

from __future__ import annotations

import pytest

from tests.notebooks.order import Book, check, read_book

BOOK = read_book()


@pytest.fixture(scope="module")
def found() -> dict[str, list[str]]:
    return check(BOOK)


def test_every_glossary_entry_names_the_page_that_teaches_it(found):
    assert not found["book/glossary"], "\n".join(found["book/glossary"])


@pytest.mark.parametrize("page", BOOK.lessons, ids=[p.split("/")[-1] for p in BOOK.lessons])
def test_a_lesson_uses_only_what_it_or_an_earlier_lesson_teaches(found, page):
    assert not found[page], f"{page} (python -m tests.notebooks.order lists them all):\n" + "\n".join(found[page])


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


GOOD = ["# One: the softmax\n\n**What to know first:** nothing.\n\nThe {term}`softmax` turns scores "
        "into shares; a negative slope means the loss falls.",
        "## Next\n\nBootstrap intervals and MRR@10: [Two: intervals](02_two.ipynb)."]
TWO = ["# Two: intervals\n\nA {term}`bootstrap interval`, the MRR@10 and a negative text, pushed away."]


def constructed(one: list[str], glossary: str = GLOSSARY) -> Book:
    return Book(ORDER, {"notebooks/01_one": list(enumerate(one)), "notebooks/02_two": list(enumerate(TWO))},
                TITLES, glossary)


@pytest.mark.parametrize("added, said", [
    ("", None),
    ("A cached loss (GradCache, in [Scaling out](../book/scaling.md)) does.", None),  # beside a link to its page
    ("We add {term}`bootstrap intervals <Bootstrap interval>`.", "(Bootstrap interval)"),  # a role
    ("We report 95% bootstrap intervals.", "(Bootstrap interval)"),  # a plain form, plural
    ("Scores on MRR@10 rise.", "(MRR@k)"),  # a metric of the family
    ("Its mean reciprocal rank rises.", "(MRR@k)"),
    ("Each negative is pushed away.", "(Negative)"),  # the entry, not an everyday sense
    ("A cached loss (GradCache) saves memory.", "(GradCache)"),  # a reference term, unlinked
    ("A {term}`sigmoid` squashes.", "{term}`sigmoid` names no entry of the glossary"),
])
def test_a_term_used_before_its_lesson_fails(added, said):
    found = check(constructed([GOOD[0] + "\n\n" + added, GOOD[1]]))
    assert found["book/glossary"] == found["notebooks/02_two"] == []
    assert found["notebooks/01_one"] == [] if said is None else len(found["notebooks/01_one"]) == 1
    assert said is None or said in found["notebooks/01_one"][0], found


@pytest.mark.parametrize("first", [
    "**What to know first:** the intervals of [Two: intervals](02_two.ipynb).",
    "**What to know first:** the intervals of lesson 2.",
    "**What to know first:** {doc}`the intervals <02_two>`.",
    "**What to know first:** lessons 1 and 2.",
])
def test_what_to_know_first_naming_a_later_lesson_fails(first):
    found = check(constructed(["# One: the softmax\n\n" + first + "\n\nThe {term}`softmax`."]))["notebooks/01_one"]
    assert len(found) == 1 and "What to know first" in found[0] and "02_two" in found[0], found


@pytest.mark.parametrize("old, new, said", [
    ("Taught in {doc}`lesson 1 <../notebooks/01_one>`.", "", "does not say where"),
    ("lesson 1 <../notebooks/01_one>", "lesson 2 <../notebooks/01_one>", "the contents make it lesson 1"),
    ("lesson 1 <../notebooks/01_one>", "lesson 3 <../notebooks/03_gone>", "not in _toc.yml"),
    ("Softmax\n", "Sigmoid\n", "never uses it"),
])
def test_a_wrong_glossary_pointer_fails(old, new, said):
    problems = check(constructed(GOOD, glossary=GLOSSARY.replace(old, new, 1)))["book/glossary"]
    assert len(problems) == 1 and said in problems[0], problems
