import keras
import numpy as np

from keras_seq.layers import MaskedMeanPooling
from keras_seq.testing import assert_all_close, run_layer_test

X = np.array(
    [
        [[1.0, 2.0], [3.0, 4.0], [100.0, -100.0]],
        [[5.0, 6.0], [7.0, 8.0], [9.0, 10.0]],
        [[-1.0, 1.0], [2.0, 0.0], [3.0, 5.0]],
    ],
    "float32",
)  # (B, T, D) = (3, 3, 2)
MASK = np.array([[True, True, False], [False, False, False], [True, True, True]])


def test_layer_harness():
    run_layer_test(
        MaskedMeanPooling,
        init_kwargs={},
        input_data=X,
        expected_output_shape=(3, 2),
        expected_num_trainable_weights=0,
        expected_num_params=0,
    )


def test_golden_values_with_a_mask():
    out = MaskedMeanPooling()(X, mask=MASK)
    expected = [
        [2.0, 3.0],  # the mean of the two real positions; the pad is ignored
        [0.0, 0.0],  # no real position: a zero vector, not NaN
        [4.0 / 3.0, 2.0],
    ]
    assert_all_close(out, np.array(expected, "float32"), atol=1e-6)


def test_all_masked_row_is_zero_and_finite():
    out = np.asarray(keras.ops.convert_to_numpy(MaskedMeanPooling()(X, mask=~MASK)))
    assert np.all(np.isfinite(out))
    assert_all_close(out[2], np.zeros(2, "float32"), atol=0.0)


def test_no_mask_is_the_plain_mean():
    assert_all_close(MaskedMeanPooling()(X), X.mean(axis=1), atol=1e-6)


def test_implicit_mask_equals_explicit_mask():
    ids = np.array([[4, 2, 0], [3, 0, 0]], "int32")
    embedding = keras.layers.Embedding(6, 2, mask_zero=True)
    pooling = MaskedMeanPooling()
    implicit = pooling(embedding(ids))
    explicit = pooling(embedding(ids), mask=ids != 0)
    assert_all_close(implicit, explicit, atol=0.0)
    # The pooled vector has no time axis, so no mask goes on.
    assert pooling.compute_mask(embedding(ids), ids != 0) is None


def test_config_round_trip():
    layer = MaskedMeanPooling(name="pool")
    config = layer.get_config()
    revived = MaskedMeanPooling.from_config(config)
    assert revived.get_config() == config
    serialized = keras.saving.serialize_keras_object(layer)
    assert serialized["registered_name"] == "keras_seq>MaskedMeanPooling"
    assert type(keras.saving.deserialize_keras_object(serialized)) is MaskedMeanPooling
