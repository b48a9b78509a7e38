import keras
import numpy as np
import pytest

from keras_seq.layers import Dropout
from keras_seq.layers.dropout import packed_dropout, packed_rate
from keras_seq.testing import run_layer_test

# Enough elements that the drop frequency is within 4 standard deviations
# of the rate: sqrt(0.1 * 0.9 / 300,000) = 0.00055.
N = 300_000


def _dropped(rate, shape=(N,), seed=0):
    out = packed_dropout(keras.ops.ones(shape), rate, seed=seed)
    return np.asarray(keras.ops.convert_to_numpy(out))


def test_layer_harness():
    run_layer_test(
        Dropout,
        init_kwargs={"rate": 0.1, "seed": 3},
        input_data=np.ones((2, 4, 6), "float32"),
        expected_output_shape=(2, 4, 6),
        expected_num_trainable_weights=0,
        expected_num_params=0,
    )


def test_realised_rate_is_on_the_1024_grid():
    assert packed_rate(0.1) == 102 / 1024
    assert packed_rate(0.5) == 0.5
    # 0.01 -> 10/1024 = 0.0098 is 2.3% off: left to keras.random.dropout.
    assert packed_rate(0.01) is None
    assert packed_rate(1e-5) is None


@pytest.mark.parametrize("rate", [0.1, 0.3, 0.5])
def test_drops_at_the_rate_and_keeps_the_expectation(rate):
    out = _dropped(rate)
    realised = packed_rate(rate)
    dropped = out == 0
    assert abs(dropped.mean() - realised) < 4 * np.sqrt(rate * (1 - rate) / N)
    # Kept elements are scaled by the inverse of the realised keep rate, so
    # the mean of the output estimates the input's, 1.
    np.testing.assert_allclose(out[~dropped], 1 / (1 - realised), rtol=1e-6)
    assert abs(out.mean() - 1) < 4 * np.sqrt(realised / (1 - realised) / N)


def test_elements_of_one_draw_are_independent():
    # Elements 3k, 3k+1 and 3k+2 share a 30-bit draw; each uses its own 10
    # bits, so both of a neighbouring pair are dropped at rate**2.
    rate = 0.5
    dropped = _dropped(rate).reshape(-1, 3) == 0
    for i, j in ((0, 1), (1, 2), (0, 2)):
        both = (dropped[:, i] & dropped[:, j]).mean()
        assert abs(both - rate**2) < 4 * np.sqrt(rate**2 * (1 - rate**2) / (N / 3))
    # And neighbouring draws are not copies of each other.
    assert (dropped[1:] != dropped[:-1]).any(axis=1).mean() > 0.8


def test_seeded_masks_repeat_and_a_generator_advances():
    np.testing.assert_array_equal(_dropped(0.1, seed=7), _dropped(0.1, seed=7))
    assert (_dropped(0.1, seed=7) != _dropped(0.1, seed=8)).any()
    layer = Dropout(0.1, seed=1)
    x = keras.ops.ones((64, 32))
    first = np.asarray(layer(x, training=True))
    second = np.asarray(layer(x, training=True))
    assert (first != second).any()


def test_noise_shape_broadcasts_the_mask():
    layer = Dropout(0.5, noise_shape=(None, 1, 8), seed=0)
    out = np.asarray(layer(np.ones((4, 5, 8), "float32"), training=True))
    # Every position of a sequence shares the mask of its batch row.
    np.testing.assert_array_equal(out, np.broadcast_to(out[:, :1], out.shape))
    assert 0 < (out == 0).mean() < 1


def test_inference_and_rate_zero_return_the_inputs():
    x = np.random.default_rng(0).normal(size=(3, 7)).astype("float32")
    np.testing.assert_array_equal(np.asarray(Dropout(0.1)(x)), x)
    np.testing.assert_array_equal(np.asarray(Dropout(0.0)(x, training=True)), x)


def test_unmatched_rate_falls_back_to_keras():
    out = _dropped(0.01)
    np.testing.assert_allclose(out[out != 0], 1 / 0.99, rtol=1e-6)
    assert abs((out == 0).mean() - 0.01) < 4 * np.sqrt(0.01 * 0.99 / N)


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="TensorFlow graph shapes"
)
def test_unknown_shapes_in_a_tensorflow_graph():
    import tensorflow as tf

    layer = Dropout(0.3, seed=0)

    @tf.function(input_signature=[tf.TensorSpec((None, None, 16), tf.float32)])
    def apply(x):
        return layer(x, training=True)

    out = apply(tf.ones((50, 7, 16))).numpy()
    assert out.shape == (50, 7, 16)
    realised = packed_rate(0.3)
    assert abs((out == 0).mean() - realised) < 4 * np.sqrt(0.21 / out.size)


def test_saved_in_a_keras_file(tmp_path):
    inputs = keras.Input((6,))
    model = keras.Model(inputs, Dropout(0.2, seed=5, name="drop")(inputs))
    path = tmp_path / "model.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    layer = restored.get_layer("drop")
    assert type(layer) is Dropout
    assert layer.get_config() == model.get_layer("drop").get_config()
