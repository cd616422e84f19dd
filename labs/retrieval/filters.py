"""Deterministic filters: a document that fails ``--where`` is never ranked, however similar it is.

In plain words: a corpus row may carry a ``fields`` object (product, access level, year, tags).
The run keeps them beside the vectors (``corpus_fields.json``, hashed in the index contract),
and a search with ``--where access=public`` first keeps only the documents whose fields pass,
then ranks those. The filter is applied before ranking, not after: a private document that is
the nearest neighbour of the query is not in the list being ranked, so it cannot appear, and
the top k are the best k among the documents that pass.

Fields
------
=================  ==========================================================================
value in a row     a condition ``KEY=VALUE`` holds when
=================  ==========================================================================
string             it equals VALUE exactly
number (int/float) it equals VALUE read as a number (``2024`` = ``2024.0``); a number field
                   also takes ``KEY<VALUE``, ``KEY<=VALUE``, ``KEY>VALUE``, ``KEY>=VALUE``
list of strings    it contains VALUE
(field missing)    never: a document without the field fails every condition on it
=================  ==========================================================================

Several conditions must all hold (AND). A key keeps one kind across the corpus (all strings,
all numbers or all lists); `fields_problem` (one row) and `kinds_problem` (across rows) refuse
anything else when the data is read, naming the file, line and field.

Shapes
------
==========  =====================  ===========================================
fields      list[dict] of length N  the corpus rows' ``fields`` (``{}`` if none)
conditions  list[Condition]         parsed ``--where`` items
mask        (N,) bool array         True where the document passes every one
==========  =====================  ===========================================

Relations: `labs.retrieval.data` calls the checks; `labs.retrieval.index.write_index` stores the
fields; `labs.retrieval.index.search` and `labs.retrieval.queries_file` rank ``scores[:, mask]``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["KINDS", "Condition", "field_kind", "fields_problem", "kinds_problem", "parse_where", "kinds_of",
           "passes", "where_mask"]

#: The kinds a field value may have, by name.
KINDS = ("string", "number", "list")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_CONDITION = re.compile(r"\s*([^<>=!\s]+)\s*(<=|>=|<|>|=)\s*(.*?)\s*")
_RANGES = ("<", "<=", ">", ">=")


def field_kind(value) -> str | None:
    """``"string"``, ``"number"`` or ``"list"`` for a value a field may hold; None for anything else
    (a bool, null, an object, a list holding a non-string, a number that is not finite)."""
    if isinstance(value, str):
        return "string"
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return "number"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "list"
    return None


def fields_problem(fields) -> str | None:
    """Why a row's ``fields`` value is not usable (one phrase naming the field), or None if it is."""
    if not isinstance(fields, dict):
        return f"field 'fields' must be an object of KEY: value, got {type(fields).__name__}"
    for key, value in fields.items():
        if not _KEY.fullmatch(key):
            return (f"field 'fields' has the key {key!r}: keys are letters, digits, '_', '.' and '-', "
                    "starting with a letter or '_'")
        if field_kind(value) is None:
            got = "a list holding a non-string" if isinstance(value, list) else type(value).__name__
            if isinstance(value, float):
                got = f"the number {value!r}"
            return f"field 'fields.{key}' must be a string, a finite number or a list of strings, got {got}"
    return None


def kinds_problem(rows: Sequence[tuple[int, dict]]) -> tuple[int, str] | None:
    """(line, message) for the first row whose field has another kind than the same key on an earlier
    row (rows as (line number, row)); None when every key keeps one kind."""
    first: dict[str, tuple[str, int]] = {}
    for n, row in rows:
        for key, value in (row.get("fields") or {}).items():
            kind = field_kind(value)
            seen = first.setdefault(key, (kind, n))
            if seen[0] != kind:
                return n, (f"field 'fields.{key}' is a {kind} here but a {seen[0]} on line {seen[1]}: a field "
                           "keeps one kind (string, number or list of strings) across the corpus")
    return None


@dataclass(frozen=True)
class Condition:
    """One ``--where`` item: ``key op value`` with op one of = < <= > >=; ``text`` as given."""

    key: str
    op: str
    value: str
    text: str


def parse_where(items: Sequence[str] | None, what: str = "--where") -> list[Condition]:
    """``["product=router", "year>=2024"]`` -> conditions; ValueError naming ``what`` for a malformed one."""
    conditions = []
    for item in items or ():
        match = _CONDITION.fullmatch(item) if isinstance(item, str) else None
        if match is None or not match.group(3) or not _KEY.fullmatch(match.group(1)):
            raise ValueError(f"{what} takes KEY=VALUE (or KEY<VALUE, KEY<=VALUE, KEY>VALUE, KEY>=VALUE for a number "
                             f"field), with KEY a field name, got {item!r}")
        conditions.append(Condition(match.group(1), match.group(2), match.group(3), item))
    return conditions


def kinds_of(fields: Sequence[dict]) -> dict[str, str]:
    """Each field key of the corpus -> its kind (the data checks made them one kind per key)."""
    kinds: dict[str, str] = {}
    for row in fields:
        for key, value in row.items():
            kinds.setdefault(key, field_kind(value))
    return kinds


def _checked(condition: Condition, kinds: dict[str, str], what: str) -> float | str:
    """The condition's value as its field compares it; ValueError for an unknown field or a wrong type."""
    if condition.key not in kinds:
        known = ", ".join(sorted(kinds)) or "none (the corpus rows carry no 'fields')"
        raise ValueError(f"{what} {condition.text!r}: the index has no field {condition.key!r}; its fields: {known}")
    kind = kinds[condition.key]
    if kind == "number":
        try:
            number = float(condition.value)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise ValueError(f"{what} {condition.text!r}: field {condition.key!r} holds numbers, and "
                             f"{condition.value!r} is not a finite number")
        return number
    if condition.op in _RANGES:
        raise ValueError(f"{what} {condition.text!r}: {condition.op} compares numbers, and field {condition.key!r} "
                         f"holds {'strings' if kind == 'string' else 'lists of strings'}; use {condition.key}=VALUE")
    return condition.value


def passes(row: dict, conditions: Sequence[Condition], kinds: dict[str, str], what: str = "--where") -> bool:
    """Whether one document's fields satisfy every condition (the readable rule; `where_mask` is its
    table form, tested equal)."""
    for c in conditions:
        want = _checked(c, kinds, what)
        if c.key not in row:
            return False
        have = row[c.key]
        if kinds[c.key] == "list":
            ok = want in have
        elif kinds[c.key] == "string":
            ok = have == want
        else:
            ok = {"=": have == want, "<": have < want, "<=": have <= want, ">": have > want,
                  ">=": have >= want}[c.op]
        if not ok:
            return False
    return True


def where_mask(fields: Sequence[dict], conditions: Sequence[Condition], what: str = "--where") -> "np.ndarray":
    """(N,) bool: True for each document whose fields satisfy every condition (all True without any).

    Every condition is checked against the corpus's field kinds first, so an unknown field or a
    value of the wrong type is refused even when no document would be compared with it."""
    import numpy as np  # here: the data checks above run before the command line imports numpy

    kinds = kinds_of(fields)
    mask = np.ones(len(fields), dtype=bool)
    for c in conditions:
        want = _checked(c, kinds, what)
        kind = kinds[c.key]
        if kind == "number":
            values = np.array([row.get(c.key, math.nan) for row in fields], dtype=float)
            with np.errstate(invalid="ignore"):
                hit = {"=": values == want, "<": values < want, "<=": values <= want, ">": values > want,
                       ">=": values >= want}[c.op]
        elif kind == "list":
            hit = np.array([want in row.get(c.key, ()) for row in fields], dtype=bool)
        else:
            hit = np.array([row.get(c.key) == want for row in fields], dtype=bool)
        mask &= hit
    return mask
