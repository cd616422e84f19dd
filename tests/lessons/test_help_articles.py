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


