"""Cross-references held like numbers: the rule of tests/notebooks/xref.py on the book as it is, and on
constructed texts, to show that it can fail (erratum 1's sentence among them)."""

from __future__ import annotations

import pytest

from tests.notebooks.order import read_book
from tests.notebooks.xref import Text, claims, problems, read_texts, sentences


def test_every_claim_about_a_lesson_points_at_its_label():
    found = problems(read_texts(read_book()))
    assert not found, "\n".join(found)


# ---- constructed texts: the rule fails ---------------------------------------------------------------

LESSON_7 = Text("notebooks/07_x.ipynb cell 1", 7, "(sec-accumulation)=\n**Practice 3.** A colleague accumulates.")
LESSON_9 = Text("notebooks/09_x.ipynb cell 2", 9, "(sec-clip-loss)=\n## The formula")
ERRATUM_1 = ("$-8$, not $-4$: `.backward()` *adds* to `.grad`. That is on purpose (lesson 7 adds up the\n"
             "gradients of several small batches to imitate one big batch), but it means every training loop\n"
             "clears the gradients before each step.")


@pytest.mark.parametrize("text, said", [
    (Text("notebooks/02_x.ipynb cell 13", 2, ERRATUM_1), "'lesson 7 adds' claims something of lesson 7"),
    (Text("notebooks/02_x.ipynb cell 13", 2,
          ERRATUM_1.replace("(lesson 7 adds up", "({ref}`lesson 7 adds <sec-accumulation>` up")), None),
    # a reference to another lesson's label does not hold the claim
    (Text("book/page.md", None, "As {ref}`lesson 7 shows <sec-clip-loss>`, accumulation is not a big batch."),
     "lesson 7"),
], ids=["erratum-1", "erratum-1-held", "another-lesson-s-label"])
def test_a_claim_holds_only_with_a_ref_to_a_label_of_its_lesson(text, said):
    found = problems([LESSON_7, LESSON_9, text])
    assert found == [] if said is None else len(found) == 1 and said in found[0], found


def test_links_docs_and_plain_refs_are_mentions():
    defined = {"sec-accumulation": 7}
    assert claims("[Fine-tuning](07_finetuning.ipynb) shows it.", defined) == [
        (7, "[Fine-tuning](07_finetuning.ipynb) shows")]
    assert claims("{doc}`lesson 7 <../notebooks/07_finetuning>` then trains it.", defined)[0][0] == 7
    assert claims("{ref}`sec-accumulation` shows it.", defined) == [(7, "{ref}`sec-accumulation` shows")]
    assert claims("In lesson 7, accumulation.", defined) == []        # no verb: not a claim
    assert [" ".join(s.split()) for s in sentences("A `lesson 7 shows` in code. B.\n\nC")] == [
        "A in code.", "B.", "C"]
