"""A pytest plugin beside nbval: a cell's printed numbers compared within its declared tolerance.

Loaded for every pytest run from pyproject.toml (``-p tools.outputs.nbval_tolerance``). It replaces
nbval's ``IPyNbCell.compare_outputs`` by one that compares the numbers of a cell declaring a tolerance
by value and hands every other cell to nbval unchanged. Under ``--nbval`` it makes what ``make nbval``
passes the defaults: the sanitize file beside it and this environment's kernel.

The declaration, in the cell's metadata (``"nbval": {"atol": 0.03}``, ``rtol``, ``"integers": true``;
tests/README.md, "Writing a stable output"), is written by ``make spread SPREAD_ARGS=--declare``.

A declared cell's text (after nbval's sanitize patterns) is split into numbers (NUMBER; examples in
tests/tools/outputs/test_nbval_tolerance.py) and the words between them, which must be equal. Numbers are
compared as exact decimals; integers exactly, unless ``"integers": true``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from decimal import Decimal
from itertools import zip_longest
from pathlib import Path

from nbval.plugin import IPyNbCell, transform_streams_for_comparison

KEY = "nbval"  # the cell metadata key
TOLERANCE = {"type": "number", "minimum": 0, "maximum": 1e300}  # JSON: 0.03 means exactly Decimal("0.03")
DECLARATION = {"type": "object", "additionalProperties": False,
               "properties": {"atol": TOLERANCE, "rtol": TOLERANCE, "integers": {"type": "boolean"}},
               "anyOf": [{"required": [k], "properties": {k: {"exclusiveMinimum": 0}}} for k in ("atol", "rtol")]}
SANITIZE_FILE = Path(__file__).resolve().parent / "nbval_sanitize.cfg"

# An optional sign where it cannot be a hyphen or an operator; digits (thousands grouped by commas, or
# plain) with an optional fraction, or a bare fraction; an optional exponent. Not glued to a word or a
# dot before it; not followed by more digits, a dot and a digit (a version), or letters then digits.
NUMBER = re.compile(
    r"""
    (?:
        (?<![\w.)\]}])(?P<sign>[-+\u2212])
      | (?<![\w.])
    )
    (?P<mantissa>\d{1,3}(?:,\d{3})+(?:\.\d+)? | \d+(?:\.\d+)? | \.\d+)
    (?P<exponent>[eE][-+]?\d+)?
    (?!\.?\d)(?![^\W\d]+\d)
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class Number:
    raw: str        # as printed
    value: Decimal  # exact
    integer: bool   # no decimal point, no exponent
    start: int      # where it starts in the text

    @property
    def unit(self) -> Decimal:
        """One unit of its last printed digit: 0.01 for 2.45, 1e-4 for 1.5e-3, 1 for 1,797."""
        return Decimal(1).scaleb(self.value.as_tuple().exponent)


def split_numbers(text: str) -> tuple[list[str], list[Number]]:
    """The words between the numbers (one more than numbers) and the numbers."""
    words, numbers, last = [], [], 0
    for m in NUMBER.finditer(text):
        raw = m.group(0)
        integer = "." not in m.group("mantissa") and m.group("exponent") is None
        words.append(text[last:m.start()])
        numbers.append(Number(raw, Decimal(raw.replace(",", "").replace("\u2212", "-")), integer, m.start()))
        last = m.end()
    words.append(text[last:])
    return words, numbers


def line_at(text: str, at: int) -> str:
    """The line of `text` around position `at`."""
    end = text.find("\n", at)
    return text[text.rfind("\n", 0, at) + 1:end if end >= 0 else None]


def mismatch(stored: str, new: str) -> str | None:
    """The first line of `new` whose words (or count of numbers) differ from `stored`'s; None when only values
    differ. A number never spans a line."""
    if split_numbers(stored)[0] == split_numbers(new)[0]:
        return None
    i, s, n = next((i, s, n) for i, (s, n) in enumerate(zip_longest(stored.split("\n"), new.split("\n")), 1)
                   if s is None or n is None or split_numbers(s)[0] != split_numbers(n)[0])
    return f"the words changed, line {i}:\n      stored: {s!r}\n      new:    {n!r}"


class DeclarationError(ValueError):
    """A cell's tolerance declaration is malformed."""


@dataclass(frozen=True)
class Tolerance:
    atol: Decimal = Decimal(0)
    rtol: Decimal = Decimal(0)
    integers: bool = False

    def allowance(self, stored: Decimal) -> Decimal:
        return self.atol + self.rtol * abs(stored)

    def applies_to(self, number: Number) -> bool:
        return self.integers or not number.integer

    def __str__(self) -> str:
        parts = [f"{name} {value}" for name, value in (("atol", self.atol), ("rtol", self.rtol)) if value]
        return ", ".join(parts) + (", integers too" if self.integers else "")

    def as_metadata(self) -> dict:
        out = {name: float(value) for name, value in (("atol", self.atol), ("rtol", self.rtol)) if value}
        return {**out, "integers": True} if self.integers else out


def declaration(cell) -> Tolerance | None:
    """The tolerance a cell declares in its metadata, or None. Raises DeclarationError."""
    import jsonschema  # nbformat's own dependency

    declared = cell.get("metadata", {}).get(KEY)
    if declared is None:
        return None
    try:
        jsonschema.validate(declared, DECLARATION)
    except jsonschema.ValidationError as err:
        raise DeclarationError(f'metadata "{KEY}": {err.message} (declare, for example, {{"atol": 0.03}})') from None
    atol, rtol = (Decimal(repr(declared.get(k, 0))) for k in ("atol", "rtol"))
    tolerance = Tolerance(atol, rtol, declared.get("integers", False))
    if tolerance.atol.is_nan() or tolerance.rtol.is_nan():  # NaN passes the schema, and every comparison
        raise DeclarationError(f'metadata "{KEY}": atol and rtol must be numbers, got {declared!r}')
    return tolerance


def compare_text(stored: str, new: str, tolerance: Tolerance) -> list[str]:
    """Why `new` does not match `stored` under `tolerance`, one line per problem (empty: it matches)."""
    why = mismatch(stored, new)
    if why:
        return [why]
    problems = []
    for s, n in zip(split_numbers(stored)[1], split_numbers(new)[1]):
        if s.raw == n.raw:
            continue
        lineno = stored.count("\n", 0, s.start) + 1
        at = f"line {lineno} {line_at(stored, s.start).strip()!r}"
        if not tolerance.applies_to(s):
            problems.append(f"{at}: stored integer {s.raw}, new {n.raw}: integers are compared exactly "
                            f"(declare \"integers\": true to compare them within the tolerance)")
        elif abs(n.value - s.value) > tolerance.allowance(s.value):
            problems.append(f"{at}: stored {s.raw}, new {n.raw}: off by {abs(n.value - s.value)}, "
                            f"tolerance {tolerance.allowance(s.value)} ({tolerance})")
    return problems


# ---- the link to nbval -------------------------------------------------------------------

def text_view(item, outputs, skip_compare=None) -> dict[str, list]:
    """Outputs as nbval compares them: by key (stdout, text/plain, ...), sanitized, in order."""
    skip = skip_compare or item.parent.skip_compare
    view: dict[str, list] = {}
    for output in transform_streams_for_comparison(outputs):
        for key, value in output.items():
            if key in skip:
                continue
            if key == "data":
                for mime, data in value.items():
                    if mime not in skip:
                        view.setdefault(mime, []).append(item.sanitize(data))
            else:
                view.setdefault(key, []).append(item.sanitize(value))
    return view


def output_pairs(stored: dict, new: dict) -> list[tuple[str, int, object, object]] | None:
    """(key, index, stored, new) for each output of each key; None if the kinds or counts of outputs differ."""
    if set(stored) != set(new) or any(len(stored[k]) != len(new[k]) for k in stored):
        return None
    return [(key, i, s, n) for key in sorted(stored) for i, (s, n) in enumerate(zip(stored[key], new[key]))]


_nbval_compare = IPyNbCell.compare_outputs


def compare_outputs(self, test, ref, skip_compare=None):
    """nbval's IPyNbCell.compare_outputs, with numbers compared within a declared tolerance."""
    stored, new = text_view(self, ref, skip_compare), text_view(self, test, skip_compare)
    self.nbval_text_view = {"stored": stored, "new": new}  # what `make spread` records
    path = Path(os.path.relpath(self.fspath, self.config.rootdir)).as_posix()
    at = f"{path}, cell {self.cell_num} (id {self.cell.get('id')})"  # nbval counts code cells from 0
    try:
        tolerance = declaration(self.cell)
    except DeclarationError as err:
        raise DeclarationError(f"{at}: {err}") from None
    pairs = output_pairs(stored, new)
    if tolerance is None or pairs is None:  # undeclared, or outputs missing or added: nbval compares and reports
        return _nbval_compare(self, test, ref, skip_compare)
    problems = []
    for key, i, s, n in pairs:
        if isinstance(s, str) and isinstance(n, str):
            problems += [f"  {key}, output {i + 1}: {p}" for p in compare_text(s, n, tolerance)]
        elif s != n:  # not text (JSON): nbval compares and reports
            return _nbval_compare(self, test, ref, skip_compare)
    self.comparison_traceback = [f"{at}: outside its declared tolerance ({tolerance}):", *problems]
    return not problems


def pytest_configure(config):
    IPyNbCell.compare_outputs = compare_outputs
    option = config.option
    if getattr(option, "nbval", False) or getattr(option, "nbval_lax", False):
        if option.nbval_sanitize_with is None and not getattr(option, "sanitize_with", None):
            option.nbval_sanitize_with = str(SANITIZE_FILE)
        if not option.nbval_kernel_name and not getattr(option, "current_env", False):
            option.nbval_current_env = True
