"""labs.lessons.inputs: the shared argument checks, for the classes of input the lesson modules meet."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from labs.lessons.inputs import (
    finite_array, one_bool, real_array, real_number, real_tensor, text_list, whole_array, whole_number,
)


def test_a_masked_array_is_refused_rather_than_read_with_its_masked_entries():
    masked = np.ma.masked_array([0.5, 9.0, 0.1], mask=[0, 1, 0])
    with pytest.raises(ValueError, match=r"scores is a masked array: NumPy would use its masked entries"):
        real_array(masked, "scores")
    np.testing.assert_array_equal(real_array(masked.compressed(), "scores"), [0.5, 0.1])


def test_bfloat16_and_float16_are_read_exactly():
    values = [0.5, 0.25, -3.0]
    assert real_array(torch.tensor(values, dtype=torch.bfloat16), "x").tolist() == values
    assert real_array(np.array(values, dtype=np.float16), "x").tolist() == values


def test_integers_beyond_float64_are_named_not_an_overflow_error():
    with pytest.raises(ValueError, match=r"x must hold real numbers, got 1000.* \(too large for a float\)"):
        real_array([10**400, 0], "x")
    with pytest.raises(ValueError, match="tau must be a number, got 1000.*too large for a float"):
        real_number(10**400, "tau", "a number")


def test_the_entry_that_is_not_a_number_is_the_one_named():
    with pytest.raises(ValueError, match="x must hold real numbers, got None"):
        real_array([1.0, None], "x")


def test_requires_grad_message_names_the_torch_form_only_where_one_exists():
    t = torch.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match=r"Pass a.detach\(\) for the value$"):
        real_array(t, "a", train_with=None)
    with pytest.raises(ValueError, match="or use info_nce_torch to train through it"):
        real_array(t, "a", train_with="info_nce_torch")


def test_finite_array_refuses_nan_and_inf_by_name():
    for bad in ([1.0, np.nan], [np.inf, 0.0], [-np.inf]):
        with pytest.raises(ValueError, match="w contains NaN or infinite entries"):
            finite_array(bad, "w")


@pytest.mark.parametrize("value", [True, np.bool_(False), 2.0, "3", None, np.float64(1.0), torch.tensor(2)])
def test_whole_number_takes_integers_only(value):
    with pytest.raises(ValueError, match="steps must be an integer"):
        whole_number(value, "steps")


def test_whole_number_takes_numpy_integers_and_checks_the_minimum():
    assert whole_number(np.int64(4), "n", 2) == 4 and type(whole_number(np.int32(4), "n")) is int
    with pytest.raises(ValueError, match="n must be an integer >= 2, got 1"):
        whole_number(1, "n", 2)


@pytest.mark.parametrize("value", ["no", "False", 0, 1, None, np.array([True])])
def test_one_bool_refuses_what_would_count_as_true_or_false_silently(value):
    with pytest.raises(ValueError, match="negatives must be True or False"):
        one_bool(value, "negatives")
    assert one_bool(np.bool_(True), "negatives") is True


def test_text_list_refuses_one_string_none_and_non_strings():
    with pytest.raises(ValueError, match=r"texts must be a list of strings, not one string; wrap it: \['my vpn'\]"):
        text_list("my vpn", "texts")
    with pytest.raises(ValueError, match="texts must be a list of strings, got NoneType"):
        text_list(None, "texts")
    with pytest.raises(ValueError, match=r"texts\[1\] must be a string, got 3"):
        text_list(["a", 3], "texts")
    assert text_list(("a", "b"), "texts") == ["a", "b"]


@pytest.mark.parametrize("value, message", [
    ([0.0, 1.0], "got floats"), (np.array([3.0]), "got floats"), (torch.tensor([1.0]), "got a tensor of dtype torch.float32"),
    ([True, False], "got booleans"), (torch.tensor([True]), "dtype torch.bool"), (["1", "2"], "got text"),
    ("12", "got text"), ([1j], "complex numbers"), (None, "got None"), ([1, None], "got None"),
    ([[1, 2], [3]], "is ragged"), (np.ma.masked_array([1, 2], mask=[0, 1]), "is a masked array"),
    ([2**70], "fit int64"), (np.array([2**64 - 1], dtype=np.uint64), "fit int64"),
], ids=["floats", "float-array", "float-tensor", "bools", "bool-tensor", "strings", "one-string", "complex", "none",
        "none-entry", "ragged", "masked", "huge", "uint64"])
def test_whole_array_takes_integers_only(value, message):
    with pytest.raises(ValueError, match=f"labels .*{message}|labels {message}"):
        whole_array(value, "labels")


def test_whole_array_reads_python_numpy_and_torch_integers():
    for value in ([3, 1, 3], np.array([3, 1, 3], dtype=np.int32), torch.tensor([3, 1, 3]), (np.int64(3), 1, 3)):
        got = whole_array(value, "y")
        assert got.dtype == np.int64 and got.tolist() == [3, 1, 3]
    assert whole_array([], "y").shape == (0,)


def test_real_tensor_keeps_a_float_tensor_and_reads_the_rest():
    t = torch.ones(2, 3, dtype=torch.float16, requires_grad=True)
    assert real_tensor(t, "v") is t  # dtype and autograd graph kept
    assert real_tensor(torch.tensor([1, 2]), "v").dtype == torch.float64
    assert real_tensor([[1.0, 2.0]], "v").dtype == torch.float64
    for value, message in ((torch.ones(2, dtype=torch.complex64), "v holds complex numbers"),
                           (torch.tensor([True]), "v must hold real numbers, got booleans"),
                           (["a"], "v must hold real numbers, got text"), ([[1.0], [1.0, 2.0]], "v is ragged")):
        with pytest.raises(ValueError, match=message):
            real_tensor(value, "v")
