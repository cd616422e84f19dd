"""Tests for labs.lessons.lookalikes: the splits are whole topics, lesson 1's pair is held out word for word,
every look-alike shares its question's words, and the retrieval files load."""

from __future__ import annotations

import re

import pytest

from labs.lessons import lookalikes as la
from labs.lessons.help_articles import EXTRA_ARTICLES, SEARCH_EXAMPLES


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9-]+", text.lower()))


def test_splits_are_whole_topics_and_cover_the_set():
    assert len(la.TOPICS) >= 30 and len(la.HELD_OUT) >= 12
    assert set(la.TRAIN) | set(la.VALIDATION) | set(la.HELD_OUT) == set(la.TOPICS)
    assert not (set(la.TRAIN) & set(la.HELD_OUT) or set(la.TRAIN) & set(la.VALIDATION)
                or set(la.VALIDATION) & set(la.HELD_OUT))
    held_objects = {la.topic(k).obj for k in la.HELD_OUT}
    assert not held_objects & {la.topic(k).obj for k in la.TRAIN + la.VALIDATION}
    train_texts = {x for row in la.triples(la.TRAIN) for x in row[:3]}
    assert not train_texts & {x for row in la.triples(la.HELD_OUT) for x in row[:3]}
    assert {la.topic(k).kind for k in la.HELD_OUT} == set(la.KINDS) == {la.topic(k).kind for k in la.TRAIN}


def test_lesson_one_pair_is_held_out_word_for_word():
    assert la.PASSWORD in la.HELD_OUT and la.split_of(la.PASSWORD) == "test"
    assert la.questions(la.PASSWORD)[0] == la.PASSWORD_QUESTION == SEARCH_EXAMPLES[1][0]
    assert la.steps(la.PASSWORD) == EXTRA_ARTICLES["account/reset-steps"]
    assert la.look_alike(la.PASSWORD) == EXTRA_ARTICLES["account/password-policy"]


def test_every_look_alike_shares_more_of_its_question_than_the_steps_do():
    for question, steps, look_alike, key in la.triples(list(la.TOPICS)):
        q = _words(question) - {"how", "do", "i", "can", "to", "want", "me", "help", "steps"}
        assert len(q & _words(look_alike)) > len(q & _words(steps)), (key, question)
        assert la.topic(key).obj.lower() in steps.lower() or key == la.PASSWORD


def test_triples_order_and_pool():
    rows = la.triples(["email", "card"])
    assert len(rows) == 2 * len(la.QUESTION_TEMPLATES) and rows[5][3] == "card" and rows[0][0] == "how do I change my email address?"
    docs, ids = la.exam_pool(["email", "card"])
    assert ids == ["email/steps", "card/steps", "email/look-alike", "card/look-alike"]
    assert docs == [la.steps("email"), la.steps("card"), la.look_alike("email"), la.look_alike("card")]
    assert len(set(la.exam_pool(list(la.TOPICS))[0])) == 2 * len(la.TOPICS)      # no text twice


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="key must be one of"):
        la.topic("nope")
    with pytest.raises(ValueError, match=r"keys: unknown topics \['nope'\]"):
        la.triples(["nope"])
    with pytest.raises(ValueError, match="keys must name at least one topic"):
        la.exam_pool([])


def test_retrieval_rows_load_as_a_data_set(tmp_path):
    from labs.retrieval.data import RetrievalData, load_dataset, write_dataset

    rows = la.retrieval_rows()
    write_dataset(RetrievalData(rows["corpus"], rows["queries"], rows["train_pairs"]), tmp_path / "set")
    data = load_dataset(tmp_path / "set")
    assert len(data.train_pairs) == len(la.TRAIN) * len(la.QUESTION_TEMPLATES)
    assert len(data.split_queries("test")) == len(la.HELD_OUT) * len(la.QUESTION_TEMPLATES)
    assert {q["query_id"].split("/")[0] for q in data.split_queries("val")} == set(la.VALIDATION)
