"""labs.retrieval.docs_corpus (the docstring retrieval set) and benchmarks/docs_experiment.py (the real experiment)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from pathlib import Path

import pytest

from labs.classroom.results import METRICS, load_results, results_path, results_summary

RESULTS_PATH = results_path()
from labs.retrieval.docs_corpus import (
    build_docs_dataset, clean_markup, DEFAULT_SPLITS, split_docstring,
)
from labs.retrieval.data import FILES, load_dataset

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "docs_experiment.py"
REGENERATE = "regenerate it with the one command: nice -n 10 python benchmarks/docs_experiment.py"


def _normal(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The data set built twice (same process) with 25 pairs per library, and its metadata."""
    a, b = tmp_path_factory.mktemp("docs_a"), tmp_path_factory.mktemp("docs_b")
    meta = build_docs_dataset(a / "data", max_per_library=25)
    build_docs_dataset(b / "data", max_per_library=25)
    return a / "data", b / "data", meta


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("docs_experiment", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


# ---- the experiment ------------------------------------------------------------------------

def test_experiment_tiny_run(built, script, tmp_path, capsys):
    out = tmp_path / "r.json"
    results = script.main(["--data", str(built[0]), "--out", str(out), "--seeds", "0", "--steps", "2",
                           "--batch-size", "4", "--eval-every", "1", "--max-queries", "8", "--bootstrap", "20"])
    assert load_results(out) == json.loads(out.read_text())
    assert list(results["test"]) == ["tfidf", "bm25", "minilm", "mnrl", "mnrl_hn", "mnrl_hn_filt"]
    for row in results["test"].values():
        for m in METRICS:
            cell = row[m]
            assert 0 <= cell["ci95"][0] <= cell["mean"] <= cell["ci95"][1] <= 1, (m, cell)
            assert len(cell["per_seed"]) == 1
    for condition in script.TRAINED:
        assert [p["step"] for p in results["curves"][condition]["0"]] == [0, 1, 2]
    assert results["data"]["test_queries"] == 8 and results["code"]["sha256"] == script.code_hashes()
    assert "mnrl_hn - mnrl" in results["differences"]
    assert "paired gain" in capsys.readouterr().out


def test_committed_results_match_code_and_pins():
    """The committed results were made by the current code and the versions constraints.txt pins."""
    results = load_results(RESULTS_PATH)
    for name, recorded in results["code"]["sha256"].items():
        now = hashlib.sha256((ROOT / name).read_bytes()).hexdigest()
        assert now == recorded, f"{name} changed since {RESULTS_PATH.name} was made: {REGENERATE}"
    pins = dict(line.split("==", 1) for line in (ROOT / "constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    pins = {k.lower().replace("_", "-"): v.strip() for k, v in pins.items()}
    for package, version in results["versions"].items():
        if package != "python":
            assert pins.get(package) == version.split("+")[0], (
                f"{RESULTS_PATH.name} was made with {package} {version}, constraints.txt pins "
                f"{pins.get(package)}: {REGENERATE}")
    summary = results_summary(results)
    assert max(len(line) for line in summary.splitlines()) <= 80
    assert results["test"]["minilm"]["recall@1"]["mean"] < 0.8     # far from saturated
    assert len(results["settings"]["seeds"]) >= 3
