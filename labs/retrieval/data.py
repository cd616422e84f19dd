"""The three JSONL files any retrieval data set follows, read and checked, with the hashes of what was read.

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

A corpus row may also carry ``fields``, an object of strings, finite numbers and lists of
strings (product, access level, year, tags): a run keeps them, and ``search --where`` ranks only
the documents whose fields pass (`labs.retrieval.filters`, which states the rules).

``split`` is one of ``train``, ``val``, ``test``. ``group`` is the unit that is kept
whole across the split (a product, a library). Files are UTF-8 (a leading byte-order
mark is accepted); fields beyond the listed ones are ignored. `load_dataset` reads
each file once, checks the rules listed in `read_jsonl` and `validate_rows`, and
returns the rows with the SHA-256 of the bytes it read (`RetrievalData.sha256`), so a
run records the files it was trained on, not the files as they are later. A problem
is a `DataError` (a ValueError) naming the file and line.

Relations: `labs.retrieval.helpdesk` and `labs.retrieval.docs_corpus` write data sets in
this format; `labs.retrieval.metrics` (baselines) and `labs.retrieval.training` read them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import dataclasses
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from labs.retrieval import machine
from labs.retrieval.files import build_atomically, named, write_json
from labs.retrieval.filters import fields_problem, kinds_problem
from labs.retrieval.instruction import has_instruction

__all__ = ["SPLITS", "FILES", "DataError", "RetrievalData", "write_dataset", "read_jsonl", "validate_rows",
           "load_dataset", "same_id"]

SPLITS = ("train", "val", "test")
FILES = ("corpus.jsonl", "queries.jsonl", "train_pairs.jsonl")


class DataError(ValueError):
    """A problem in a data file; the message starts with ``file line N:`` when a line is to blame."""

    def __init__(self, file: str, line: int | None, message: str) -> None:
        self.file, self.line = file, line
        where = f"{file} line {line}" if line is not None else file
        super().__init__(f"{where}: {message}")


@dataclass
class RetrievalData:
    """The three files as lists of dicts, and the SHA-256 of each file as it was read
    (empty for data built in memory)."""

    corpus: list[dict]
    queries: list[dict]
    train_pairs: list[dict]
    sha256: dict[str, str] = dataclasses.field(default_factory=dict)

    def split_queries(self, split: str) -> list[dict]:
        """The evaluation queries of one split."""
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        return [q for q in self.queries if q["split"] == split]

    def qrels(self, split: str) -> dict[str, set[str]]:
        """query_id -> set of relevant doc_ids, for one split."""
        return {q["query_id"]: set(q["relevant_doc_ids"]) for q in self.split_queries(split)}


def write_dataset(data: RetrievalData, folder: str | Path, what: str = "folder",
                  extra: dict[str, object] | None = None) -> Path:
    """Write the three JSONL files (and ``extra``: file name -> object, as JSON) into ``folder``, all
    of them or none; refuse a folder that already has files in it (``what`` names it in that
    message, e.g. ``"--out"``)."""
    folder = machine.new_path(folder, what)
    with build_atomically(folder, what) as tmp:
        for name, rows in zip(FILES, (data.corpus, data.queries, data.train_pairs)):
            with named(tmp / name):
                (tmp / name).write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
                                        encoding="utf-8")
        for name, obj in (extra or {}).items():
            write_json(tmp / name, obj)
    return folder


# ---- reading and checking ----------------------------------------------------

_SCHEMA = {
    "corpus.jsonl": {"doc_id": str, "text": str, "group": str, "split": str},
    "queries.jsonl": {"query_id": str, "text": str, "relevant_doc_ids": list, "split": str},
    "train_pairs.jsonl": {"query": str, "positive": str, "doc_id": str, "group": str},
}


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    row = dict(pairs)
    if len(row) != len(pairs):  # one pass: a set of the keys seen so far names the first repeated one
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"field {twice!r} appears twice in one object")
    return row


def _integer(digits: str) -> int:
    """A JSON integer; one too long for Python to read is refused in words (not Python's own message)."""
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    if limit and len(digits.lstrip("-")) > limit:
        raise ValueError(f"a number with {len(digits.lstrip('-')):,} digits: at most {limit:,} are read; write "
                         "it as a string")
    return int(digits)


def same_id(value: str) -> str:
    """An id or label as it is compared: Unicode NFC (``e`` + U+0301 is ``é``), surrounding spaces
    trimmed. Two ids equal in this form are one id written two ways: refused, never two documents."""
    return unicodedata.normalize("NFC", value).strip()


def _visible(text: str) -> str:
    """``text`` without its invisible format characters (zero-width space and joiners, soft hyphen,
    byte-order mark: Unicode category Cf)."""
    return "".join(c for c in text if unicodedata.category(c) != "Cf") if not text.isascii() else text


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _read_bytes(path: Path) -> bytes:
    """The bytes of a data file; DataError naming it when it is missing or unreadable."""
    if path.is_dir():
        raise DataError(path.name, None, f"{str(path)!r} is a folder, not a file: the data folder needs the file "
                        f"{path.name} itself")
    if not path.is_file():
        what = "is not a regular file" if path.exists() else machine.dangling(path) or "not found"
        raise DataError(path.name, None, f"file {what} at {str(path)!r}")
    try:
        return path.read_bytes()
    except OSError as err:
        raise DataError(path.name, None, f"cannot read {str(path)!r}: {err.strerror}") from None


def _lines(name: str, data: bytes):
    """(line number, text) of a UTF-8 file's bytes; DataError naming line and byte offset for a byte
    that is not UTF-8."""
    offset = 3 if data.startswith(b"\xef\xbb\xbf") else 0  # a UTF-8 byte-order mark is accepted
    for n, raw in enumerate(data[offset:].split(b"\n"), start=1):
        try:
            yield n, raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise DataError(name, n, f"byte 0x{raw[err.start]:02x} at byte offset {offset + err.start} of the "
                            f"file (column {err.start + 1} of the line) is not valid UTF-8; "
                            f"{_encoding_hint(data)}") from None
        offset += len(raw) + 1


def _encoding_hint(data: bytes) -> str:
    """What to do about a file that is not UTF-8, from its first bytes."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "the file is UTF-16 (it starts with a UTF-16 byte-order mark): save it as UTF-8"
    if data.startswith(b"\x1f\x8b"):
        return "the file is gzip-compressed: decompress it first"
    return "save the file as UTF-8"


def read_jsonl(path: str | Path) -> list[tuple[int, dict]]:
    """Rows of a JSONL file as (line number, object); blank lines are skipped.

    Raises DataError for a missing file, a byte that is not UTF-8, malformed JSON,
    a key given twice in one object, a row that is not an object, or a missing /
    wrongly typed / empty field (checked for the three known files).
    """
    path = Path(path)
    return _parse(path.name, _read_bytes(path))


#: Fields that hold ids and labels: printed by the tool (search prints doc ids one per line), so a
#: control character or other unprintable character (a newline, a tab, U+202E) is refused at load.
_ID_FIELDS = ("doc_id", "query_id", "relevant_doc_ids", "group", "split")

_ONE_OBJECT_PER_LINE = "each line of a .jsonl file must be one whole JSON object (JSON Lines)"


def _format_hint(data: bytes, n: int, line: str) -> str:
    """Why a line is not JSON, when the whole file is in another format: a JSON array, an object
    spread over several lines (pretty-printed), or old Mac line ends (CR only)."""
    if b"\r" in data and b"\n" not in data.rstrip(b"\r\n"):
        return (f"; the file's lines end in CR only (old Mac line ends), so it reads as one line: "
                f"{_ONE_OBJECT_PER_LINE}, ended by LF or CRLF")
    first = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if first == b"[":
        return f"; the file looks like one JSON array: {_ONE_OBJECT_PER_LINE}, not a list of them"
    if line.lstrip().startswith("{") and line.rstrip().endswith(","):
        with contextlib.suppress(ValueError, RecursionError):
            json.loads(line.rstrip()[:-1])
            return (f"; the line is a whole JSON object followed by a comma (rows copied out of a JSON array?): "
                    f"remove the comma: {_ONE_OBJECT_PER_LINE}")
    if line.strip() in ("{", "}", "[", "]") or line.rstrip().endswith((",", "{", "[")):
        return f"; the object seems to be spread over several lines (pretty-printed): {_ONE_OBJECT_PER_LINE}"
    return f"; {_ONE_OBJECT_PER_LINE}"


def _parse(name: str, data: bytes) -> list[tuple[int, dict]]:
    """`read_jsonl` on a file's bytes; ``name`` is the file name (it selects the schema)."""
    schema = _SCHEMA.get(name)
    path = Path(name)
    rows = []
    for n, line in _lines(name, data):
        if not line.strip():
            continue
        try:
            row = json.loads(line, object_pairs_hook=_unique_keys, parse_int=_integer)
        except json.JSONDecodeError as err:
            raise DataError(path.name, n, f"malformed JSON ({err.msg} at column {err.colno})"
                            f"{_format_hint(data, n, line)}") from None
        except ValueError as err:
            raise DataError(path.name, n, str(err)) from None
        except RecursionError:
            raise DataError(path.name, n, "JSON nested too deeply") from None
        if not isinstance(row, dict):
            hint = _format_hint(data, n, line) if isinstance(row, list) else ""
            raise DataError(path.name, n, f"expected a JSON object, got {type(row).__name__}{hint}")
        for field, kind in (schema or {}).items():
            if field not in row:
                raise DataError(path.name, n, f"missing field {field!r}")
            value = row[field]
            if not isinstance(value, kind):
                raise DataError(path.name, n,
                                f"field {field!r} must be {kind.__name__}, got {type(value).__name__}")
            if kind is str and not value.strip():
                raise DataError(path.name, n, f"field {field!r} is empty")
            if kind is str and not _visible(value).strip():
                raise DataError(path.name, n, f"field {field!r} holds only invisible characters (zero-width "
                                "spaces, joiners, ...): it is empty")
            for text in (value if kind is list else [value]):
                if isinstance(text, str) and not _encodable(text):
                    raise DataError(path.name, n, f"field {field!r} holds an unpaired surrogate escape (like "
                                    "\\ud800): not a character")
                if field in _ID_FIELDS and isinstance(text, str) and not text.isprintable():
                    bad = next(c for c in text if not c.isprintable())
                    raise DataError(path.name, n, f"field {field!r} holds {text!r}, with the unprintable character "
                                    f"{bad!r}: ids and labels are printed, so they may not hold control characters "
                                    "(newline, tab, ...) or other invisible ones")
        if name == "corpus.jsonl" and "fields" in row:  # optional: what --where filters on
            problem = fields_problem(row["fields"])
            if problem is not None:
                raise DataError(path.name, n, problem)
        rows.append((n, row))
    return rows


def validate_rows(corpus: list[tuple[int, dict]], queries: list[tuple[int, dict]],
             pairs: list[tuple[int, dict]]) -> None:
    """Check the rules across the three files (rows as returned by `read_jsonl`).

    Rules: split values are train/val/test; ids are unique and a group stays in one split, both
    compared by `same_id` (Unicode NFC, surrounding spaces trimmed);
    every split has documents; val and test have queries; relevant_doc_ids is a
    non-empty list of distinct corpus ids from the query's own split; a training pair points at a
    train document of the same group with exactly its text; at least two distinct positives;
    no query or pair already carries an ``Instruct:`` prefix (it is added once, at encoding);
    the same text (case, spacing, invisible characters and Unicode normalisation ignored) is never
    in two splits, neither among documents nor among queries and training-pair queries.
    """
    docs: dict[str, dict] = {}
    doc_line: dict[str, tuple[int, str]] = {}  # doc_id as compared (`same_id`) -> (line, as written)
    group_split: dict[str, tuple[str, int]] = {}
    for n, row in corpus:
        _check_split_and_id("corpus.jsonl", n, row, "doc_id", doc_line)
        first = group_split.setdefault(same_id(row["group"]), (row["split"], n))
        if first[0] != row["split"]:
            raise DataError("corpus.jsonl", n, f"group {row['group']!r} spans splits: {first[0]!r} on line "
                            f"{first[1]} and {row['split']!r} here; keep a group in one split")
        docs[row["doc_id"]] = row
    mixed = kinds_problem(corpus)  # a field keeps one kind (string, number, list) across the corpus
    if mixed is not None:
        raise DataError("corpus.jsonl", *mixed)
    for split in SPLITS:
        if not any(d["split"] == split for d in docs.values()):
            raise DataError("corpus.jsonl", None, f"split {split!r} is empty: it has no documents")

    seen: dict[str, tuple[int, str]] = {}
    for n, row in queries:
        _check_split_and_id("queries.jsonl", n, row, "query_id", seen)
        rel = row["relevant_doc_ids"]
        if not rel or not all(isinstance(r, str) for r in rel):
            raise DataError("queries.jsonl", n, "relevant_doc_ids must be a non-empty list of doc_id strings")
        listed: set[str] = set()  # one pass, whatever the length of the list
        twice = next((r for r in rel if same_id(r) in listed or listed.add(same_id(r))), None)
        if twice is not None:
            raise DataError("queries.jsonl", n, f"relevant_doc_ids lists {twice!r} twice (Unicode normalisation "
                            "and surrounding spaces ignored); list each doc_id once")
        for doc_id in rel:
            if doc_id not in docs:
                raise DataError("queries.jsonl", n, f"relevant doc_id {doc_id!r} is not in corpus.jsonl"
                                f"{_written_otherwise(doc_id, doc_line)}")
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
            raise DataError("train_pairs.jsonl", n, f"doc_id {row['doc_id']!r} is not in corpus.jsonl"
                            f"{_written_otherwise(row['doc_id'], doc_line)}")
        if doc["split"] != "train":
            raise DataError("train_pairs.jsonl", n, f"doc_id {row['doc_id']!r} is a {doc['split']!r} document; "
                            "only train documents may be training positives")
        if row["positive"] != doc["text"]:
            raise DataError("train_pairs.jsonl", n, f"positive text differs from corpus.jsonl line "
                            f"{doc_line[same_id(row['doc_id'])][0]} for doc_id {row['doc_id']!r}")
        if row["group"] != doc["group"]:
            raise DataError("train_pairs.jsonl", n, f"group {row['group']!r} but document {row['doc_id']!r} "
                            f"belongs to group {doc['group']!r}")
    if len({row["doc_id"] for _, row in pairs}) < 2:
        raise DataError("train_pairs.jsonl", None, "fewer than two distinct positives: a contrastive batch needs "
                        "at least two different documents")
    _check_instructions(queries, pairs)
    _check_texts_stay_in_one_split(corpus, queries, pairs)


def _check_split_and_id(name: str, n: int, row: dict, id_field: str,
                        first_line: dict[str, tuple[int, str]]) -> None:
    """A row's split is one of SPLITS and its ``id_field`` is new, as compared by `same_id`; ``first_line``
    (id as compared -> (line, id as written)) records it."""
    if row["split"] not in SPLITS:
        raise DataError(name, n, f"split must be one of {SPLITS}, got {row['split']!r}")
    key = same_id(row[id_field])
    if key in first_line:
        line, written = first_line[key]
        how = "" if written == row[id_field] else (f", written {written!r} there: equal after Unicode normalisation "
                                                   "(NFC) and trimming spaces")
        raise DataError(name, n, f"duplicate {id_field} {row[id_field]!r} (first on line {line}{how})")
    first_line[key] = (n, row[id_field])


def _written_otherwise(doc_id: str, first_line: dict[str, tuple[int, str]]) -> str:
    """Why a doc_id that is not in the corpus may look as if it were: the corpus writes it otherwise."""
    written = first_line.get(same_id(doc_id), (None, None))[1]
    return "" if written is None else (f" (the corpus has {written!r}, equal only after Unicode normalisation and "
                                       "trimming spaces: write the id the same way in every file)")


def _check_instructions(queries: list[tuple[int, dict]], pairs: list[tuple[int, dict]]) -> None:
    for name, rows, field in (("queries.jsonl", queries, "text"), ("train_pairs.jsonl", pairs, "query")):
        for n, row in rows:
            if has_instruction(row[field]):
                raise DataError(name, n, f"field {field!r} already starts with 'Instruct:'; give the bare "
                                "question: the instruction is added once, when queries are encoded")


def _key(text: str) -> str:
    """The text compared across splits: Unicode NFC, invisible format characters (zero-width space,
    ...) dropped, runs of spaces collapsed, case folded."""
    return " ".join(_visible(unicodedata.normalize("NFC", text)).split()).casefold()


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
                                f"{seen[0]} line {seen[1]} (case, spacing, invisible characters and Unicode normalisation ignored): a text in two splits "
                                "leaks answers between them")


def load_dataset(folder: str | Path) -> RetrievalData:
    """Read and validate the three JSONL files of a data folder; the result carries the SHA-256 of
    the bytes read (`RetrievalData.sha256`)."""
    folder = machine.folder(folder, "data folder")
    raw = {name: _read_bytes(folder / name) for name in FILES}
    corpus, queries, pairs = (_parse(name, raw[name]) for name in FILES)
    for name, rows in zip(FILES, (corpus, queries, pairs)):
        if not rows:
            raise DataError(name, None, "the file has no rows (it is empty or blank): one JSON object per line")
    validate_rows(corpus, queries, pairs)
    return RetrievalData([r for _, r in corpus], [r for _, r in queries], [r for _, r in pairs],
                         {name: hashlib.sha256(data).hexdigest() for name, data in raw.items()})
