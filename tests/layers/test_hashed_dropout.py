import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_seq.layers import HashedDropout
from keras_seq.layers.hashed_dropout import (
    hashed_dropout,
    mix32,
    position_hashes,
    word_dtype,
)
from keras_seq.testing import run_layer_test

# Enough elements that the drop frequency is within 4 standard deviations
# of the rate: sqrt(0.1 * 0.9 / 300,000) = 0.00055.
N = 300_000
MASK32 = 0xFFFFFFFF


def _reference_mix(x):
    """lowbias32 in Python integers, written from its definition."""
    x ^= x >> 16
    x = (x * 0x7FEB352D) & MASK32
    x ^= x >> 15
    x = (x * 0x846CA68B) & MASK32
    return x ^ (x >> 16)


def _dropped(rate, shape=(N,), seed=0):
    out = hashed_dropout(keras.ops.ones(shape), rate, seed=seed)
    return np.asarray(keras.ops.convert_to_numpy(out))


def _within(frequency, p, n, sigmas=4):
    return abs(frequency - p) < sigmas * np.sqrt(p * (1 - p) / n)


def test_layer_harness():
    run_layer_test(
        HashedDropout,
        init_kwargs={"rate": 0.1, "seed": 3},
        input_data=np.ones((2, 4, 6), "float32"),
        expected_output_shape=(2, 4, 6),
        expected_num_trainable_weights=0,
        expected_num_params=0,
    )


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, MASK32), min_size=1, max_size=64))
def test_mixer_matches_its_definition(values):
    got = keras.ops.convert_to_numpy(mix32(np.asarray(values, "uint32")))
    assert [int(v) for v in got] == [_reference_mix(v) for v in values]


def test_position_hashes_match_a_python_reference():
    key = (123456789, 987654321)
    got = keras.ops.convert_to_numpy(position_hashes((3, 5), np.asarray(key, "uint32")))
    expected = [
        _reference_mix(_reference_mix((i * 0x9E3779B9 + key[0]) & MASK32) ^ key[1])
        for i in range(15)
    ]
    # uint32 words; int64 ones on PyTorch, which has no uint32 arithmetic.
    assert got.dtype == np.dtype(word_dtype()) and got.shape == (3, 5)
    assert [int(v) for v in got.ravel()] == expected
    # Distinct positions, distinct numbers (every step is a bijection).
    many = keras.ops.convert_to_numpy(position_hashes((N,), np.asarray(key, "uint32")))
    assert len(np.unique(many)) == N


@pytest.mark.parametrize("rate", [0.01, 0.1, 0.3, 0.5, 0.9])
def test_drops_at_the_rate_and_keeps_the_expectation(rate):
    out = _dropped(rate)
    dropped = out == 0
    assert _within(dropped.mean(), rate, N)
    # Kept elements are scaled by the inverse of the keep rate, so the
    # mean of the output estimates the input's, 1.
    np.testing.assert_allclose(out[~dropped], 1 / (1 - rate), rtol=1e-6)
    assert abs(out.mean() - 1) < 4 * np.sqrt(rate / (1 - rate) / N)


def test_neighbouring_positions_are_independent():
    # Consecutive positions (along a row, and a row apart) are both
    # dropped at rate**2, as independent draws would be.
    rate = 0.5
    dropped = _dropped(rate, shape=(N // 100, 100)) == 0
    pairs = {
        "next column": (dropped[:, 1:], dropped[:, :-1]),
        "next row": (dropped[1:], dropped[:-1]),
        "two apart": (dropped[:, 2:], dropped[:, :-2]),
    }
    for name, (a, b) in pairs.items():
        assert _within((a & b).mean(), rate**2, a.size), name


def test_successive_calls_and_seeds_are_independent():
    rate = 0.3
    layer = HashedDropout(rate, seed=1)
    x = keras.ops.ones((N,))
    first = np.asarray(keras.ops.convert_to_numpy(layer(x, training=True))) == 0
    second = np.asarray(keras.ops.convert_to_numpy(layer(x, training=True))) == 0
    assert _within((first & second).mean(), rate**2, N)
    seven, eight = _dropped(rate, seed=7) == 0, _dropped(rate, seed=8) == 0
    assert _within((seven & eight).mean(), rate**2, N)


def test_seeded_masks_repeat():
    np.testing.assert_array_equal(_dropped(0.1, seed=7), _dropped(0.1, seed=7))
    first = HashedDropout(0.1, seed=4)(keras.ops.ones((64, 32)), training=True)
    again = HashedDropout(0.1, seed=4)(keras.ops.ones((64, 32)), training=True)
    np.testing.assert_array_equal(np.asarray(first), np.asarray(again))


def test_noise_shape_broadcasts_the_mask():
    layer = HashedDropout(0.5, noise_shape=(None, 1, 8), seed=0)
    out = np.asarray(layer(np.ones((4, 5, 8), "float32"), training=True))
    # Every position of a sequence shares the mask of its batch row.
    np.testing.assert_array_equal(out, np.broadcast_to(out[:, :1], out.shape))
    assert 0 < (out == 0).mean() < 1


def test_inference_and_rate_zero_return_the_inputs():
    x = np.random.default_rng(0).normal(size=(3, 7)).astype("float32")
    np.testing.assert_array_equal(np.asarray(HashedDropout(0.1)(x)), x)
    np.testing.assert_array_equal(np.asarray(HashedDropout(0.0)(x, training=True)), x)


@pytest.mark.parametrize("rate", [-0.1, 1.0, 1.5])
def test_a_rate_outside_zero_to_one_is_refused(rate):
    with pytest.raises(ValueError, match=r"`rate` must be in \[0, 1\)"):
        hashed_dropout(keras.ops.ones((4,)), rate)


def test_half_precision_inputs_keep_their_dtype():
    x = keras.ops.ones((1000,), dtype="float16")
    out = hashed_dropout(x, 0.25, seed=0)
    assert keras.backend.standardize_dtype(out.dtype) == "float16"
    kept = np.asarray(keras.ops.convert_to_numpy(out))
    np.testing.assert_allclose(kept[kept != 0], 1 / 0.75, rtol=1e-3)


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="TensorFlow graph shapes"
)
def test_unknown_shapes_in_a_tensorflow_graph():
    import tensorflow as tf

    layer = HashedDropout(0.3, seed=0)

    @tf.function(input_signature=[tf.TensorSpec((None, None, 16), tf.float32)])
    def apply(x):
        return layer(x, training=True)

    out = apply(tf.ones((50, 7, 16))).numpy()
    assert out.shape == (50, 7, 16)
    assert _within((out == 0).mean(), 0.3, out.size)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow's XLA")
def test_same_mask_with_and_without_xla():
    import tensorflow as tf

    key = np.asarray([11, 22], "uint32")
    eager = position_hashes((8, 9), key)
    compiled = tf.function(lambda k: position_hashes((8, 9), k), jit_compile=True)
    np.testing.assert_array_equal(np.asarray(eager), compiled(key).numpy())


def test_saved_in_a_keras_file(tmp_path):
    inputs = keras.Input((6,))
    model = keras.Model(inputs, HashedDropout(0.2, seed=5, name="drop")(inputs))
    path = tmp_path / "model.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    layer = restored.get_layer("drop")
    assert type(layer) is HashedDropout
    assert layer.get_config() == model.get_layer("drop").get_config()


def test_the_layer_hashes_its_mask_except_where_the_backend_draws_natively():
    # Eager PyTorch draws natively (`NATIVE_MASK_BACKENDS`); elsewhere the
    # mask is the hash's.
    from keras_seq.layers.hashed_dropout import NATIVE_MASK_BACKENDS

    x = keras.ops.ones((64, 32))
    out = HashedDropout(0.3, seed=4)(x, training=True)
    seed = keras.random.SeedGenerator(4)
    if keras.backend.backend() in NATIVE_MASK_BACKENDS:
        expected = keras.random.dropout(x, 0.3, seed=seed)
    else:
        expected = hashed_dropout(x, 0.3, seed=seed)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(out), keras.ops.convert_to_numpy(expected)
    )
    dropped = (keras.ops.convert_to_numpy(out) == 0).mean()
    assert _within(dropped, 0.3, 64 * 32)
