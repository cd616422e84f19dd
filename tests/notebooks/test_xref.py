"""Cross-references held like numbers: the rule of tests/notebooks/xref.py on the book as it is, and on
constructed texts, to show that it can fail (erratum 1's sentence among them)."""

from __future__ import annotations

from tests.notebooks.order import read_book
from tests.notebooks.xref import Text, claims, problems, read_texts, sentences


def test_every_claim_about_a_lesson_points_at_its_label():
    found = problems(read_texts(read_book()))
    assert not found, "\n".join(found)


# ---- constructed texts: the rule fails ---------------------------------------------------------------

LESSON_7 = Text("notebooks/07_x.ipynb cell 1", 7, "(sec-accumulation)=\n**Practice 3.** A colleague accumulates.")


def test_erratum_1_s_original_sentence_fails():
    """The sentence that said lesson 7 imitates a big batch by adding gradients, with no label to hold it."""
    old = Text("notebooks/02_x.ipynb cell 13", 2,
               "$-8$, not $-4$: `.backward()` *adds* to `.grad`. That is on purpose (lesson 7 adds up the\n"
               "gradients of several small batches to imitate one big batch), but it means every training loop\n"
               "clears the gradients before each step.")
    found = problems([LESSON_7, old])
    assert len(found) == 1 and "'lesson 7 adds' claims something of lesson 7" in found[0]
    held = Text(old.where, 2, old.text.replace("(lesson 7 adds up", "({ref}`lesson 7 adds <sec-accumulation>` up"))
    assert problems([LESSON_7, held]) == []


def test_a_reference_to_another_lesson_s_label_does_not_hold_the_claim():
    other = Text("notebooks/09_x.ipynb cell 2", 9, "(sec-clip-loss)=\n## The formula")
    wrong = Text("book/page.md", None, "As {ref}`lesson 7 shows <sec-clip-loss>`, accumulation is not a big batch.")
    found = problems([LESSON_7, other, wrong])
    assert len(found) == 1 and "lesson 7" in found[0]


def test_links_docs_and_plain_refs_are_mentions():
    defined = {"sec-accumulation": 7}
    assert claims("[Fine-tuning](07_finetuning.ipynb) shows it.", defined) == [
        (7, "[Fine-tuning](07_finetuning.ipynb) shows")]
    assert claims("{doc}`lesson 7 <../notebooks/07_finetuning>` then trains it.", defined)[0][0] == 7
    assert claims("{ref}`sec-accumulation` shows it.", defined) == [(7, "{ref}`sec-accumulation` shows")]
    assert claims("In lesson 7, accumulation.", defined) == []        # no verb: not a claim
    assert [" ".join(s.split()) for s in sentences("A `lesson 7 shows` in code. B.\n\nC")] == [
        "A in code.", "B.", "C"]
