"""`zoo.recipes.inputs`: the application's text and option checks."""

import numpy as np
import pytest

# The option check the application takes from the library.
from keras_seq.validation import check_int_in
from zoo.recipes.inputs import UsageError, check_text_list, reported_as_usage


def test_check_text_list_takes_lists_and_refuses_one_str():
    assert check_text_list(("a", "b")) == ["a", "b"]
    assert check_text_list(iter(["a"])) == ["a"]
    with pytest.raises(TypeError, match=r"received a str \(pass \['hello'\]"):
        check_text_list("hello")
    with pytest.raises(TypeError, match=r"^`prompt` must be a list of str; received"):
        check_text_list(b"x", "prompt")
    with pytest.raises(TypeError, match=r"^`texts\[1\]` must be a str; received int"):
        check_text_list(["a", 1])


def test_check_int_in_names_the_bound():
    check_int_in(None, "k", 1, 5)
    check_int_in(np.int64(5), "k", 1, 5)
    with pytest.raises(ValueError, match=r"^`k` must be at least 1; received 0\.$"):
        check_int_in(0, "k", 1, 5)
    with pytest.raises(ValueError, match=r"at most 5 \(the size\); received 6\.$"):
        check_int_in(6, "k", 1, 5, "the size")
    for value in (True, 2.0, "2"):
        with pytest.raises(TypeError, match="`k` must be an int"):
            check_int_in(value, "k", 1)


def test_reported_as_usage_converts_only_the_named_errors():
    with pytest.raises(UsageError, match="^bad file$"):
        with reported_as_usage(ValueError):
            raise ValueError("bad file")
    with pytest.raises(KeyError):
        with reported_as_usage(ValueError):
            raise KeyError("a bug")
