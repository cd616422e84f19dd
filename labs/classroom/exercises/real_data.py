"""Answer checks of the real-data lesson (08): the chance that a bootstrap resample holds a given
question, the batch a truly compute-matched in-batch control would need, how many test questions
would halve a paired interval, and what forgetting the pairing does to the interval.

Each check takes the reader's answer, prints "Right: ..." or a hint that says how the answer is
wrong (never the answer), and returns True or False; it never raises on a reader's value.
"""

from __future__ import annotations

from labs.classroom.answers import fraction_answer, grade_number, number_answer, say, word_answer
from labs.classroom.results import controls, load_results

__all__ = ["FIVE", "check_resample_holds", "check_compute_matched_batch", "check_questions_to_halve",
           "check_unpaired_width"]

FIVE = 5  # the hand example's test questions


def check_resample_holds(answer: object) -> bool:
    """Exercise: a resample of the five questions draws five times with replacement; the chance that it
    holds the first question at least once."""
    value = fraction_answer(answer, "Not answered yet: fill in the chance (0 to 1).")
    if value is None:
        return False
    miss = (1 - 1 / FIVE) ** FIVE
    return grade_number(
        value, 1 - miss,
        "Right: one minus the chance that all five draws miss it. Each resample leaves about a third of "
        "the questions out, which is where the spread between resamples comes from.",
        {miss: "That is the chance that the question is missing from the resample. The question asks for "
               "the opposite.",
         1 / FIVE: "That is the chance for one draw. A resample makes five.",
         1.0: "Not every resample holds it: all five draws can land on the other four questions."},
        "Not that. Work out the chance that all five draws miss the first question, then take its "
        "complement.", tol=5e-3, wrap=True)


def check_compute_matched_batch(answer: object) -> bool:
    """Exercise: the pairs a step an in-batch-only run would need to encode as many texts a step as the
    window arm (read from the design the results file records)."""
    value = number_answer(answer, "Not answered yet: fill in the number of pairs a step.")
    if value is None:
        return False
    held = controls(load_results(), "minilm")
    texts = held["hn_window"]["texts_per_step"]
    per_pair = held["inbatch"]["texts_per_step"] // held["inbatch"]["pairs_per_step"]
    return grade_number(
        value, texts / per_pair,
        "Right: each pair costs a query and its answer, so as many texts as the window arm means this many "
        "pairs a step, and as many candidates per query: more than in-batch, fewer than the 2x batch.",
        {held["inbatch_2x"]["pairs_per_step"]: "That is the 2x batch. Count its texts a step: more than the "
                                               "window arm's.",
         held["inbatch"]["pairs_per_step"]: "That is plain in-batch training, which encodes fewer texts a "
                                            "step than the window arm.",
         float(texts): "That is a count of texts. Each pair is two of them."},
        "Not that. Count the texts the window arm encodes a step, then divide by the texts one in-batch "
        "pair costs.", tol=0.5, wrap=True)


def check_questions_to_halve(answer: object) -> bool:
    """Slider exercise: how many test questions would halve the width of the paired interval."""
    value = number_answer(answer, "Not answered yet: fill in a number of questions.")
    if value is None:
        return False
    n = load_results()["data"]["test_queries"]
    return grade_number(
        value, 4 * n,
        "Right: the width shrinks like one over the square root of the number of questions, so halving it "
        "takes four times as many; the slider's steps (each twice the last) show the same.",
        {2 * n: "Twice the questions narrows the interval by a factor of about 1.4, not 2.",
         n / 2: "Fewer questions widen the interval.",
         n / 4: "Fewer questions widen the interval."},
        "Not that. How does the width change each time the slider doubles the questions?",
        tol=0.12 * n, wrap=True)


_WIDTHS = ("narrower", "same", "wider")


def check_unpaired_width(answer: object) -> bool:
    """Break-it prediction: drawing the two systems' questions independently makes the interval of their
    difference "narrower", the "same" or "wider"?"""
    word = word_answer(answer, _WIDTHS, "Not answered yet: fill in one of 'narrower', 'same' or 'wider'.",
                       "Hint: the answer is one of the words 'narrower', 'same' or 'wider', got {answer!r}")
    if word is None:
        return False
    if word == "wider":
        say("Right: a question that is hard for one system is hard for the other. Paired, that shared "
            "difficulty cancels inside each difference; drawn apart, it enters as noise from both sides.")
        return True
    say({"narrower": "Not that. Independent draws add a source of spread; they remove none.",
         "same": "Not that. Ask what happens to a question that is hard for both systems when the two "
                 "draws no longer hold the same questions."}[word])
    return False
