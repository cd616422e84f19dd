"""The help-desk retrieval fixture, and the three JSONL files any reader's data must follow.

In plain words: sixty short help articles for ten made-up products (six article
kinds each), three differently worded questions per article, and the products
split 6/2/2 into train, validation and test. It is a *wiring fixture*: every
product shares the same templates, so it shows that the code runs end to end
and lets a reader see learning happen; it is not a benchmark. Product names come
in look-alike pairs (Aster/Astra, Iris/Irix, ...) and the article kinds come in
look-alike pairs (changing vs resetting a password, cancelling vs pausing a
plan, exporting vs importing data), so no baseline is perfect on every metric.

The files (one JSON object per line)
------------------------------------
=================  ===================================================  ==========================
file               fields                                               one row is
=================  ===================================================  ==========================
corpus.jsonl       doc_id (str), text (str), group (str), split (str)   a searchable document
queries.jsonl      query_id (str), text (str),                          an evaluation question
                   relevant_doc_ids (list[str], non-empty), split (str)  with its judged answers
train_pairs.jsonl  query (str), positive (str), doc_id (str),           a training pair
                   group (str)
=================  ===================================================  ==========================

``split`` is one of ``train``, ``val``, ``test``. ``group`` is the unit that is kept
whole across the split (here a product). Files are UTF-8 (a leading byte-order
mark is accepted); fields beyond the listed ones are ignored. `load_dataset`
checks the rules listed in `read_jsonl` and `validate` and raises `DataError`
(a ValueError) naming the file and line.

Relations: the same format as the fine-tuning chapter this lab follows; the
splits feed `labs.metrics` (baselines) and `labs.finetune` (training).
Lesson: ``notebooks/05_finetuning.ipynb``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "SPLITS",
    "FILES",
    "PRODUCTS",
    "KINDS",
    "DataError",
    "HelpdeskData",
    "make_helpdesk",
    "write_dataset",
    "read_jsonl",
    "validate",
    "load_dataset",
    "file_sha256",
    "data_hashes",
    "has_instruction",
]

SPLITS = ("train", "val", "test")
FILES = ("corpus.jsonl", "queries.jsonl", "train_pairs.jsonl")

# Ten products in look-alike pairs; the first six train, then two validate, two test.
PRODUCTS = ("Aster", "Astra", "Nova", "Novo", "Lumen", "Lumo", "Iris", "Irix", "Orbit", "Orbis")
PRODUCT_SPLIT = dict(zip(PRODUCTS, ["train"] * 6 + ["val"] * 2 + ["test"] * 2))

# kind -> (title, menu, action, three question templates). {p} is the product name.
KINDS: dict[str, tuple[str, str, str, tuple[str, str, str]]] = {
    "password": (
        "change the password", "Security", "Change password",
        ("How do I change the password in {p}?",
         "In {p}, I want a new secret for signing in.",
         "{p}: swap my login phrase for a fresh one"),
    ),
    "reset": (
        "reset a forgotten password", "Security", "Send reset link",
        ("I forgot my {p} password, how do I get back in?",
         "{p} locked me out and I cannot remember my login phrase.",
         "In {p}, recover access without knowing my current secret"),
    ),
    "cancel": (
        "cancel a subscription", "Billing", "Cancel renewal",
        ("How do I cancel my subscription to {p}?",
         "In {p}, I need to stop future renewals.",
         "{p}: end my plan for good"),
    ),
    "pause": (
        "pause a subscription", "Billing", "Pause plan",
        ("How do I pause my {p} subscription?",
         "In {p}, I want a break from paying for a month or two.",
         "{p}: put my plan on hold but keep my account"),
    ),
    "export": (
        "export your data", "Data", "Download archive",
        ("How do I export my data from {p}?",
         "In {p}, I want a copy of everything I stored.",
         "{p}: take my files with me to another tool"),
    ),
    "import": (
        "import data from another tool", "Data", "Upload file",
        ("How do I import data into {p}?",
         "In {p}, bring in the files I kept in my old tool.",
         "{p}: move my records over from a spreadsheet"),
    ),
}

# Each product names its settings area differently, so articles are not identical across products.
_AREAS = ("Account", "Settings", "Profile", "Workspace", "Preferences")


class DataError(ValueError):
    """A problem in a data file; the message starts with ``file line N:`` when a line is to blame."""

    def __init__(self, file: str, line: int | None, message: str) -> None:
        self.file, self.line = file, line
        where = f"{file} line {line}" if line is not None else file
        super().__init__(f"{where}: {message}")


@dataclass
class HelpdeskData:
    """The three files as lists of dicts, plus the line number of each row (1-based)."""

    corpus: list[dict]
    queries: list[dict]
    train_pairs: list[dict]

    def split_queries(self, split: str) -> list[dict]:
        """The evaluation queries of one split."""
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        return [q for q in self.queries if q["split"] == split]

    def qrels(self, split: str) -> dict[str, set[str]]:
        """query_id -> set of relevant doc_ids, for one split."""
        return {q["query_id"]: set(q["relevant_doc_ids"]) for q in self.split_queries(split)}


def _slug(name: str) -> str:
    return name.lower().replace(" ", "-")


def make_helpdesk() -> HelpdeskData:
    """Build the fixture: 60 articles, 180 queries, 108 training pairs (36 distinct positives)."""
    corpus, queries, pairs = [], [], []
    for n, product in enumerate(PRODUCTS):
        split, area = PRODUCT_SPLIT[product], _AREAS[n % len(_AREAS)]
        for kind, (title, menu, action, templates) in KINDS.items():
            doc_id = f"{_slug(product)}-{kind}"
            text = f"{product}: How to {title}. Open {area} then {menu} and choose {action}."
            corpus.append({"doc_id": doc_id, "text": text, "group": product, "split": split})
            for v, template in enumerate(templates):
                question = template.format(p=product)
                queries.append({"query_id": f"{doc_id}-q{v}", "text": question,
                                "relevant_doc_ids": [doc_id], "split": split})
                if split == "train":
                    pairs.append({"query": question, "positive": text, "doc_id": doc_id, "group": product})
    return HelpdeskData(corpus, queries, pairs)


def write_dataset(data: HelpdeskData, folder: str | Path) -> Path:
    """Write the three JSONL files into ``folder``; refuse a folder that already has files in it."""
    folder = Path(folder)
    if folder.exists() and any(folder.iterdir()):
        raise ValueError(f"folder {str(folder)!r} is not empty: choose a new folder, nothing was overwritten")
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in zip(FILES, (data.corpus, data.queries, data.train_pairs)):
        with open(folder / name, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return folder


# ---- reading and checking ----------------------------------------------------

_SCHEMA = {
    "corpus.jsonl": {"doc_id": str, "text": str, "group": str, "split": str},
    "queries.jsonl": {"query_id": str, "text": str, "relevant_doc_ids": list, "split": str},
    "train_pairs.jsonl": {"query": str, "positive": str, "doc_id": str, "group": str},
}


def has_instruction(text: str) -> bool:
    """True when ``text`` already carries a query instruction (starts with ``Instruct:``; case and
    leading spaces ignored)."""
    return text.lstrip()[:9].casefold() == "instruct:"


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    keys = [k for k, _ in pairs]
    twice = next((k for k in keys if keys.count(k) > 1), None)
    if twice is not None:
        raise ValueError(f"field {twice!r} appears twice in one object")
    return dict(pairs)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _lines(path: Path):
    """(line number, text) of a UTF-8 file; DataError naming line and byte offset for a byte that is not UTF-8."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise DataError(path.name, None, f"cannot read {str(path)!r}: {err.strerror}") from None
    offset = 3 if data.startswith(b"\xef\xbb\xbf") else 0  # a UTF-8 byte-order mark is accepted
    for n, raw in enumerate(data[offset:].split(b"\n"), start=1):
        try:
            yield n, raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise DataError(path.name, n, f"byte 0x{raw[err.start]:02x} at byte offset {offset + err.start} of the "
                            f"file (column {err.start + 1} of the line) is not valid UTF-8; save the file as "
                            "UTF-8") from None
        offset += len(raw) + 1


def read_jsonl(path: str | Path) -> list[tuple[int, dict]]:
    """Rows of a JSONL file as (line number, object); blank lines are skipped.

    Raises DataError for a missing file, a byte that is not UTF-8, malformed JSON,
    a key given twice in one object, a row that is not an object, or a missing /
    wrongly typed / empty field (checked for the three known files).
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(path.name, None, f"file not found at {str(path)!r}")
    schema = _SCHEMA.get(path.name)
    rows = []
    for n, line in _lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line, object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as err:
            raise DataError(path.name, n, f"malformed JSON ({err.msg} at column {err.colno})") from None
        except ValueError as err:
            raise DataError(path.name, n, str(err)) from None
        except RecursionError:
            raise DataError(path.name, n, "JSON nested too deeply") from None
        if not isinstance(row, dict):
            raise DataError(path.name, n, f"expected a JSON object, got {type(row).__name__}")
        for field, kind in (schema or {}).items():
            if field not in row:
                raise DataError(path.name, n, f"missing field {field!r}")
            value = row[field]
            if not isinstance(value, kind):
                raise DataError(path.name, n,
                                f"field {field!r} must be {kind.__name__}, got {type(value).__name__}")
            if kind is str and not value.strip():
                raise DataError(path.name, n, f"field {field!r} is empty")
            for text in (value if kind is list else [value]):
                if isinstance(text, str) and not _encodable(text):
                    raise DataError(path.name, n, f"field {field!r} holds an unpaired surrogate escape (like "
                                    "\\ud800): not a character")
        rows.append((n, row))
    return rows


def validate(corpus: list[tuple[int, dict]], queries: list[tuple[int, dict]],
             pairs: list[tuple[int, dict]]) -> None:
    """Check the rules across the three files (rows as returned by `read_jsonl`).

    Rules: split values are train/val/test; ids are unique; a group stays in one split;
    every split has documents; val and test have queries; relevant_doc_ids is a
    non-empty list of distinct corpus ids from the query's own split; a training pair points at a
    train document of the same group with exactly its text; at least two distinct positives;
    no query or pair already carries an ``Instruct:`` prefix (it is added once, at encoding);
    the same text (case and spacing ignored) is never in two splits, neither among documents
    nor among queries and training-pair queries.
    """
    docs: dict[str, dict] = {}
    doc_line: dict[str, int] = {}
    group_split: dict[str, tuple[str, int]] = {}
    for n, row in corpus:
        _check_split_and_id("corpus.jsonl", n, row, "doc_id", doc_line)
        first = group_split.setdefault(row["group"], (row["split"], n))
        if first[0] != row["split"]:
            raise DataError("corpus.jsonl", n, f"group {row['group']!r} spans splits: {first[0]!r} on line "
                            f"{first[1]} and {row['split']!r} here; keep a group in one split")
        docs[row["doc_id"]] = row
    for split in SPLITS:
        if not any(d["split"] == split for d in docs.values()):
            raise DataError("corpus.jsonl", None, f"split {split!r} is empty: it has no documents")

    seen: dict[str, int] = {}
    for n, row in queries:
        _check_split_and_id("queries.jsonl", n, row, "query_id", seen)
        rel = row["relevant_doc_ids"]
        if not rel or not all(isinstance(r, str) for r in rel):
            raise DataError("queries.jsonl", n, "relevant_doc_ids must be a non-empty list of doc_id strings")
        twice = next((r for i, r in enumerate(rel) if r in rel[:i]), None)
        if twice is not None:
            raise DataError("queries.jsonl", n, f"relevant_doc_ids lists {twice!r} twice; list each doc_id once")
        for doc_id in rel:
            if doc_id not in docs:
                raise DataError("queries.jsonl", n, f"relevant doc_id {doc_id!r} is not in corpus.jsonl")
            if docs[doc_id]["split"] != row["split"]:
                raise DataError("queries.jsonl", n, f"query split {row['split']!r} but relevant document {doc_id!r} "
                                f"is in split {docs[doc_id]['split']!r}")
    for split in ("val", "test"):
        if not any(q["split"] == split for _, q in queries):
            raise DataError("queries.jsonl", None, f"split {split!r} is empty: it has no queries")

    if not pairs:
        raise DataError("train_pairs.jsonl", None, "no training pairs")
    for n, row in pairs:
        doc = docs.get(row["doc_id"])
        if doc is None:
            raise DataError("train_pairs.jsonl", n, f"doc_id {row['doc_id']!r} is not in corpus.jsonl")
        if doc["split"] != "train":
            raise DataError("train_pairs.jsonl", n, f"doc_id {row['doc_id']!r} is a {doc['split']!r} document; "
                            "only train documents may be training positives")
        if row["positive"] != doc["text"]:
            raise DataError("train_pairs.jsonl", n, f"positive text differs from corpus.jsonl line "
                            f"{doc_line[row['doc_id']]} for doc_id {row['doc_id']!r}")
        if row["group"] != doc["group"]:
            raise DataError("train_pairs.jsonl", n, f"group {row['group']!r} but document {row['doc_id']!r} "
                            f"belongs to group {doc['group']!r}")
    if len({row["doc_id"] for _, row in pairs}) < 2:
        raise DataError("train_pairs.jsonl", None, "fewer than two distinct positives: a contrastive batch needs "
                        "at least two different documents")
    _check_instructions(queries, pairs)
    _check_texts_stay_in_one_split(corpus, queries, pairs)


def _check_split_and_id(name: str, n: int, row: dict, id_field: str, first_line: dict[str, int]) -> None:
    """A row's split is one of SPLITS and its ``id_field`` is new; ``first_line`` (id -> line) records it."""
    if row["split"] not in SPLITS:
        raise DataError(name, n, f"split must be one of {SPLITS}, got {row['split']!r}")
    if row[id_field] in first_line:
        raise DataError(name, n, f"duplicate {id_field} {row[id_field]!r} (first on line {first_line[row[id_field]]})")
    first_line[row[id_field]] = n


def _check_instructions(queries: list[tuple[int, dict]], pairs: list[tuple[int, dict]]) -> None:
    for name, rows, field in (("queries.jsonl", queries, "text"), ("train_pairs.jsonl", pairs, "query")):
        for n, row in rows:
            if has_instruction(row[field]):
                raise DataError(name, n, f"field {field!r} already starts with 'Instruct:'; give the bare "
                                "question: the instruction is added once, when queries are encoded")


def _key(text: str) -> str:
    """The text compared across splits: case folded, runs of spaces collapsed."""
    return " ".join(text.split()).casefold()


def _check_texts_stay_in_one_split(corpus: list[tuple[int, dict]], queries: list[tuple[int, dict]],
                                   pairs: list[tuple[int, dict]]) -> None:
    """The same document text, or the same query text, in two splits leaks an answer: refuse naming both places."""
    groups = (
        [("corpus.jsonl", n, r["split"], r["text"]) for n, r in corpus],
        [("queries.jsonl", n, r["split"], r["text"]) for n, r in queries]
        + [("train_pairs.jsonl", n, "train", r["query"]) for n, r in pairs],
    )
    for rows in groups:
        first: dict[str, tuple[str, int, str]] = {}
        for name, n, split, text in rows:
            seen = first.setdefault(_key(text), (name, n, split))
            if seen[2] != split:
                raise DataError(name, n, f"the same text is in split {split!r} here and in split {seen[2]!r} at "
                                f"{seen[0]} line {seen[1]} (case and spacing ignored): a text in two splits "
                                "leaks answers between them")


def load_dataset(folder: str | Path) -> HelpdeskData:
    """Read and validate the three JSONL files of a data folder."""
    folder = Path(folder)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise ValueError(f"data folder {str(folder)!r} {what}")
    corpus, queries, pairs = (read_jsonl(folder / name) for name in FILES)
    validate(corpus, queries, pairs)
    return HelpdeskData([r for _, r in corpus], [r for _, r in queries], [r for _, r in pairs])


def file_sha256(path: str | Path) -> str:
    """SHA-256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def data_hashes(folder: str | Path) -> dict[str, str]:
    """SHA-256 of each of the three data files, keyed by file name."""
    return {name: file_sha256(Path(folder) / name) for name in FILES}
