"""`zoo.recipes.runtime`: strategies, precision and data for workers.

The strategies themselves train in `test_distribution.py`; here, the
choices and their refusals."""

import contextlib

import keras
import pytest
import tensorflow as tf

from zoo.recipes import runtime


def test_no_strategy_is_none_and_its_scope_does_nothing():
    assert runtime.make_strategy("none") is None
    assert runtime.make_strategy(None) is None
    assert isinstance(runtime.scope(None), contextlib.nullcontext)
    dataset = tf.data.Dataset.range(10).batch(3)
    assert runtime.for_workers(dataset, None) is dataset


def test_unknown_strategy_and_precision_are_refused():
    with pytest.raises(ValueError, match=r"`strategy` must be one of .*'ring'"):
        runtime.make_strategy("ring")
    with pytest.raises(ValueError, match=r"`precision` must be one of .*'int8'"):
        runtime.set_precision("int8")


def test_set_precision_sets_the_global_policy():
    try:
        runtime.set_precision("mixed_bfloat16")
        assert keras.mixed_precision.global_policy().name == "mixed_bfloat16"
        assert keras.layers.Dense(2).compute_dtype == "bfloat16"
    finally:
        runtime.set_precision("float32")
    assert keras.mixed_precision.global_policy().name == "float32"
