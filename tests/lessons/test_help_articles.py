"""The lessons' 80-article search set."""

from __future__ import annotations

import pytest

from labs.lessons import help_articles as ha


def test_help_articles_are_distinct_and_named():
    docs, ids = ha.help_articles()
    assert len(docs) == len(ids) == len(ha.PRODUCTS) * len(ha.ARTICLE_KINDS) == 80
    assert len(set(docs)) == len(docs) and len(set(ids)) == len(ids)
    assert ids[0] == "router/reset" and "router" in docs[0]


def test_help_questions_point_at_existing_articles():
    _, ids = ha.help_articles()
    products = list(ha.PRODUCTS)
    for variants in [(0,), (1, 2), (3,), (0, 1, 2, 3)]:
        qs = ha.help_questions(products, variants)
        assert len(qs) == 80 * len(variants)
        assert {doc for _, doc in qs} <= set(ids)
    easy = ha.help_questions(["camera"], (0,))
    assert all("camera" in q for q, _ in easy)  # the easy wording names the product
    hard = ha.help_questions(["camera"], (1, 2, 3))
    assert not any("camera" in q for q, _ in hard)  # the others use its other name


def test_help_question_wordings_differ():
    for _, wordings in ha.ARTICLE_KINDS.values():
        assert len(wordings) == 4 and len(set(wordings)) == 4


@pytest.mark.parametrize("products, variants, match", [
    (["toaster"], (1,), "products"),
    (["camera"], (4,), "variants"),
    (["camera"], (), "variants"),
])
def test_help_questions_bad_input(products, variants, match):
    with pytest.raises(ValueError, match=match):
        ha.help_questions(products, variants)




@pytest.mark.parametrize("products, variants, match", [
    ("router", (1,), "products must be a list of strings, not one string"),
    (None, (1,), "products must be a list of strings"),
    ([["router"]], (1,), r"products\[0\] must be a string"),
    ([], (1,), "products must name at least one product"),
    (["router"], 1, "variants must be a non-empty tuple"),
    (["router"], (True,), "variants must be a non-empty tuple"),
    (["router"], (1.0,), "variants must be a non-empty tuple"),
    (["router"], "12", "variants must be a non-empty tuple"),
    (["router"], None, "variants must be a non-empty tuple"),
], ids=["one-string", "none", "nested", "empty", "variants-int", "variants-bool", "variants-float",
        "variants-string", "variants-none"])
def test_help_questions_arguments_read_wrongly_are_refused(products, variants, match):
    with pytest.raises(ValueError, match=match):
        ha.help_questions(products, variants)


def test_help_questions_take_numpy_integers_and_any_sequence():
    import numpy as np

    want = ha.help_questions(["router"], (1, 2))
    assert ha.help_questions(("router",), [np.int64(1), np.int32(2)]) == want


def test_search_articles_extend_the_help_articles():
    docs, ids = ha.search_articles()
    base_docs, base_ids = ha.help_articles()
    assert docs[:80] == base_docs and ids[:80] == base_ids
    assert len(docs) == len(ids) == 80 + len(ha.EXTRA_ARTICLES) and len(set(ids)) == len(ids)
    assert {answer for _, answer in ha.SEARCH_EXAMPLES} <= set(ids)
