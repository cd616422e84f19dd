"""A pytest plugin beside nbval: a cell's printed numbers compared within its declared tolerance.

Loaded for every pytest run from the project's settings (pyproject.toml, ``addopts = "-p
tools.outputs.nbval_tolerance"``), so ``python -m pytest --nbval notebooks/`` from the
repository root compares exactly as ``make test`` does. nbval stays the runner; this plugin
replaces nbval's ``IPyNbCell.compare_outputs`` by one that, for a cell declaring a tolerance,
compares numbers by value. Every other cell goes to nbval's own comparison, unchanged. Under
``--nbval`` it also makes what ``make nbval`` passes the defaults: the sanitize file beside it
(``--nbval-sanitize-with``) and this environment's kernel (``--nbval-current-env``).

The declaration, in the cell's metadata (tests/README.md, "Writing a stable output")::

    "nbval": {"atol": 0.03}                    |new - stored| <= 0.03
    "nbval": {"rtol": 0.002}                   |new - stored| <= 0.002 * |stored|
    "nbval": {"atol": 0.01, "rtol": 0.001}     |new - stored| <= atol + rtol * |stored|
    "nbval": {"atol": 0.3, "integers": true}   integers are compared within it too

Written by ``make spread SPREAD_ARGS=--declare`` from a measured spread, not by hand.

How a declared cell is compared, output by output (nbval's sanitize patterns apply first):

- The text is split into numbers and the words between them. The words (everything that is not
  a number, spaces and punctuation included) must be equal, and so must the count of numbers.
- A number with a decimal point or an exponent (``0.03``, ``-0.5``, ``+0.2``, ``1e-3``,
  ``2.5E+04``, the ``95.3`` of ``95.3%``) must lie within the tolerance of the stored one,
  compared as exact decimals (``0.02`` and ``0.03`` differ by exactly ``0.01``). A sign is part
  of the number, so ``-0.00`` equals ``0.00`` and ``0.01`` against ``-0.01`` is a move of 0.02.
- An integer (``400``, ``1,797``, the ``95`` of ``95%``) must be printed exactly as stored,
  unless the cell declares ``"integers": true``; then it is compared within the tolerance too.
- Not numbers (they are words, compared exactly): digits glued to a letter or underscore before
  them (``x2``, ``Qwen3``, ``float32``, ``step_400``), dotted versions (``2.13.0``), digits
  followed by letters and more digits (``3fa9c0``). A number may be followed by letters, a
  unit (``0.6B``, ``384d``, ``3x``). ``d=384`` and ``[0.1, 0.2]`` hold numbers. ``1,797`` is
  one number (commas group thousands: 1 to 3 digits, then groups of exactly 3); ``1, 797`` is
  two. A minus after a letter, digit, dot or closing bracket is a hyphen or an operator
  (``Qwen3-Embedding-0.6B``, ``2026-12-01``, ``a-b``), not a sign.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

KEY = "nbval"  # the cell metadata key
ALLOWED = {"atol", "rtol", "integers"}
SANITIZE_FILE = Path(__file__).resolve().parent / "nbval_sanitize.cfg"

# A number: an optional sign where it cannot be a hyphen or an operator, digits (thousands
# grouped by commas, or plain) with an optional fraction, or a bare fraction; an optional
# exponent. Not glued to a letter, digit, underscore or dot before it; not followed by more
# digits, by a dot and a digit (a version), or by letters that run on into digits (a digest).
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
        plain = raw.replace(",", "").replace("\u2212", "-")
        integer = "." not in m.group("mantissa") and m.group("exponent") is None
        words.append(text[last:m.start()])
        numbers.append(Number(raw, Decimal(plain), integer, m.start()))
        last = m.end()
    words.append(text[last:])
    return words, numbers


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
        out: dict = {}
        if self.atol:
            out["atol"] = float(self.atol)
        if self.rtol:
            out["rtol"] = float(self.rtol)
        if self.integers:
            out["integers"] = True
        return out


def _decimal(value) -> Decimal:
    """A tolerance read from JSON: 0.03 means exactly 0.03."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidOperation
    number = Decimal(repr(value))
    if not number.is_finite() or number < 0:
        raise InvalidOperation
    return number


def declaration(cell) -> Tolerance | None:
    """The tolerance a cell declares in its metadata, or None. Raises DeclarationError."""
    declared = cell.get("metadata", {}).get(KEY)
    if declared is None:
        return None
    if not isinstance(declared, dict):
        raise DeclarationError(f'metadata "{KEY}" must be an object like {{"atol": 0.03}}, got {declared!r}')
    unknown = set(declared) - ALLOWED
    if unknown:
        raise DeclarationError(f'metadata "{KEY}" has unknown keys {sorted(unknown)}; allowed: {sorted(ALLOWED)}')
    try:
        atol = _decimal(declared.get("atol", 0))
        rtol = _decimal(declared.get("rtol", 0))
    except InvalidOperation:
        raise DeclarationError(f'metadata "{KEY}": atol and rtol must be non-negative numbers, got {declared!r}') from None
    integers = declared.get("integers", False)
    if not isinstance(integers, bool):
        raise DeclarationError(f'metadata "{KEY}": integers must be true or false, got {integers!r}')
    if not atol and not rtol:
        raise DeclarationError(f'metadata "{KEY}" declares no tolerance (atol or rtol above 0): {declared!r}')
    return Tolerance(atol, rtol, integers)


def _line(text: str, at: int) -> tuple[int, str]:
    """The 1-based line number and the line of text around position `at`."""
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return text.count("\n", 0, at) + 1, text[start:end if end >= 0 else len(text)]


def compare_text(stored: str, new: str, tolerance: Tolerance) -> list[str]:
    """Why `new` does not match `stored` under `tolerance`, one line per problem (empty: it matches)."""
    if stored == new:
        return []
    stored_words, stored_numbers = split_numbers(stored)
    new_words, new_numbers = split_numbers(new)
    stored_lines, new_lines = stored.split("\n"), new.split("\n")
    if len(stored_numbers) != len(new_numbers) or stored_words != new_words:
        what = (f"the count of numbers changed: {len(stored_numbers)} stored, {len(new_numbers)} new"
                if len(stored_numbers) != len(new_numbers) else "the words changed")
        if len(stored_lines) != len(new_lines):
            return [f"{what}; {len(stored_lines)} lines stored, {len(new_lines)} new"]
        for i, (s, n) in enumerate(zip(stored_lines, new_lines), 1):
            s_words, s_numbers = split_numbers(s)
            n_words, n_numbers = split_numbers(n)
            if s_words != n_words or len(s_numbers) != len(n_numbers):
                return [f"{what}, line {i}:\n      stored: {s!r}\n      new:    {n!r}"]
        return [what]
    problems = []
    for s, n in zip(stored_numbers, new_numbers):
        if s.raw == n.raw:
            continue
        lineno, line = _line(stored, s.start)
        if not tolerance.applies_to(s):
            problems.append(f"line {lineno} {line.strip()!r}: stored integer {s.raw}, new {n.raw}: "
                            f"integers are compared exactly (declare \"integers\": true to compare them "
                            f"within the tolerance)")
            continue
        off = abs(n.value - s.value)
        allowed = tolerance.allowance(s.value)
        if off > allowed:
            problems.append(f"line {lineno} {line.strip()!r}: stored {s.raw}, new {n.raw}: off by {off}, "
                            f"tolerance {allowed} ({tolerance})")
    return problems


# ---- the link to nbval -------------------------------------------------------------------

def text_view(item, outputs, skip_compare=None) -> dict[str, list]:
    """Outputs as nbval compares them: by key (stdout, text/plain, ...), sanitized, in order."""
    from nbval.plugin import transform_streams_for_comparison

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


def where(item) -> str:
    """`notebooks/x.ipynb, cell 7 (id c012)`: nbval's cell number counts code cells from 0."""
    try:
        path = Path(str(item.fspath)).resolve().relative_to(Path(str(item.config.rootdir)).resolve())
    except ValueError:
        path = Path(str(item.fspath))
    cell_id = item.cell.get("id")
    return f"{path.as_posix()}, cell {item.cell_num}" + (f" (id {cell_id})" if cell_id else "")


_nbval_compare = None


def compare_outputs(self, test, ref, skip_compare=None):
    """nbval's IPyNbCell.compare_outputs, with numbers compared within a declared tolerance."""
    stored, new = text_view(self, ref, skip_compare), text_view(self, test, skip_compare)
    self.nbval_text_view = {"stored": stored, "new": new}  # what the spread measurement records
    try:
        tolerance = declaration(self.cell)
    except DeclarationError as err:
        raise DeclarationError(f"{where(self)}: {err}") from None
    if tolerance is None or set(stored) != set(new) or any(len(stored[k]) != len(new[k]) for k in stored):
        # Undeclared, or outputs missing or added: nbval compares and reports.
        return _nbval_compare(self, test, ref, skip_compare)
    self.comparison_traceback = []
    problems = []
    for key in stored:
        for i, (s, n) in enumerate(zip(stored[key], new[key])):
            if isinstance(s, str) and isinstance(n, str):
                problems += [f"  {key}, output {i + 1}: {p}" for p in compare_text(s, n, tolerance)]
            elif s != n:
                self.format_output_compare(key, s, n)
                return False
    if problems:
        self.comparison_traceback.append(f"{where(self)}: outside its declared tolerance ({tolerance}):")
        self.comparison_traceback.extend(problems)
        return False
    return True


def pytest_configure(config):
    global _nbval_compare
    try:
        from nbval.plugin import IPyNbCell
    except ImportError:  # no nbval: nothing to wrap
        return
    if _nbval_compare is None:
        _nbval_compare = IPyNbCell.compare_outputs
        IPyNbCell.compare_outputs = compare_outputs
    option = config.option
    if getattr(option, "nbval", False) or getattr(option, "nbval_lax", False):
        # What `make test` passes, the defaults of a plain `pytest --nbval` here.
        if option.nbval_sanitize_with is None and not getattr(option, "sanitize_with", None):
            option.nbval_sanitize_with = str(SANITIZE_FILE)
        if not option.nbval_kernel_name and not getattr(option, "current_env", False):
            option.nbval_current_env = True


def pytest_unconfigure(config):
    global _nbval_compare
    if _nbval_compare is not None:
        from nbval.plugin import IPyNbCell

        IPyNbCell.compare_outputs = _nbval_compare
        _nbval_compare = None


# ---- what the spread measurement keys on ----------------------------------------------------

def cell_fingerprint(cell) -> str:
    """A digest of a code cell's source and stored text outputs (images and metadata left out):
    the measured spread of a cell holds while this holds."""
    def joined(value):  # nbformat's JSON may split a text into a list of lines
        return "".join(value) if isinstance(value, list) else value

    texts = []
    for output in cell.get("outputs", []):
        entry = {k: joined(output[k]) for k in ("output_type", "name", "text", "ename", "evalue") if k in output}
        data = output.get("data", {})
        entry["data"] = {m: joined(data[m]) for m in sorted(data) if m.startswith("text/")}
        texts.append(entry)
    blob = json.dumps({"source": joined(cell.get("source", "")), "outputs": texts}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def pytest_report_header(config):
    if getattr(config.option, "nbval", False):
        return f'nbval: numbers compared within a cell\'s declared tolerance (metadata "{KEY}"), {Path(__file__).name}'
    return None
