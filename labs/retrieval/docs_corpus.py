"""A retrieval data set from real text nobody here wrote: the docstrings of installed libraries.

In plain words: every public function and class of numpy, scipy, scikit-learn
and torch carries a docstring whose first line says what it does ("Compute the
median along the specified axis.") and whose next paragraph explains it. The
summary line becomes a *query*; the paragraph after it, cleaned, becomes its
one relevant *document*. The task reads like a docs search: "which part of the
documentation answers my question?". Nothing is downloaded or vendored: the text
comes from the libraries already installed, and their versions are recorded.

What is removed so the match is not trivial: signature lines (``add(input,
other) -> Tensor``), reST markup (``:func:`~numpy.sum``` becomes ``sum``),
doctest and literal blocks, directives, numpydoc/Google section headers and
everything after them, "Read more in the User Guide" lines; a pair is dropped
when its document contains the query text or the object's own name, and
near-duplicate documents (aliases, templated docstrings) are kept once
(TF-IDF cosine >= `NEAR_DUPLICATE`, first in traversal order wins; across
splits the test copy wins, then validation).

Splits are by library, so no library is in two splits (`DEFAULT_SPLITS`).
``group`` is the module the object was found in (``scipy.stats``).

Files written (the format of `labs.retrieval.data`, plus one)
-------------------------------------------------------------
=================  ==============================================================
corpus.jsonl       doc_id, text (the document), group (module), split
queries.jsonl      query_id, text (summary line), relevant_doc_ids ([doc_id]), split
train_pairs.jsonl  query, positive, doc_id, group: one per train query
metadata.json      library versions, split of each library, counts, options
=================  ==============================================================

Determinism: modules and names are visited in sorted order and nothing depends
on hash order, so the same installed versions give byte-identical files.
Relations: `labs.retrieval.data.load_dataset` reads and validates the output
unchanged. Experiment: ``benchmarks/docs_experiment.py``; the lessons read its
committed results with `labs.classroom.results`.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import inspect
import io
import pkgutil
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

from labs.retrieval import validate
from labs.retrieval.data import SPLITS, RetrievalData, write_dataset

__all__ = ["DEFAULT_SPLITS", "NEAR_DUPLICATE", "clean_markup", "split_docstring", "collect_pairs",
           "build_docs_dataset", "name_words", "near_twin", "module_and_name"]

#: library -> split. scikit-learn tests: after cleaning it gives the most pairs of the two
#: smaller libraries (about 270), so its confidence intervals are the tightest; numpy (about
#: 200) validates; scipy and torch (about 650 together) train. Each split is one subject area
#: the others never saw: estimators and metrics, array routines, scientific and tensor code.
DEFAULT_SPLITS: dict[str, str] = {"scipy": "train", "torch": "train", "numpy": "val", "sklearn": "test"}
NEAR_DUPLICATE = 0.8          # TF-IDF cosine at or above which two documents count as one
_SKIP_MODULES = {"conftest", "tests", "testing", "distutils", "f2py", "externals", "typing", "version",
                 "setup", "compat", "return_types"}
_MAX_DOC_CHARS = 400
_MIN_DOC_WORDS = 12

_HEADER = re.compile(r"^(Parameters|Returns?|Yields|Raises|Warns|Warnings?|See Also|Notes?|References|"
                     r"Examples?|Attributes|Methods|Other Parameters|Args|Arguments|Keyword Arguments|"
                     r"Shape|Inputs?|Outputs?|Variables|Reference|Todo|Example::?)\s*:{0,2}\s*$")
_ROLE = re.compile(r":[\w:.-]+:`(~?)([^`<]*?)(?:\s*<[^>]*>)?`")
_SIGNATURE = re.compile(r"^[\w.]+\s*\(.*\)\s*(->.*)?$", re.S)


def clean_markup(text: str) -> str:
    """Plain text from reST: roles keep their label (last dotted part for ``~``), quotes go, spaces collapse."""
    text = _ROLE.sub(lambda m: m.group(2).strip().rsplit(".", 1)[-1] if m.group(1) else m.group(2).strip(), text)
    text = re.sub(r"``([^`]*)``", r"\1", text)
    text = re.sub(r"`([^`<]*?)(?:\s*<[^>]*>)?`_{0,2}", r"\1", text)
    text = re.sub(r"\*\*?([^*\s][^*]*?)\*\*?", r"\1", text)
    text = re.sub(r"\[\d+\]_|\[[A-Za-z]+\d*\]_", "", text)       # citation markers like [1]_
    return re.sub(r"\s+", " ", text).strip()


def _first_sentence(text: str) -> str:
    """Text up to the first full stop that is followed by a space and a capital letter."""
    match = re.search(r"(?<!\be\.g)(?<!\bi\.e)\.\s+(?=[A-Z])", text)
    return text[:match.start() + 1] if match else text


def _cut(text: str, limit: int = _MAX_DOC_CHARS) -> str:
    """At most ``limit`` characters, cut after the last full sentence that fits."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    end = max(head.rfind(". "), head.rfind(".\n"))
    return head[:end + 1] if end > limit // 3 else head.rsplit(" ", 1)[0]


def split_docstring(doc: str | None) -> tuple[str, str] | None:
    """(summary line, cleaned extended summary) of a docstring, or None if it has no usable pair.

    The summary is the first paragraph that is not a signature; the document is
    the paragraphs after it up to the first section header, directive, doctest
    or literal block, without markup, cut to 400 characters at a sentence end.
    """
    if not doc or not isinstance(doc, str):
        return None
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", inspect.cleandoc(doc)) if p.strip()]
    while paragraphs and _SIGNATURE.match(paragraphs[0]):
        paragraphs.pop(0)
    if len(paragraphs) < 2:
        return None
    summary, body = _first_sentence(clean_markup(paragraphs[0])), []
    for para in paragraphs[1:]:
        first = para.splitlines()[0].strip()
        if _HEADER.match(first) or first.startswith(("..", ">>>", "::")) or re.match(r"^[-=~^]{3,}$", first):
            break
        if para.startswith((" ", "\t", "- ", "* ", "| ")):   # a literal block or a list
            break
        para = re.sub(r"Read more in the :ref:`[^`]*`\.?", "", para)
        literal = "::" in para
        para = para.split("::")[0].strip()
        if para:
            body.append(clean_markup(para))
        if literal:
            break
        if sum(len(b) for b in body) >= _MAX_DOC_CHARS:
            break
    text = _cut(" ".join(body))
    if not text.endswith((".", "!", "?")):
        text = text[:text.rfind(". ") + 1] if ". " in text else ""
    if not text or len(text.split()) < _MIN_DOC_WORDS or not 3 <= len(summary.split()) <= 40:
        return None
    return summary, text


def _quiet_import(name: str):
    """Import a module with its warnings and prints silenced; None if it fails to import."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            return importlib.import_module(name)
        except Exception:  # optional dependencies missing, platform-only modules: skipped
            return None


def _modules(library: str) -> list[tuple[str, object]]:
    """The library and its public first-level submodules, sorted by name."""
    root = _quiet_import(library)
    if root is None:
        raise ValueError(f"library {library!r} is not installed (import {library} failed)")
    names = sorted(m.name for m in pkgutil.iter_modules(getattr(root, "__path__", []))
                   if not m.name.startswith("_") and m.name not in _SKIP_MODULES)
    found = [(library, root)]
    for name in names:
        module = _quiet_import(f"{library}.{name}")
        if module is not None:
            found.append((f"{library}.{name}", module))
    return found


def _public_objects(module: object, library: str) -> list[tuple[str, object]]:
    """(name, object) for the public functions and classes a module exposes, sorted by name."""
    names = getattr(module, "__all__", None)
    if not isinstance(names, (list, tuple)):
        names = [n for n in vars(module) if not n.startswith("_")]
    out = []
    for name in sorted({str(n) for n in names}):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                obj = getattr(module, name, None)
        except Exception:  # lazy attributes that refuse to load (experimental APIs)
            continue
        if obj is None or inspect.ismodule(obj) or not callable(obj):
            continue
        home = str(getattr(obj, "__module__", None) or "").split(".")[0]
        if home != library and type(obj).__name__ != "ufunc":  # numpy ufuncs say "numpy" everywhere
            continue
        out.append((name, obj))
    return out


def collect_pairs(library: str) -> list[dict]:
    """Every usable (summary, document) pair of one installed library, in sorted traversal order.

    Each row: ``library``, ``module`` (where it was found), ``name``, ``query``, ``document``.
    An object reached twice (an alias) is kept at its first visit. A pair is dropped when the
    document contains the query text or the object's name (case-insensitive, as a word).
    """
    rows, seen = [], set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # deprecated aliases warn when they are looked at
        objects = [(module_name, name, obj) for module_name, module in _modules(library)
                   for name, obj in _public_objects(module, library)]
    for module_name, name, obj in objects:
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        doc = obj.__doc__ if isinstance(getattr(obj, "__doc__", None), str) else None
        pair = split_docstring(doc)
        if pair is None:
            continue
        query, document = pair
        named = re.search(rf"(?<!\w){re.escape(name.lower())}(?!\w)", document.lower())
        if named or _normal(query) in _normal(document):
            continue
        rows.append({"library": library, "module": module_name, "name": name, "query": query,
                     "document": document})
    return rows


def _normal(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def _near_duplicates(texts: Sequence[str], threshold: float = NEAR_DUPLICATE) -> list[bool]:
    """keep[i] is False when text i is a near-duplicate (TF-IDF cosine >= threshold) of an earlier kept one."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    if not texts:
        return []
    vectors = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit_transform(list(texts))
    similar = (vectors @ vectors.T).toarray() >= threshold
    keep = [True] * len(texts)
    for i in range(len(texts)):
        if keep[i]:
            for j in range(i + 1, len(texts)):
                if similar[i, j]:
                    keep[j] = False
    return keep


def _version(library: str) -> str:
    module = _quiet_import(library)
    return str(getattr(module, "__version__", "unknown"))


def build_docs_dataset(out: str | Path, splits: Mapping[str, str] | None = None,
                       max_per_library: int | None = None, what: str = "out") -> dict:
    """Write corpus.jsonl, queries.jsonl, train_pairs.jsonl and metadata.json into the new folder ``out``.

    ``splits`` maps each library to ``"train"``, ``"val"`` or ``"test"`` (default
    `DEFAULT_SPLITS`; every split needs one library). ``max_per_library`` keeps the
    first N pairs of each library after cleaning (None: all). Returns the metadata
    dict, whose ``counts`` give documents per split and library. Raises ValueError
    for a split name, an uninstalled library, a non-empty ``out`` or an empty split.
    """
    if splits is not None and not isinstance(splits, Mapping):
        raise ValueError(f"splits must map each library to a split, e.g. {{'numpy': 'val'}}, got {splits!r}")
    splits = dict(DEFAULT_SPLITS if splits is None else splits)
    if max_per_library is not None:
        validate.integer("max_per_library (--max-per-library)", max_per_library, 2)
    for library, split in splits.items():
        if split not in SPLITS:
            raise ValueError(f"split of {library!r} must be one of {SPLITS}, got {split!r}")
    for split in SPLITS:
        if split not in splits.values():
            raise ValueError(f"no library is assigned to split {split!r}: give each of {SPLITS} at least one")
    # Test libraries first, then validation, then train: a near-duplicate across splits stays in test.
    order = sorted(splits, key=lambda lib: (("test", "val", "train").index(splits[lib]), lib))
    rows = [row for lib in order for row in collect_pairs(lib)]
    queries_seen: set[str] = set()
    unique = []
    for row in rows:
        if _normal(row["query"]) not in queries_seen:
            queries_seen.add(_normal(row["query"]))
            unique.append(row)
    keep = _near_duplicates([row["document"] for row in unique])
    rows = [row for row, k in zip(unique, keep) if k]
    if max_per_library is not None:
        rows = [row for lib in order for row in [r for r in rows if r["library"] == lib][:max_per_library]]

    corpus, queries, pairs = [], [], []
    counts: dict[str, dict[str, int]] = {split: {} for split in SPLITS}
    for row in sorted(rows, key=lambda r: (SPLITS.index(splits[r["library"]]), r["module"], r["name"])):
        split, doc_id = splits[row["library"]], f"{row['module']}.{row['name']}"
        corpus.append({"doc_id": doc_id, "text": row["document"], "group": row["module"], "split": split})
        queries.append({"query_id": f"q:{doc_id}", "text": row["query"], "relevant_doc_ids": [doc_id],
                        "split": split})
        if split == "train":
            pairs.append({"query": row["query"], "positive": row["document"], "doc_id": doc_id,
                          "group": row["module"]})
        counts[split][row["library"]] = counts[split].get(row["library"], 0) + 1
    for split in SPLITS:
        if not counts[split]:
            raise ValueError(f"split {split!r} has no usable docstring pairs: assign it another library")
    meta = {"source": "docstrings of installed libraries (labs.retrieval.docs_corpus)",
            "versions": {lib: _version(lib) for lib in sorted(splits)},
            "splits": {lib: splits[lib] for lib in sorted(splits)},
            "counts": counts, "max_per_library": max_per_library, "near_duplicate": NEAR_DUPLICATE,
            "max_doc_chars": _MAX_DOC_CHARS}
    write_dataset(RetrievalData(corpus, queries, pairs), out, what, extra={"metadata.json": meta})
    return meta


# ---- near-twins: documents of objects whose names say they are siblings ------------------------

def name_words(name: str) -> list[str]:
    """The lower-case words of an identifier, split at underscores and case changes:
    ``MiniBatchKMeans`` -> mini, batch, k, means; ``f1_score`` -> f1, score; ``LCF_graph`` -> lcf, graph."""
    if not isinstance(name, str):
        raise ValueError(f"name must be a string, got {type(name).__name__}")
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return [w for w in spaced.lower().split("_") if w]


def near_twin(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Whether two objects, each ``(module, name)``, are near-twins by their names alone: the same
    name in another module (``numpy.linalg.norm`` and ``scipy.linalg.norm``), or siblings in one
    module whose names share their first or last word (``load_iris``, ``load_wine``;
    ``f1_score``, ``recall_score``) or whose words one holds all of the other's (``Ridge``,
    ``RidgeCV``). An object is not its own twin."""
    (mod_a, name_a), (mod_b, name_b) = a, b
    if (mod_a, name_a) == (mod_b, name_b):
        return False
    if name_a == name_b:
        return True
    if mod_a != mod_b:
        return False
    wa, wb = name_words(name_a), name_words(name_b)
    if not wa or not wb:
        return False
    return wa[0] == wb[0] or wa[-1] == wb[-1] or set(wa) <= set(wb) or set(wb) <= set(wa)


def module_and_name(doc: Mapping) -> tuple[str, str]:
    """``(module, name)`` of a document of this data set: its ``group``, and its ``doc_id`` after it
    (``{"doc_id": "sklearn.linear_model.Ridge", "group": "sklearn.linear_model"}`` -> the module and
    ``Ridge``)."""
    doc_id, group = doc["doc_id"], doc["group"]
    if not doc_id.startswith(group + "."):
        raise ValueError(f"doc_id {doc_id!r} does not start with its group {group!r} and a dot")
    return group, doc_id[len(group) + 1:]
