"""The package's one vocabulary of argument checks: a bad argument becomes one ValueError that names it.

In plain terms: every public function of `labs` checks what it is given once, at its edge, and
trusts it after that. The lessons (`labs.lessons`) and the tool (`labs.retrieval`) check with the
same words, written here once; neither wing imports the other's checks.

A check is called as ``check(value, name, ...options)`` and returns the value in the form the
code computes with (a float, an int, a float64 array, a list of strings), or raises ValueError
"{name} must be ..., got ...". `arguments` runs the checks of a function's arguments before its
body (``@arguments(tau=temperature, steps=partial(integer, minimum=0))``), so the body starts
with the idea; `require` states one rule between arguments in one line.

The words
---------
==================  ==========================================================================
numbers             `number` (real, in a range), `positive`, `temperature`, `integer`, `random_seed`,
                    `flag` (True or False), `choice`
tables              `table` (real numbers as float64), `finite_table`, `integer_table` (int64),
                    `tensor` (torch, its dtype, device and graph kept), `scaled_scores` (S / tau),
                    `padding_mask` (which tokens are real)
texts and lists     `text`, `texts`, `template`, `ids`, `items` (a list, not one string), `indices`
objects             `instance`, `function`, `generator`, `torch_generator`
unit rows           `unit_rows`: rows at length 1 whatever their size (NumPy or torch)
training            `still_finite`: a run whose weights or loss stopped being finite (is lr too large?)
==================  ==========================================================================

Booleans and strings are never numbers here, even where Python or NumPy would convert them. A
NumPy masked array is refused: NumPy would hand its masked entries over as numbers. A torch
tensor that requires grad is refused where the code computes with NumPy (its gradient would be
lost without a word); the message says to detach it, or names the torch form to train with.

Relations: the tool's machine-side rules (paths, folders, devices, attention kernels) are
`labs.retrieval.machine`; the readers of a reader's exercise answer are `labs.classroom.answers`.
"""

from __future__ import annotations

import functools
import inspect
import math
import sys
from collections.abc import Callable, Iterable, Mapping

__all__ = [
    "require", "arguments", "optional",
    "number", "positive", "temperature", "integer", "MOST", "random_seed", "flag", "choice",
    "table", "finite_table", "integer_table", "tensor", "scaled_scores", "padding_mask",
    "text", "texts", "template", "ids", "items", "indices",
    "instance", "function", "generator", "torch_generator",
    "unit_rows", "still_finite",
]

# ---------------------------------------------------------------------------
# Stating rules
# ---------------------------------------------------------------------------


def require(condition: object, message: str | Callable[[], str]) -> None:
    """Raise ValueError(message) unless ``condition`` holds: one rule between arguments, one line.

    ``message`` may be a function that returns it, for a message that can only be written once
    the rule has failed (it names the offending entry)."""
    if not condition:
        raise ValueError(message() if callable(message) else message)


def arguments(**rules: Callable[[object, str], object]) -> Callable:
    """Check a function's arguments before its body runs; the body gets what each check returns.

    Each rule is a check called as ``rule(value, name)`` on the bound argument (its default
    included), in the order given: ``@arguments(tau=temperature, seed=partial(integer, minimum=0))``.
    The wrapped function keeps its name, docstring and signature; ``fn.__wrapped__`` is the body
    without the checks (for code that has checked its arguments already), and ``fn.check(...)``
    checks arguments without running the body (it returns them, bound and checked).
    """

    def decorate(fn: Callable) -> Callable:
        signature = inspect.signature(fn)
        unknown = sorted(set(rules) - set(signature.parameters))
        if unknown:
            raise TypeError(f"{fn.__qualname__} has no argument {', '.join(unknown)} to check")

        def check(*args, **kwargs) -> inspect.BoundArguments:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            for name, rule in rules.items():
                bound.arguments[name] = rule(bound.arguments[name], name)
            return bound

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            bound = check(*args, **kwargs)
            return fn(*bound.args, **bound.kwargs)

        checked.check = check
        return checked

    return decorate


def optional(rule: Callable[[object, str], object]) -> Callable[[object, str], object]:
    """A rule that lets None through (an argument whose default means "not given") and checks the rest."""

    def check(value, name: str):
        return None if value is None else rule(value, name)

    return check


# ---------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------


def _repr(value, width: int = 60) -> str:
    """``repr(value)`` on one line, at most ``width`` characters (a table's repr spans lines)."""
    try:
        text = " ".join(repr(value).split())
    except Exception:  # noqa: BLE001 - an object whose repr fails is still named by its type
        text = f"a {type(value).__name__}"
    return text if len(text) <= width else text[:width - 3] + "..."


def _numpy():
    """NumPy if something imported it, else None. A value can be a NumPy object only once NumPy is
    imported, so the number, choice and text words never import it: the command line refuses a
    flag through them before NumPy (or torch) loads, and stays quick."""
    return sys.modules.get("numpy")


def _is_tensor(value) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "requires_grad")


def number(value, name: str, what: str = "a real number", *, low: float = -math.inf, high: float = math.inf,
           above: bool = False, below: bool = False, finite: bool = False, otherwise: str | None = None) -> float:
    """``float(value)``, or ValueError "{name} must be {what}, got ...".

    Refused: bools, strings, complex numbers and tensors that are not one real number (NumPy's
    and torch's too; a one-number tensor that requires grad is refused, its gradient would be
    lost), and an int beyond float64. With a range: a value below ``low`` (or at it, when
    ``above``), above ``high`` (or at it, when ``below``), NaN, and with ``finite`` an infinity;
    that refusal says ``otherwise`` when given (e.g. why the range is what it is).
    """
    if _is_tensor(value):
        import torch

        if value.numel() != 1 or value.dtype.is_complex or value.dtype == torch.bool:
            raise ValueError(f"{name} must be {what}, got a tensor of dtype {value.dtype} and shape "
                             f"{tuple(value.shape)}")
        if value.requires_grad:
            raise ValueError(f"{name} is a tensor that requires grad, but only its value is used here: no "
                             f"gradient would reach it. Pass float({name}) if a number is meant")
        value = value.cpu().item()
    np = _numpy()
    if isinstance(value, (bool, str, bytes, complex)) or (np and isinstance(value, (np.bool_, np.complexfloating))):
        raise ValueError(f"{name} must be {what}, got {_repr(value)}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {what}, got {_repr(value)}") from None
    except OverflowError:  # an int beyond float64's range (about 1.8e308)
        raise ValueError(f"{name} must be {what}, got {value!r:.20}..., too large for a float") from None
    ranged = low != -math.inf or high != math.inf or finite
    if ranged and not ((x > low if above else x >= low) and (x < high if below else x <= high)
                       and (math.isfinite(x) or not finite)):
        raise ValueError(f"{name} must be {otherwise or what}, got {value!r}")
    return x


def positive(value, name: str, what: str | None = None, *, maximum: float | None = None) -> float:
    """A finite number > 0 (and at most ``maximum``) as a float: a learning rate, a scale, a step size.

    The refusal says "{name} must be a finite number > 0[ and at most M], got ..." (``what``, if
    given, is said instead when the value is not a number at all)."""
    allowed = "a finite number > 0" + ("" if maximum is None else f" and at most {maximum:g}")
    return number(value, name, what or allowed, low=0.0, above=True, finite=True,
                  high=math.inf if maximum is None else maximum, otherwise=allowed)


def temperature(value, name: str = "tau", *, learned: bool = False):
    """A temperature: a finite number > 0, as a float.

    With ``learned``, a one-number tensor that requires grad (a learned temperature, as in CLIP)
    is checked by its value and returned as a 0-d tensor, so the scores divided by it carry its
    gradient."""
    if learned and _is_tensor(value) and value.requires_grad:
        positive(value.detach(), name, "a number > 0")
        return value.reshape(())
    return positive(value, name, "a number > 0")


#: The most steps, rows, dimensions or draws a lesson function takes: beyond it a call would run for
#: hours or ask for more memory than a laptop has, so it is refused at once (``maximum=MOST``).
MOST = 100_000


def integer(value, name: str, minimum: int | None = None, maximum: int | None = None, *,
            what: str | None = None) -> int:
    """``int(value)`` for a Python or NumPy integer (or a 0-d integer tensor) in [minimum, maximum], or
    ValueError naming ``name`` and the range: bools, floats (even 2.0), strings and other tensors are
    refused."""
    if what is None:
        what = "an integer" + ("" if minimum is None else f" >= {minimum}" if maximum is None
                               else f" from {minimum} to {maximum}")
    if _is_tensor(value) and value.ndim == 0 and not value.is_floating_point() and not value.is_complex() \
            and str(value.dtype) != "torch.bool":  # a 0-d integer tensor, as torch hands out a count
        value = int(value.item())
    np = _numpy()
    if np and isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu":  # np.asarray(3)
        value = int(value.item())
    ints = (int, np.integer) if np else int
    if isinstance(value, bool) or (np and isinstance(value, np.bool_)) or not isinstance(value, ints):
        raise ValueError(f"{name} must be {what}, got {_repr(value)}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return int(value)


def random_seed(value, name: str = "seed", *, bits: int = 64, user: str = "torch's seeds") -> int:
    """A random seed: an integer from 0 to 2**bits - 1 (what ``user`` accepts), as an int."""
    whole = integer(value, name, 0)
    require(whole < 2**bits, f"{name} must be an integer from 0 to 2**{bits} - 1 ({user}), got {whole}")
    return whole


def flag(value, name: str) -> bool:
    """``value`` as a bool if it is True or False (NumPy's too): a string such as "no" or a number
    would otherwise count as true or false without a word."""
    np = _numpy()
    if not isinstance(value, (bool, np.bool_) if np else bool):
        raise ValueError(f"{name} must be True or False, got {_repr(value)}")
    return bool(value)


def choice(value, name: str, allowed: tuple) -> object:
    """``value`` if it is one of ``allowed`` (a string is compared as a string only); else ValueError
    listing them."""
    if not any(isinstance(value, type(a)) and value == a for a in allowed):
        raise ValueError(f"{name} must be one of {', '.join(map(str, allowed))}; got {value!r}")
    return value


# ---------------------------------------------------------------------------
# Tables: NumPy arrays and torch tensors
# ---------------------------------------------------------------------------

#: The torch forms of the lessons' NumPy losses, named when a tensor that requires grad arrives.
TRAIN_WITH_INFONCE = "the _torch form (info_nce_torch, info_nce_masked_torch)"


def _shape(array, name: str, ndim: int | None, what: str | None, nonempty: bool = False) -> None:
    if (ndim is not None and array.ndim != ndim) or (nonempty and 0 in array.shape):
        raise ValueError(f"{name} must be {what or f'{ndim}-D'}, got shape {tuple(array.shape)}")


def table(value, name: str, *, train_with: str | None = TRAIN_WITH_INFONCE, ndim: int | None = None,
          what: str | None = None, nonempty: bool = False) -> np.ndarray:
    """``value`` as a float64 NumPy array (of ``ndim`` dimensions, if given), or ValueError naming ``name``.

    Refused: ragged nesting (rows of different lengths), complex numbers, booleans, text or other
    objects, a NumPy masked array, and a torch tensor that requires grad (NumPy cannot carry its
    gradient: detach it, or use ``train_with``, the torch form that autograd can follow, which the
    message names when given). Other tensors are read as their values (bfloat16 as float32). A
    wrong number of dimensions (or an empty table, with ``nonempty``) is refused as "{name} must
    be {what}, got shape ...".
    """
    import numpy as np
    if _is_tensor(value):
        import torch

        if value.requires_grad:
            raise ValueError(f"{name} is a torch tensor that requires grad: this function computes with NumPy, "
                             f"where autograd cannot follow. Pass {name}.detach() for the value"
                             + (f", or use {train_with} to train through it" if train_with else ""))
        if value.dtype.is_complex:
            raise ValueError(f"{name} holds complex numbers; give real numbers")
        if value.dtype == torch.bfloat16:  # NumPy has no bfloat16: read it as float32, exactly
            value = value.float()
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ma.MaskedArray):
        raise ValueError(f"{name} is a masked array: NumPy would use its masked entries as numbers. Pass only "
                         f"the entries to keep (or {name}.filled(value) to say what a masked entry counts as)")
    try:
        array = np.asarray(value)
    except ValueError:
        raise ValueError(f"{name} is ragged: its rows have different lengths") from None
    except (TypeError, RuntimeError) as err:  # e.g. a list of tensors that require grad
        raise ValueError(f"{name} cannot be read as a table of real numbers: {' '.join(str(err).split())}") from None
    if array.dtype.kind == "O":  # e.g. Fractions or numbers mixed with None: real numbers only
        numbers = []
        for x in array.ravel():
            try:
                numbers.append(number(x, name, "real numbers"))
            except ValueError:
                too_large = isinstance(x, int) and not isinstance(x, bool)  # other ints convert
                raise ValueError(f"{name} must hold real numbers, got {x!r:.40}"
                                 + (" (too large for a float)" if too_large else "")) from None
        array = np.asarray(numbers, dtype=np.float64).reshape(array.shape)
    if array.dtype.kind == "c":
        raise ValueError(f"{name} holds complex numbers; give real numbers")
    if array.dtype.kind not in "iuf":
        kind = {"b": "booleans", "U": "text", "S": "bytes"}.get(array.dtype.kind, f"dtype {array.dtype}")
        raise ValueError(f"{name} must hold real numbers, got {kind}")
    _shape(array, name, ndim, what, nonempty)
    return array.astype(np.float64)


def finite_table(value, name: str, *, train_with: str | None = None, ndim: int | None = None,
                 what: str | None = None, nonempty: bool = False) -> np.ndarray:
    """`table`, and ValueError "{name} contains NaN or infinite entries" if any entry is not finite."""
    import numpy as np
    array = table(value, name, train_with=train_with, ndim=ndim, what=what, nonempty=nonempty)
    require(np.all(np.isfinite(array)), f"{name} contains NaN or infinite entries")
    return array


def integer_table(value, name: str, *, ndim: int | None = None, what: str | None = None,
                  nonempty: bool = False) -> np.ndarray:
    """``value`` as an int64 NumPy array (labels, digits, indices), or ValueError naming ``name``.

    Refused: booleans, floats (even 3.0: a label read from a float column is a mistake worth
    hearing about), complex numbers, text, None, ragged nesting, a masked array, and integers
    beyond int64. Python, NumPy and torch integers are read as they are; an empty list is an
    empty array (unless ``nonempty``). A wrong number of dimensions (or an empty table, with
    ``nonempty``) is refused as "{name} must be {what}, got shape ...".
    """
    import numpy as np
    if _is_tensor(value):
        import torch

        if value.dtype.is_floating_point or value.dtype.is_complex or value.dtype == torch.bool:
            raise ValueError(f"{name} must hold integers, got a tensor of dtype {value.dtype}")
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ma.MaskedArray):
        raise ValueError(f"{name} is a masked array: NumPy would use its masked entries. Pass only the "
                         f"entries to keep")
    try:
        array = np.asarray(value)
    except ValueError:
        raise ValueError(f"{name} is ragged: its rows have different lengths") from None
    except (TypeError, RuntimeError) as err:
        raise ValueError(f"{name} cannot be read as integers: {' '.join(str(err).split())}") from None
    if array.size == 0:
        array = np.zeros(array.shape, dtype=np.int64)
    if array.dtype.kind == "O":  # e.g. Python ints too large for int64, or numbers mixed with None
        for x in array.ravel():
            if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
                raise ValueError(f"{name} must hold integers, got {x!r:.40}")
            if not -2**63 <= x < 2**63:
                raise ValueError(f"{name} must hold integers that fit int64, got {x!r:.40}")
        array = array.astype(np.int64)
    if array.dtype.kind == "u" and array.max() >= 2**63:
        raise ValueError(f"{name} must hold integers that fit int64, got {array.max()!r}")
    if array.dtype.kind not in "iu":
        kind = {"b": "booleans", "f": "floats (give whole numbers as integers)", "c": "complex numbers",
                "U": "text", "S": "bytes"}.get(array.dtype.kind, f"dtype {array.dtype}")
        raise ValueError(f"{name} must hold integers, got {kind}")
    _shape(array, name, ndim, what, nonempty)
    return array.astype(np.int64)


def tensor(value, name: str, *, ndim: int | None = None, what: str | None = None, nonempty: bool = False,
           finite: bool = False, floats: bool = False, directions: bool = False):
    """``value`` as a torch tensor of real numbers, for a function that computes with torch, or
    ValueError naming ``name``.

    A floating-point tensor is returned as it is: its dtype, device and autograd graph are kept
    (torch can follow a gradient). An integer tensor becomes float64; a boolean or complex tensor
    is refused. Anything else is read by `table` (so the same refusals) as a float64 tensor.
    With ``ndim`` a wrong number of dimensions is refused ("{name} must be {what}, got shape"),
    with ``nonempty`` a table with no entries, with ``finite`` a NaN or infinite entry. With
    ``floats`` only a floating-point tensor is taken, as it is: nothing else is converted. With
    ``directions`` a row of zeros (no direction to scale to length 1) is refused, by its number.
    """
    import torch

    if floats and not (isinstance(value, torch.Tensor) and value.is_floating_point()):
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
        kind = "complex numbers" if value.dtype.is_complex else f"dtype {value.dtype}"
        raise ValueError(f"{name} must hold floats, got {kind} (give a real floating-point tensor)")
    if _is_tensor(value):
        if value.dtype.is_complex:
            raise ValueError(f"{name} holds complex numbers; give real numbers")
        if value.dtype == torch.bool:
            raise ValueError(f"{name} must hold real numbers, got booleans")
        x = value if value.is_floating_point() else value.to(torch.float64)
    else:
        x = torch.from_numpy(table(value, name, train_with=None))
    _shape(x, name, ndim, what, nonempty)
    require(not finite or bool(torch.isfinite(x.detach()).all()), f"{name} contains NaN or infinite entries")
    zero = torch.nonzero(x.detach().abs().amax(dim=-1) == 0) if directions and x.numel() else ()
    require(not len(zero), lambda: f"{name} row {int(zero[0, 0])} is all zeros: it has no direction to normalise")
    return x


def scaled_scores(S, tau: float, name: str = "S") -> np.ndarray:
    """A (B, M) similarity table with M >= B, finite, divided by a temperature: S / tau as float64,
    or ValueError naming ``name`` (or ``tau`` when the division overflows)."""
    import numpy as np
    tau = temperature(tau)
    A = table(S, name, ndim=2, what="2-D (B queries x M documents)")
    B, M = A.shape
    require(B > 0, f"{name} has no rows: a batch needs at least one query")
    require(M >= B, f"{name} has {M} columns but {B} rows: every row i needs its positive in column i, so M >= B")
    require(np.all(np.isfinite(A)), f"{name} contains NaN or infinite entries")
    with np.errstate(over="ignore"):
        scaled = A / tau
    require(np.all(np.isfinite(scaled)), f"tau={tau!r} is too small for these scores: {name} / tau overflows")
    return scaled


def padding_mask(value, name: str, grid) -> "torch.Tensor":
    """A (B, T) attention mask for a (B, T, ...) ``grid``, as a bool tensor: a tensor on the grid's
    device holding only 0 (padding) and 1 (real token), with at least one real token per row."""
    import torch

    require(isinstance(value, torch.Tensor), f"{name} must be a torch.Tensor, got {type(value).__name__}")
    expected = tuple(grid.shape[:2])
    require(tuple(value.shape) == expected, f"{name} must have shape (batch, tokens) = {expected} to match "
            f"token_embeddings, got {tuple(value.shape)}")
    require(not value.dtype.is_complex, f"{name} must hold 0 and 1 (bools, integers or floats), got complex numbers")
    require(value.device == grid.device, f"{name} is on {value.device} but token_embeddings is on {grid.device}")
    require(bool(((value == 0) | (value == 1)).all()), f"{name} must contain only 0 (padding) and 1 (real token)")
    mask = value.bool()
    empty = (~mask.any(dim=1)).nonzero().flatten().tolist()
    require(not empty, f"{name} has no real token in row(s) {empty}: there is nothing to pool")
    return mask


# ---------------------------------------------------------------------------
# Texts and lists
# ---------------------------------------------------------------------------


def text(value, name: str) -> str:
    """``value`` if it is a string that is real text: a lone surrogate (a byte that was not UTF-8 in a
    command-line argument, or ``\\ud800`` in JSON) is refused, naming ``name``."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be text, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(f"{name} holds {value[err.start]!r} at character {err.start + 1}: bytes that are not UTF-8 "
                         "(or an unpaired surrogate); give it as UTF-8 text") from None
    return value


def items(value, name: str, what: str = "a list", *, ordered: bool = False, nonempty: bool = False,
          each: Callable | None = None) -> list:
    """``value`` as a list, or ValueError "{name} must be {what}, got ...": one string (which would be
    read letter by letter), a mapping, something that is not a collection, with ``ordered`` a set
    (it has no order), with ``nonempty`` an empty list. ``each``, if given, checks every entry
    (``each(entry)``, which names it) and the list holds what it returns."""
    unordered = ordered and isinstance(value, (set, frozenset))
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable) or unordered \
            or getattr(value, "ndim", 1) == 0:  # a 0-d tensor or array: one number, no entries
        raise ValueError(f"{name} must be {what}, got {_repr(value)}" + (" (a set has no order)" if unordered else ""))
    out = list(value)
    require(out or not nonempty, f"{name} must be {what}, got {_repr(value)}")
    return out if each is None else [each(v) for v in out]


def texts(value, name: str, what: str = "a list of strings", *, nonempty: bool = False) -> list[str]:
    """``value`` as a list of strings, or ValueError "{name} must be {what}, ...": one string (which
    would be read letter by letter), None, a mapping, or an entry that is not a string (named by its index);
    with ``nonempty``, an empty list ("{name} is empty: it must be {what}")."""
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be {what}, not one string; wrap it: [{value!r:.40}]")
    try:
        out = list(value) if not isinstance(value, Mapping) else None
    except TypeError:
        out = None
    if out is None:  # not a collection; a mapping would give its keys
        raise ValueError(f"{name} must be {what}, got {type(value).__name__}")
    bad = next((i for i, t in enumerate(out) if not isinstance(t, str)), None)
    require(bad is None, lambda: f"{name}[{bad}] must be a string, got {out[bad]!r:.40}")
    require(out or not nonempty, f"{name} is empty: it must be {what}")
    return out


def template(value: str, name: str, fields: str, **values) -> str:
    """``value.format(**values)``, or ValueError "{name} = ... is not a template with only {fields}:
    ..." naming what went wrong (an unknown field, a positional field, a lone brace)."""
    try:
        return value.format(**values)
    except (KeyError, IndexError, ValueError, AttributeError) as err:
        raise ValueError(f"{name} = {_repr(value)} is not a template with only {fields}: {type(err).__name__} "
                         f"{err}") from None


def indices(value, name: str, size: int, what: str | None = None, *, distinct: bool = True) -> list[int]:
    """``value`` as a non-empty list of integers from 0 to size - 1 (rows or columns of a table, each
    once when ``distinct``), or ValueError "{name} must be {what}, got ...": floats, bools and one
    string are not indices."""
    wrong = f"{name} must be {what or f'distinct indices (0..{size - 1})'}, got {_repr(value)}"
    try:
        out = [integer(i, name, 0, size - 1) for i in items(value, name)]
    except ValueError:
        raise ValueError(wrong) from None
    require(out and (len(set(out)) == len(out) or not distinct), wrong)
    return out


def ids(value, name: str) -> list[str]:
    """``value`` as a list of distinct strings, or ValueError naming ``name`` and the first offender
    (an integer id is refused, not converted: 1 and '1' would become one id)."""
    out = items(value, name, "a list of id strings", ordered=True)
    bad = next((v for v in out if not isinstance(v, str)), None)
    require(bad is None, f"{name} holds {bad!r} ({type(bad).__name__}): {name} must be id strings; convert them "
            "yourself, so that 1 and '1' cannot become one id")
    twice = next((v for i, v in enumerate(out) if v in out[:i]), None) if len(set(out)) < len(out) else None
    require(twice is None, f"{name} lists {twice!r} twice: ids must be unique")
    return out


# ---------------------------------------------------------------------------
# Objects
# ---------------------------------------------------------------------------


def instance(value, name: str, kind: type | tuple[type, ...], what: str) -> object:
    """``value`` if it is a ``kind``; else ValueError "{name} must be {what}, got {its type}"."""
    if not isinstance(value, kind):
        raise ValueError(f"{name} must be {what}, got {type(value).__name__}")
    return value


def function(value, name: str, what: str = "a function") -> Callable:
    """``value`` if it can be called; else ValueError "{name} must be {what}, got {its type}"."""
    if not callable(value):
        raise ValueError(f"{name} must be {what}, got {type(value).__name__}")
    return value


def generator(value, name: str = "rng") -> np.random.Generator:
    """A NumPy random Generator that the caller passes (so the caller sees every random draw)."""
    import numpy as np
    if not isinstance(value, np.random.Generator):
        raise ValueError(f"{name} must be a numpy Generator, such as np.random.default_rng(seed), got {_repr(value)}")
    return value


def torch_generator(value, name: str = "gen"):
    """A ``torch.Generator`` (None would draw from torch's global random state, unseen by the caller)."""
    import torch

    if not isinstance(value, torch.Generator):
        raise ValueError(f"{name} must be a torch.Generator, such as torch.Generator().manual_seed(seed), "
                         f"got {_repr(value)}")
    return value


# ---------------------------------------------------------------------------
# Unit rows: the one careful normaliser
# ---------------------------------------------------------------------------

_TINY_NUMPY = 1e-150  # below this a row's squares lose digits to underflow (float64's smallest normal: 2.2e-308)
_TINY_TORCH = 1e-10  # F.normalize clamps lengths below 1e-12: a row shorter than this goes the careful way


def unit_rows(x, name: str = "row", *, return_lengths: bool = False, why_zero: str | None = None,
              scaled: bool = False):
    """The rows of ``x`` (..., d) scaled to length 1, whatever their size: a NumPy array or a torch tensor.

    Where a row's length is comfortably representable this is the plain formula, bit for bit: ``x /
    |x|`` in NumPy (2-D), ``torch.nn.functional.normalize`` in torch (autograd follows it). A tiny
    row (1e-200, whose squares underflow, or which F.normalize would clamp) or a huge one (1e200,
    whose squared length overflows) is first divided by its largest entry, so it keeps its
    direction. A row of zeros has no direction and is refused, as is a row with NaN or an
    infinity: "{name} {i} is all zeros: ..." (``why_zero`` says it otherwise). With
    ``return_lengths`` (NumPy) the lengths (n, 1) come too, as the backward pass needs them.

    ``scaled`` (torch) divides every row by its largest entry first, the careful way for all
    rows: the lessons' torch InfoNCE has always computed so, and keeps its numbers that way (the
    two ways differ in the last bit of a float, not more).
    """
    import numpy as np
    if _is_tensor(x):
        return _unit_rows_torch(x, name, why_zero, scaled)
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))[:, None]
    if not norms.min(initial=1.0) > _TINY_NUMPY or not norms.max(initial=1.0) < np.inf:  # also catches NaN
        U, norms = _unit_rows_with_care(x, norms, name, why_zero)
    else:
        U = x / norms
    return (U, norms) if return_lengths else U


def _zero_row(name: str, row: int, why_zero: str | None) -> ValueError:
    return ValueError(f"{name} {row} " + (why_zero or "is all zeros: it has no direction to scale to length 1"))


def _unit_rows_with_care(A: np.ndarray, norms: np.ndarray, name: str, why_zero: str | None):
    """The rows whose squared length under- or overflowed (or that are not finite) get scaled first."""
    import numpy as np
    finite = np.all(np.isfinite(A), axis=1)
    if not finite.all():
        raise ValueError(f"{name} {int(np.flatnonzero(~finite)[0])} has an entry that is not a finite number "
                         "(NaN or infinite)")
    largest = np.abs(A).max(axis=1, initial=0.0)
    if not largest.min(initial=1.0) > 0:
        raise _zero_row(name, int(np.flatnonzero(~(largest > 0))[0]), why_zero)
    redo = ~((norms[:, 0] > _TINY_NUMPY) & (norms[:, 0] < np.inf))
    scaled = A[redo] / largest[redo, None]
    lengths = np.sqrt(np.einsum("ij,ij->i", scaled, scaled))[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):  # the rows to redo are replaced just below
        U, norms = A / norms, norms.copy()
    U[redo] = scaled / lengths
    with np.errstate(over="ignore"):
        norms[redo] = largest[redo, None] * lengths
    if not np.all(np.isfinite(norms)):
        raise ValueError(f"{name} {int(np.flatnonzero(~np.isfinite(norms[:, 0]))[0])} is longer than float64 can "
                         "hold (its length overflows)")
    return U, norms


def _unit_rows_torch(x, name: str, why_zero: str | None, scaled: bool):
    import torch
    import torch.nn.functional as F

    def refuse(bad) -> None:  # the first row (its index, or indices in a stack) that has no direction
        where = torch.nonzero(bad)[0].tolist()
        row = where[0] if len(where) == 1 else tuple(where)
        if not bool(torch.isfinite(largest[tuple(where)])):
            raise ValueError(f"{name} {row} has an entry that is not a finite number (NaN or infinite)")
        raise _zero_row(name, row, why_zero)

    if scaled:
        largest = x.abs().amax(dim=-1, keepdim=True)
        with torch.no_grad():
            bad = ~(torch.isfinite(largest) & (largest > 0))[..., 0]
        if bool(bad.any()):
            largest = largest.detach()[..., 0]
            refuse(bad)
        return F.normalize(x / largest, dim=-1)
    with torch.no_grad():
        norms = torch.linalg.vector_norm(x.detach(), dim=-1)
    risky = ~((norms > _TINY_TORCH) & torch.isfinite(norms))
    if not bool(risky.any()):
        return F.normalize(x, dim=-1)
    with torch.no_grad():
        largest = x.detach().abs().amax(dim=-1)
    bad = ~(torch.isfinite(largest) & (largest > 0))
    if bool(bad.any()):
        refuse(bad)
    plain = F.normalize(torch.where(risky[..., None], torch.ones_like(x), x), dim=-1)
    careful = F.normalize(x / x.abs().amax(dim=-1, keepdim=True), dim=-1)
    return torch.where(risky[..., None], careful, plain)


def still_finite(value, what: str, when: str, lr) -> None:
    """Refuse a training run whose ``value`` (a tensor) stopped being finite: "training diverged at
    {when}: {what} ... (is lr={lr!r} too large?)"."""
    import torch

    require(bool(torch.isfinite(value.detach()).all()),
            f"training diverged at {when}: {what} (is lr={lr!r} too large?)")
