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
LATER = "'What to know first' names lesson 2 (notebooks/02_two), which comes after this lesson"
TWO = ["# Two: intervals\n\nA {term}`bootstrap interval`, the MRR@10 and a negative text, pushed away."]


@pytest.mark.parametrize("old, new, said", [
    ("", "", None),
    # a term in lesson 1 that lesson 2 or a reference page teaches
    ("falls.", "falls. A cached loss (GradCache, in [Scaling out](../book/scaling.md)) does.", None),  # linked
    ("falls.", "falls. We add {term}`bootstrap intervals <Bootstrap interval>`.", "(Bootstrap interval)"),  # a role
    ("falls.", "falls. We report 95% bootstrap intervals.", "(Bootstrap interval)"),  # a plain form, plural
    ("falls.", "falls. Scores on MRR@10 rise.", "(MRR@k)"),  # a metric of the family
    ("falls.", "falls. Its mean reciprocal rank rises.", "(MRR@k)"),
    ("falls.", "falls. Each negative is pushed away.", "(Negative)"),  # the entry, not an everyday sense
    ("falls.", "falls. A cached loss (GradCache) saves memory.", "(GradCache)"),  # a reference term, unlinked
    ("falls.", "falls. A {term}`sigmoid` squashes.", "{term}`sigmoid` names no entry of the glossary"),
    # lesson 1's "What to know first" names lesson 2
    ("nothing.", "the intervals of [Two: intervals](02_two.ipynb).", LATER),
    ("nothing.", "the intervals of lesson 2.", LATER),
    ("nothing.", "{doc}`the intervals <02_two>`.", LATER),
    ("nothing.", "lessons 1 and 2.", LATER),
    # the glossary's pointers
    ("Taught in {doc}`lesson 1 <../notebooks/01_one>`.", "", "does not say where"),
    ("lesson 1 <../notebooks/01_one>", "lesson 2 <../notebooks/01_one>", "the contents make it lesson 1"),
    ("lesson 1 <../notebooks/01_one>", "lesson 3 <../notebooks/03_gone>", ("not in _toc.yml", "do not list yet")),
    ("Softmax\n", "Sigmoid\n", ("never uses it", "{term}`softmax` names no entry")),
])
def test_each_rule_fails_on_its_fault_in_a_constructed_book(old, new, said):
    """`old` becomes `new` in lesson 1's first cell and in the glossary: the problems `said`, glossary's first."""
    cells = {"notebooks/01_one": list(enumerate([GOOD[0].replace(old, new, 1), GOOD[1]])),
             "notebooks/02_two": list(enumerate(TWO))}
    book = Book(ORDER, cells, TITLES, GLOSSARY.replace(old, new, 1))
    found = [problem for problems in check(book).values() for problem in problems]
    said = () if said is None else (said,) if isinstance(said, str) else said
    assert len(found) == len(said) and all(s in problem for s, problem in zip(said, found)), found
