"""Cross-references held like numbers: the rules of tests/notebooks/xref.py on the book as it is, and
on constructed texts, to show that each rule can fail (erratum 1's sentence among them)."""

from __future__ import annotations

from tests.notebooks.xref import Text, claims, labels, problems, read_texts, sentences

TEXTS = read_texts()

#: Claims not yet held by a label, each in a page this change could not edit: (where, the claim's
#: words) -> what would hold it. Each entry must still be a problem (the test fails once it is fixed,
#: so the entry is removed with the fix); nothing else may be.
PENDING = {
    ("notebooks/05_hard_negatives.ipynb cell 43", "[Mining](06_mining.ipynb) does"):
        "a label in lesson 6 where it mines without false negatives, and {ref} to it",
    ("notebooks/06_mining.ipynb cell 3", "[Hard negatives](05_hard_negatives.ipynb) showed"):
        "a label at lesson 5's look-alike result, and {ref} to it",
    ("notebooks/08_real_data.ipynb cell 3", "[Hard negatives](05_hard_negatives.ipynb) asked"):
        "the same label of lesson 5",
    ("notebooks/10_beyond_one_vector.ipynb cell 44", "[CLIP](09_clip.ipynb) takes"):
        "{ref}`CLIP <sec-clip-loss>` (the label is in lesson 9)",
    ("book/course-map.md", "lesson 5) shows"): "the same label of lesson 5",
    ("book/course-map.md", "lesson 6 finds"): "the label of lesson 6",
    ("book/scaling.md", "[Fine-tuning](../notebooks/07_finetuning.ipynb) trains"):
        "{ref}`Fine-tuning <sec-finetune-training>` (the label is in lesson 7)",
}


def _key(problem: str) -> tuple[str, str] | None:
    where, _, rest = problem.partition(": ")
    for (w, words) in PENDING:
        if w == where and rest.startswith(repr(words)):
            return (w, words)
    return None


def test_every_claim_about_a_lesson_points_at_its_label():
    found = problems(TEXTS)
    new = [p for p in found if _key(p) is None]
    assert not new, "\n".join(new)
    fixed = set(PENDING) - {_key(p) for p in found}
    assert not fixed, f"fixed, so remove from PENDING: {sorted(fixed)}"


def test_labels_are_defined_once_and_in_lessons():
    defined, twice = labels(TEXTS)
    assert not twice, "\n".join(twice)
    assert defined["sec-accumulation"] == 7 and defined["sec-clip-loss"] == 9


# ---- constructed texts: each rule fails ------------------------------------------------------------

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


def test_unknown_labels_and_twice_defined_labels_fail():
    page = Text("book/page.md", None, "See {ref}`sec-nowhere`.\n\n(sec-accumulation)=\nAgain.")
    found = problems([LESSON_7, page])
    assert any("names no label" in p for p in found) and any("defined twice" in p for p in found)
