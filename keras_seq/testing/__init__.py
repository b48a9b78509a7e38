"""Test harness shared by the layer, builder and tutorial tests."""

from keras_seq.testing.test_case import (
    assert_all_close,
    input_gradient,
    run_layer_test,
    run_model_saving_test,
)

__all__ = [
    "assert_all_close",
    "input_gradient",
    "run_layer_test",
    "run_model_saving_test",
]
