"""labs.checks, the package's one vocabulary of argument checks: each word for the classes of input
the lessons and the tool meet, `arguments` and `require`, and the careful `unit_rows`."""

from __future__ import annotations

import ast
import inspect
import math
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from labs.checks import (
    arguments, choice, finite_table, flag, ids, indices, integer, integer_table, items, number,
    optional, positive, random_seed, require, scaled_scores, table, temperature, template, tensor, text, texts,
    unit_rows,
)

# ---- numbers -------------------------------------------------------------------------------


def test_integers_beyond_float64_are_named_not_an_overflow_error():
    with pytest.raises(ValueError, match=r"x must hold real numbers, got 1000.* \(too large for a float\)"):
        table([10**400, 0], "x")
    with pytest.raises(ValueError, match="tau must be a number, got 1000.*too large for a float"):
        number(10**400, "tau", "a number")


@pytest.mark.parametrize("value", [True, np.bool_(False), "0.5", 0.5j, None, torch.ones(2),
                                   torch.tensor(0.5, requires_grad=True)])
def test_a_number_is_one_real_number(value):
    with pytest.raises(ValueError, match="x must be a real number|x is a tensor that requires grad"):
        number(value, "x")
    assert number(np.float32(0.5), "x") == 0.5 and number(torch.tensor(0.25), "x") == 0.25


def test_a_range_refuses_its_ends_and_nan_and_says_otherwise():
    rate = partial(number, what="a number from 0 to 0.5", low=0.0, high=0.5, otherwise="from 0 to 0.5 (why)")
    assert rate(0.5, "rate") == 0.5 and rate(0, "rate") == 0.0
    for bad in (0.6, -0.1, float("nan")):
        with pytest.raises(ValueError, match=r"rate must be from 0 to 0.5 \(why\), got"):
            rate(bad, "rate")
    with pytest.raises(ValueError, match="rate must be a number from 0 to 0.5, got 'x'"):
        rate("x", "rate")
    open_ends = partial(number, low=0.0, above=True, high=1.0, below=True)
    for bad in (0.0, 1.0):
        with pytest.raises(ValueError):
            open_ends(bad, "p")
    assert number(math.inf, "m", low=0.0) == math.inf  # finite only when asked


def test_positive_and_temperature_say_what_the_range_is():
    assert positive(2, "lr") == 2.0 and temperature(np.float64(0.05)) == 0.05
    with pytest.raises(ValueError, match="lr must be a finite number > 0, got 0"):
        positive(0, "lr")
    with pytest.raises(ValueError, match=r"--scale must be a finite number > 0 and at most 1000, got 1e\+300"):
        positive(1e300, "--scale", maximum=1000)
    with pytest.raises(ValueError, match="tau must be a number > 0, got '0.1'"):
        temperature("0.1")
    with pytest.raises(ValueError, match="tau must be a finite number > 0, got inf"):
        temperature(math.inf)


def test_a_learned_temperature_keeps_its_gradient_and_a_plain_one_is_refused_with_grad():
    tau = torch.tensor([0.5], requires_grad=True)
    divisor = temperature(tau, learned=True)
    assert divisor.shape == () and divisor.requires_grad
    with pytest.raises(ValueError, match="tau is a tensor that requires grad"):
        temperature(tau)
    with pytest.raises(ValueError, match="tau must be a finite number > 0"):
        temperature(torch.tensor(-1.0, requires_grad=True), learned=True)


@pytest.mark.parametrize("value", [True, np.bool_(False), 2.0, "3", None, np.float64(1.0), torch.tensor(2.0),
                                   torch.tensor(True), torch.tensor([2])])
def test_integer_takes_integers_only(value):
    with pytest.raises(ValueError, match="steps must be an integer"):
        integer(value, "steps")


@pytest.mark.parametrize("value", [2, np.int64(2), np.uint8(2), torch.tensor(2), torch.tensor(2, dtype=torch.int8)])
def test_integer_takes_a_0d_integer_tensor_as_a_reader_passes_it(value):
    assert integer(value, "steps", 1) == 2 and type(integer(value, "steps", 1)) is int


def test_integer_takes_numpy_integers_and_checks_its_range():
    assert integer(np.int64(4), "n", 2) == 4 and type(integer(np.int32(4), "n")) is int
    with pytest.raises(ValueError, match="n must be an integer >= 2, got 1"):
        integer(1, "n", 2)
    with pytest.raises(ValueError, match="k must be an integer from 1 to 5, got 6"):
        integer(6, "k", 1, 5)
    with pytest.raises(ValueError, match="micro must be a divisor, got 3"):
        integer(3, "micro", 4, what="a divisor")


def test_a_random_seed_fits_its_generator():
    assert random_seed(2**64 - 1) == 2**64 - 1
    with pytest.raises(ValueError, match=r"seed must be an integer from 0 to 2\*\*32 - 1 \(scikit-learn's"):
        random_seed(2**32, bits=32, user="scikit-learn's random_state")
    with pytest.raises(ValueError, match="seed must be an integer >= 0, got -1"):
        random_seed(-1)


@pytest.mark.parametrize("value", ["no", "False", 0, 1, None, np.array([True])])
def test_flag_refuses_what_would_count_as_true_or_false_silently(value):
    with pytest.raises(ValueError, match="negatives must be True or False"):
        flag(value, "negatives")
    assert flag(np.bool_(True), "negatives") is True


def test_choice_compares_within_the_kind_of_its_choices():
    assert choice("sgd", "optimizer", ("sgd", "adamw")) == "sgd"
    for bad in (["sgd"], None, "SGD", 1):
        with pytest.raises(ValueError, match="optimizer must be one of sgd, adamw; got"):
            choice(bad, "optimizer", ("sgd", "adamw"))


# ---- tables --------------------------------------------------------------------------------


def test_a_masked_array_is_refused_rather_than_read_with_its_masked_entries():
    masked = np.ma.masked_array([0.5, 9.0, 0.1], mask=[0, 1, 0])
    with pytest.raises(ValueError, match=r"scores is a masked array: NumPy would use its masked entries"):
        table(masked, "scores")
    np.testing.assert_array_equal(table(masked.compressed(), "scores"), [0.5, 0.1])


def test_bfloat16_and_float16_are_read_exactly():
    values = [0.5, 0.25, -3.0]
    assert table(torch.tensor(values, dtype=torch.bfloat16), "x").tolist() == values
    assert table(np.array(values, dtype=np.float16), "x").tolist() == values


def test_the_entry_that_is_not_a_number_is_the_one_named():
    with pytest.raises(ValueError, match="x must hold real numbers, got None"):
        table([1.0, None], "x")


def test_requires_grad_message_names_the_torch_form_only_where_one_exists():
    t = torch.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match=r"Pass a.detach\(\) for the value$"):
        table(t, "a", train_with=None)
    with pytest.raises(ValueError, match="or use info_nce_torch to train through it"):
        table(t, "a", train_with="info_nce_torch")


def test_finite_table_refuses_nan_and_inf_by_name_and_a_shape_by_what_it_should_be():
    for bad in ([1.0, np.nan], [np.inf, 0.0], [-np.inf]):
        with pytest.raises(ValueError, match="w contains NaN or infinite entries"):
            finite_table(bad, "w")
    with pytest.raises(ValueError, match=r"A must be 2-D \(rows x dim\), got shape \(3,\)"):
        finite_table([1.0, 2.0, 3.0], "A", ndim=2, what="2-D (rows x dim)")
    with pytest.raises(ValueError, match="y must be a non-empty row, got shape"):
        finite_table([], "y", ndim=1, what="a non-empty row", nonempty=True)


@pytest.mark.parametrize("value, message", [
    ([0.0, 1.0], "got floats"), (np.array([3.0]), "got floats"), (torch.tensor([1.0]), "got a tensor of dtype torch.float32"),
    ([True, False], "got booleans"), (torch.tensor([True]), "dtype torch.bool"), (["1", "2"], "got text"),
    ("12", "got text"), ([1j], "complex numbers"), (None, "got None"), ([1, None], "got None"),
    ([[1, 2], [3]], "is ragged"), (np.ma.masked_array([1, 2], mask=[0, 1]), "is a masked array"),
    ([2**70], "fit int64"), (np.array([2**64 - 1], dtype=np.uint64), "fit int64"),
], ids=["floats", "float-array", "float-tensor", "bools", "bool-tensor", "strings", "one-string", "complex", "none",
        "none-entry", "ragged", "masked", "huge", "uint64"])
def test_integer_table_takes_integers_only(value, message):
    with pytest.raises(ValueError, match=f"labels .*{message}|labels {message}"):
        integer_table(value, "labels")


def test_integer_table_reads_python_numpy_and_torch_integers():
    for value in ([3, 1, 3], np.array([3, 1, 3], dtype=np.int32), torch.tensor([3, 1, 3]), (np.int64(3), 1, 3)):
        got = integer_table(value, "y")
        assert got.dtype == np.int64 and got.tolist() == [3, 1, 3]
    assert integer_table([], "y").shape == (0,)


def test_tensor_keeps_a_float_tensor_and_reads_the_rest():
    t = torch.ones(2, 3, dtype=torch.float16, requires_grad=True)
    assert tensor(t, "v") is t  # dtype and autograd graph kept
    assert tensor(torch.tensor([1, 2]), "v").dtype == torch.float64
    assert tensor([[1.0, 2.0]], "v").dtype == torch.float64
    for value, message in ((torch.ones(2, dtype=torch.complex64), "v holds complex numbers"),
                           (torch.tensor([True]), "v must hold real numbers, got booleans"),
                           (["a"], "v must hold real numbers, got text"), ([[1.0], [1.0, 2.0]], "v is ragged")):
        with pytest.raises(ValueError, match=message):
            tensor(value, "v")


def test_tensor_with_floats_converts_nothing_and_names_rows_without_a_direction():
    for value, message in (([[1.0]], "q must be a torch.Tensor, got list"),
                           (torch.ones(2, dtype=torch.long), r"q must hold floats, got dtype torch.int64 \(give a real "
                                                             "floating-point tensor\\)"),
                           (torch.ones(2, dtype=torch.complex64), "q must hold floats, got complex numbers")):
        with pytest.raises(ValueError, match=message):
            tensor(value, "q", floats=True)
    with pytest.raises(ValueError, match="q row 1 is all zeros: it has no direction to normalise"):
        tensor(torch.tensor([[1.0, 0.0], [0.0, 0.0]]), "q", directions=True)
    with pytest.raises(ValueError, match="q contains NaN or infinite entries"):
        tensor(torch.tensor([[1.0, np.nan]]), "q", finite=True)


def test_scaled_scores_are_the_table_over_tau_or_a_named_refusal():
    np.testing.assert_array_equal(scaled_scores([[0.8, 0.3]], 0.5), np.array([[0.8, 0.3]]) / 0.5)
    for S, message in (([[0.8, 0.3], [0.1, 0.2], [0.0, 0.1]], "M >= B"), (np.zeros((0, 2)), "no rows"),
                       ([0.8], "must be 2-D"), ([[np.nan]], "NaN")):
        with pytest.raises(ValueError, match=message):
            scaled_scores(S, 0.5)
    with pytest.raises(ValueError, match=r"tau=1e-310 is too small for these scores: S / tau overflows"):
        scaled_scores([[1.0]], 1e-310)


# ---- texts and lists -----------------------------------------------------------------------


def test_texts_refuse_one_string_none_a_mapping_and_non_strings():
    with pytest.raises(ValueError, match=r"texts must be a list of strings, not one string; wrap it: \['my vpn'\]"):
        texts("my vpn", "texts")
    with pytest.raises(ValueError, match="texts must be a list of strings, got NoneType"):
        texts(None, "texts")
    with pytest.raises(ValueError, match="texts must be a list of strings, got dict"):
        texts({"a": 1}, "texts")
    with pytest.raises(ValueError, match=r"texts\[1\] must be a string, got 3"):
        texts(["a", 3], "texts")
    with pytest.raises(ValueError, match="templates is empty: it must be a list of strings"):
        texts([], "templates", nonempty=True)
    assert texts(("a", "b"), "texts") == ["a", "b"] and texts((t for t in "ab"), "texts") == ["a", "b"]


def test_items_are_a_list_not_one_string_and_each_entry_is_checked():
    assert items((1, 2), "seeds") == [1, 2] and items(range(3), "steps", each=partial(integer, name="steps")) == [0, 1, 2]
    for bad in ("12", 5, None, {"a": 1}):
        with pytest.raises(ValueError, match="seeds must be a list of seeds, got"):
            items(bad, "seeds", "a list of seeds")
    with pytest.raises(ValueError, match=r"candidates must be a list, got \{1, 2\} \(a set has no order\)"):
        items({1, 2}, "candidates", ordered=True)
    with pytest.raises(ValueError, match="taus must be a non-empty list, got"):
        items([], "taus", "a non-empty list", nonempty=True)
    with pytest.raises(ValueError, match="tau must be a finite number > 0, got 0"):
        items([0.1, 0], "taus", each=temperature)


def test_indices_are_distinct_integers_of_the_row():
    assert indices([2, 0], "copies", 3) == [2, 0] and indices((1, 1), "variants", 4, distinct=False) == [1, 1]
    for bad in ([0, 0], [3], [0.0], [True], "01", [], None):
        with pytest.raises(ValueError, match=r"copies must be distinct indices \(0..2\), got"):
            indices(bad, "copies", 3)


def test_ids_and_text_are_real_distinct_strings():
    assert ids(["a", "b"], "ids") == ["a", "b"]
    with pytest.raises(ValueError, match="ids lists 'a' twice"):
        ids(["a", "b", "a"], "ids")
    with pytest.raises(ValueError, match=r"ids holds 1 \(int\)"):
        ids(["a", 1], "ids")
    with pytest.raises(ValueError, match="--task holds '\\\\udcff' at character 2"):
        text("a\udcff", "--task")
    with pytest.raises(ValueError, match="--task must be text, got int"):
        text(3, "--task")


def test_a_template_names_what_is_wrong_with_it():
    assert template("{g}!", "t", "{g}", g="x") == "x!"
    for bad, error in (("{x}", "KeyError"), ("{g", "ValueError"), ("{0}", "IndexError")):
        with pytest.raises(ValueError, match=f"t = .* is not a template with only {{g}}: {error}"):
            template(bad, "t", "{g}", g="x")


# ---- arguments and require -----------------------------------------------------------------


@arguments(steps=partial(integer, minimum=0), tau=temperature, labels=optional(integer_table))
def _train(steps, *, tau=0.1, labels=None):
    return steps, tau, labels


def test_arguments_checks_before_the_body_and_hands_it_the_checked_values():
    assert _train(np.int64(3)) == (3, 0.1, None)
    assert _train(2, tau=np.float32(0.5), labels=[1, 2])[2].dtype == np.int64
    with pytest.raises(ValueError, match="steps must be an integer >= 0, got -1"):
        _train(-1)
    with pytest.raises(ValueError, match="tau must be a finite number > 0, got 0"):
        _train(1, tau=0)
    with pytest.raises(TypeError):
        _train()  # a missing argument is Python's to report
    bound = _train.check(5, tau=0.2)
    assert bound.arguments["steps"] == 5 and _train.__wrapped__(-1) == (-1, 0.1, None)
    assert _train.__name__ == "_train"
    with pytest.raises(TypeError, match="has no argument nope to check"):
        arguments(nope=flag)(lambda x: x)


def test_require_says_its_message_only_when_the_rule_fails():
    require(True, lambda: 1 / 0)  # a message function is not called when the rule holds
    with pytest.raises(ValueError, match="^k must be at most 3, got 4$"):
        require(False, lambda: f"k must be at most 3, got {4}")


# ---- unit rows -----------------------------------------------------------------------------


def test_unit_rows_is_the_plain_formula_bit_for_bit_where_lengths_are_safe():
    A = np.random.default_rng(0).standard_normal((6, 4))
    norms = np.sqrt(np.einsum("ij,ij->i", A, A))[:, None]
    U, lengths = unit_rows(A, return_lengths=True)
    np.testing.assert_array_equal(U, A / norms)
    np.testing.assert_array_equal(lengths, norms)
    T = torch.from_numpy(A).float().requires_grad_(True)
    assert torch.equal(unit_rows(T), F.normalize(T, dim=-1))
    largest = T.abs().amax(dim=-1, keepdim=True)
    assert torch.equal(unit_rows(T, scaled=True), F.normalize(T / largest, dim=-1))
    unit_rows(T).sum().backward()
    assert T.grad is not None


@pytest.mark.parametrize("size", [1e-300, 1e-160, 1e-30, 1e200, 1e300])
def test_unit_rows_keep_the_direction_of_tiny_and_huge_rows(size):
    A = np.array([[3.0, 4.0], [1.0, 0.0]])
    np.testing.assert_allclose(unit_rows(A * [[size], [1.0]]), unit_rows(A), rtol=1e-15)
    if size > 1e-300:  # float64 tensors of the same rows, F.normalize's clamp and overflow avoided
        T = torch.tensor(A) * torch.tensor([[size], [1.0]], dtype=torch.float64)
        torch.testing.assert_close(unit_rows(T), torch.tensor(unit_rows(A)), rtol=1e-12, atol=0)
        stack = torch.stack([T, T])  # (2, n, d): rows of a stack of models
        torch.testing.assert_close(unit_rows(stack, scaled=True)[1], torch.tensor(unit_rows(A)), rtol=1e-12, atol=0)


def test_unit_rows_refuse_rows_without_a_direction_by_their_number():
    for x in (np.array([[1.0, 0.0], [0.0, 0.0]]), torch.tensor([[1.0, 0.0], [0.0, 0.0]])):
        with pytest.raises(ValueError, match="queries row 1 is all zeros: it has no direction to scale to length 1"):
            unit_rows(x, "queries row")
    with pytest.raises(ValueError, match="Xq @ W row 0 has length 0: no words"):
        unit_rows(np.zeros((1, 2)), "Xq @ W row", why_zero="has length 0: no words")
    with pytest.raises(ValueError, match=r"row \(1, 0\) has an entry that is not a finite number"):
        unit_rows(torch.tensor([[[1.0, 0.0]], [[np.nan, 0.0]]]), scaled=True)
    with pytest.raises(ValueError, match="A row 0 is longer than float64 can hold"):
        unit_rows(np.array([[1.5e308, 1.5e308]]), "A row")


# ---- the ground floor: who imports whom ----------------------------------------------------

LABS = Path(__file__).resolve().parents[1] / "labs"
#: What each wing may import from labs (every import counts: at the top, in a function, under
#: TYPE_CHECKING): the lessons and the tool stand on labs.checks and not on each other; the
#: classroom stands on all three; labs.checks on nothing of labs. The package root (``import labs``,
#: for ``labs.__version__``) holds no code and is open to all.
ALLOWED = {"lessons": ("labs.checks", "labs.lessons"), "retrieval": ("labs.checks", "labs.retrieval"),
           "classroom": ("labs.checks", "labs.lessons", "labs.retrieval", "labs.classroom"), "checks": ()}


def _labs_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "labs":
            found |= {node.module} if node.module != "labs" else {f"labs.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "labs"}
    return found


@pytest.mark.parametrize("wing", sorted(ALLOWED))
def test_lessons_and_the_tool_import_labs_checks_and_nothing_of_each_other(wing):
    paths = [LABS / "checks.py"] if wing == "checks" else sorted((LABS / wing).rglob("*.py"))
    assert paths
    for path in paths:
        for module in _labs_imports(path):
            assert module == "labs" or module.startswith(ALLOWED[wing]), (
                f"{path.relative_to(LABS.parent)} imports {module}: the {wing} wing imports only "
                f"{', '.join(ALLOWED[wing]) or 'nothing of labs'}")


#: The two modules whose bytes the real-data experiment's results record (benchmarks/docs_experiment.py,
#: CODE_FILES): they alone call the name-first spelling in labs/retrieval/validate.py.
FROZEN = {"labs/retrieval/metrics.py", "labs/retrieval/docs_corpus.py"}


def test_one_check_vocabulary_under_both_wings():
    """The tool checks values with labs.checks' words, value first; labs.retrieval.machine holds only
    the machine side, value first too; labs.retrieval.validate serves the two frozen modules only."""
    import labs.checks
    from labs.retrieval import machine

    words = set(labs.checks.__all__)
    for path in sorted(LABS.rglob("*.py")):
        relative = str(path.relative_to(LABS.parent))
        if "labs.retrieval.validate" in _labs_imports(path) or "from labs.retrieval import validate" in path.read_text():
            assert relative in FROZEN, f"{relative} imports labs.retrieval.validate: call labs.checks' words instead"
        tree = ast.parse(path.read_text())
        twice = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)} & words
        if path.name not in ("checks.py", "validate.py"):
            assert not twice, f"{relative} defines {sorted(twice)} again: labs.checks has them"
    assert not set(machine.__all__) & words
    for check in (machine.device, machine.attention, machine.folder):
        assert list(inspect.signature(check).parameters)[:2] == ["value", "name"], check.__name__


def test_no_public_name_is_defined_twice_in_labs():
    """One module defines each public function or class. Two spellings are allowed by name: each
    command's ``main``, and validate.py's name-first words, which the two FROZEN modules call."""
    where: dict[str, list[str]] = {}
    for path in sorted(LABS.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                where.setdefault(node.name, []).append(str(path.relative_to(LABS.parent)))
    twice = {name: paths for name, paths in where.items() if len(paths) > 1 and name != "main"}
    assert twice == {name: ["labs/checks.py", "labs/retrieval/validate.py"] for name in ("ids", "integer", "texts")}


def test_the_number_choice_and_text_words_never_import_numpy():
    """The command line refuses a flag through these words before NumPy loads (it stays quick):
    a value can be a NumPy object only once NumPy is imported, so they never import it."""
    import subprocess
    import sys

    code = ("import sys; from labs import checks\n"
            "checks.integer(3, 'k', 1); checks.positive(0.5, 'lr', maximum=1.0); checks.number(2, 'x')\n"
            "checks.choice('a', 'c', ('a',)); checks.text('t', 't'); checks.flag(True, 'f')\n"
            "try:\n    checks.integer(True, 'k')\nexcept ValueError:\n    pass\n"
            "print('numpy' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
