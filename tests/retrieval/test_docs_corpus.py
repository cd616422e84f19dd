"""labs.retrieval.docs_corpus: the docstring retrieval set, and near-twins by name (the experiment's own
tests are in tests/benchmarks/test_docs_experiment.py)."""

from __future__ import annotations

import json
import re

import pytest

from labs.retrieval.docs_corpus import (
    DEFAULT_SPLITS, build_docs_dataset, clean_markup, module_and_name, name_words, near_twin, split_docstring,
)
from labs.retrieval.data import FILES, load_dataset


def _normal(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The data set built twice (same process) with 25 pairs per library, and its metadata."""
    a, b = tmp_path_factory.mktemp("docs_a"), tmp_path_factory.mktemp("docs_b")
    meta = build_docs_dataset(a / "data", max_per_library=25)
    build_docs_dataset(b / "data", max_per_library=25)
    return a / "data", b / "data", meta


# ---- cleaning one docstring ------------------------------------------------------------------

def test_split_docstring_numpydoc():
    doc = """Compute the median along the specified axis.

    Returns the middle value of the sorted array elements, see :func:`~numpy.mean` and ``np.sum``.
    Read more in the :ref:`User Guide <median>`.

    Parameters
    ----------
    a : array_like
    """
    assert split_docstring(doc) == ("Compute the median along the specified axis.",
                                    "Returns the middle value of the sorted array elements, see mean and np.sum.")


def test_split_docstring_drops_signature_doctest_and_short_bodies():
    doc = """add(input, other, *, alpha=1) -> Tensor

    Adds other, scaled by alpha, to input. More words follow here.

    The result has the broadcast shape of the two inputs, and its dtype is promoted as usual.

    >>> torch.add(a, b)
    """
    summary, body = split_docstring(doc)
    assert summary == "Adds other, scaled by alpha, to input."
    assert body.startswith("The result has the broadcast shape") and ">>>" not in body
    assert split_docstring("One line only.") is None
    assert split_docstring("Summary here today.\n\nToo short.") is None
    assert split_docstring(None) is None


def test_clean_markup():
    assert clean_markup(":func:`~numpy.sum` and :class:`Linear <torch.nn.Linear>`") == "sum and Linear"
    assert clean_markup("the ``axis`` of `x`, see [1]_,  **bold**") == "the axis of x, see , bold"


# ---- the data set --------------------------------------------------------------------------

def test_builds_validates_and_records_versions(built):
    folder, _, meta = built
    data = load_dataset(folder)                      # the course's loader and validation, unchanged
    assert len(data.corpus) == len(data.queries) == sum(sum(c.values()) for c in meta["counts"].values())
    assert len(data.train_pairs) == sum(meta["counts"]["train"].values())
    assert set(meta["versions"]) == set(DEFAULT_SPLITS)
    assert all(re.match(r"\d+\.\d+", v) for v in meta["versions"].values())
    assert json.loads((folder / "metadata.json").read_text()) == meta


def test_deterministic(built):
    a, b, _ = built
    for name in (*FILES, "metadata.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_no_query_or_name_inside_its_document(built):
    data = load_dataset(built[0])
    text = {d["doc_id"]: d["text"] for d in data.corpus}
    for q in data.queries:
        doc = text[q["relevant_doc_ids"][0]]
        assert _normal(q["text"]) not in _normal(doc), q["query_id"]
        name = q["relevant_doc_ids"][0].rsplit(".", 1)[1].lower()
        assert not re.search(rf"(?<!\w){re.escape(name)}(?!\w)", doc.lower()), q["query_id"]
        assert not re.search(r">>>|:func:|``|^\s*-{3,}", doc), q["query_id"]


def test_splits_share_no_library(built):
    data = load_dataset(built[0])
    libraries = {split: {d["group"].split(".")[0] for d in data.corpus if d["split"] == split}
                 for split in ("train", "val", "test")}
    assert libraries == {split: {lib for lib, s in DEFAULT_SPLITS.items() if s == split} for split in libraries}
    assert not libraries["train"] & libraries["val"] and not libraries["val"] & libraries["test"]
    assert not libraries["train"] & libraries["test"]


def test_bad_input(tmp_path):
    with pytest.raises(ValueError, match="split of 'numpy' must be one of"):
        build_docs_dataset(tmp_path / "a", {"numpy": "dev", "scipy": "val", "torch": "test"})
    with pytest.raises(ValueError, match="no library is assigned to split 'test'"):
        build_docs_dataset(tmp_path / "b", {"numpy": "train", "scipy": "val"})
    with pytest.raises(ValueError, match="'no_such_library_xyz' is not installed"):
        build_docs_dataset(tmp_path / "c", {"numpy": "train", "scipy": "val", "no_such_library_xyz": "test"})
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_text("x")
    with pytest.raises(ValueError, match="is not empty"):
        build_docs_dataset(tmp_path / "d", max_per_library=5)


# ---- near-twins by name ------------------------------------------------------------------------

def test_name_words():
    assert name_words("MiniBatchKMeans") == ["mini", "batch", "k", "means"]
    assert name_words("f1_score") == ["f1", "score"]
    assert name_words("LCF_graph") == ["lcf", "graph"]
    assert name_words("RidgeCV") == ["ridge", "cv"]
    assert name_words("_") == []
    with pytest.raises(ValueError, match="name must be a string"):
        name_words(3)


def test_near_twin():
    assert near_twin(("numpy.linalg", "norm"), ("scipy.linalg", "norm"))            # same name elsewhere
    assert near_twin(("sklearn.datasets", "load_iris"), ("sklearn.datasets", "load_wine"))   # first word
    assert near_twin(("sklearn.metrics", "f1_score"), ("sklearn.metrics", "recall_score"))   # last word
    assert near_twin(("sklearn.linear_model", "Ridge"), ("sklearn.linear_model", "RidgeCV"))  # words inside
    assert near_twin(("sklearn.cluster", "KMeans"), ("sklearn.cluster", "MiniBatchKMeans"))
    assert not near_twin(("sklearn.cluster", "KMeans"), ("sklearn.cluster", "KMeans"))       # not its own
    assert not near_twin(("sklearn.svm", "LinearSVC"), ("sklearn.linear_model", "LinearRegression"))
    assert not near_twin(("networkx", "is_connected"), ("networkx", "pagerank"))
    assert near_twin(("a", "x"), ("a", "x_y")) == near_twin(("a", "x_y"), ("a", "x"))        # symmetric


def test_module_and_name():
    assert module_and_name({"doc_id": "sklearn.linear_model.Ridge", "group": "sklearn.linear_model"}) == (
        "sklearn.linear_model", "Ridge")
    with pytest.raises(ValueError, match="does not start with its group"):
        module_and_name({"doc_id": "numpy.sum", "group": "scipy"})
