import math

import keras
import numpy as np
import pytest
from keras import ops

from keras_seq.layers import SinusoidalPositionalEncoding
from keras_seq.layers.sinusoidal_positional_encoding import (
    sinusoidal_encoding,
)
from keras_seq.testing import assert_all_close, run_layer_test


def reference_table(positions, dim, max_wavelength=10000):
    """Eq. (7.29) written out entry by entry, in float64."""
    table = np.zeros((len(positions), dim))
    for row, t in enumerate(positions):
        for i in range(dim // 2):
            angle = t / max_wavelength ** (2 * i / dim)
            table[row, 2 * i] = math.sin(angle)
            table[row, 2 * i + 1] = math.cos(angle)
    return table


def decode_step_by_step(layer, inputs):
    """Call `layer` one position at a time with a traced `start_index`."""
    batch, length, _ = inputs.shape
    width = layer.compute_output_shape(inputs.shape)[-1]
    inputs = ops.convert_to_tensor(inputs)

    def step(i, outputs):
        x = ops.slice(inputs, (0, i, 0), (batch, 1, inputs.shape[-1]))
        y = layer(x, start_index=i)  # (B, 1, width)
        return ops.slice_update(outputs, (0, i, 0), y)

    zeros = ops.zeros((batch, length, width), dtype=layer.compute_dtype)
    return ops.fori_loop(0, length, step, zeros)


def test_layer_add_mode():
    run_layer_test(
        SinusoidalPositionalEncoding,
        init_kwargs={"max_wavelength": 100, "mode": "add"},
        input_data=np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32"),
        expected_output_shape=(2, 3, 4),
        expected_num_trainable_weights=0,
        expected_num_params=0,
    )


def test_layer_concat_mode():
    run_layer_test(
        SinusoidalPositionalEncoding,
        init_kwargs={"mode": "concat", "output_dim": 6},
        input_data=np.ones((2, 3, 5), dtype="float32"),
        expected_output_shape=(2, 3, 11),
        expected_num_trainable_weights=0,
        expected_num_params=0,
        call_kwargs={"start_index": 2},
    )


def test_golden_values_at_known_positions():
    table = sinusoidal_encoding(length=2, dim=4)
    # t = 0: every sine is 0 and every cosine 1.
    assert_all_close(table[0], np.array([0.0, 1.0, 0.0, 1.0]))
    # t = 1, p_e = 4: the pair i = 1 has wavelength 10000^(2/4) = 100.
    expected = [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)]
    assert_all_close(table[1], np.array(expected), atol=1e-7)


def test_table_matches_equation_7_29():
    table = sinusoidal_encoding(length=7, dim=10, max_wavelength=50)
    assert tuple(table.shape) == (7, 10)
    assert_all_close(table, reference_table(range(7), 10, 50), atol=1e-6)
    # Far positions, as in Fig. 7.14, stay accurate in float32.
    far = sinusoidal_encoding(length=2, dim=8, start_index=4000)
    assert_all_close(far, reference_table([4000, 4001], 8), atol=1e-3)


def test_neighbouring_positions_differ_in_fast_columns():
    # Fig. 7.14 (b): t = 50 and t = 51 differ mostly in the first columns.
    table = ops.convert_to_numpy(sinusoidal_encoding(length=2, dim=64, start_index=50))
    difference = np.abs(table[1] - table[0])
    assert difference[:8].mean() > 100 * difference[-8:].mean()


def test_add_mode_adds_the_table():
    x = np.random.default_rng(1).normal(size=(2, 5, 6)).astype("float32")
    y = SinusoidalPositionalEncoding(max_wavelength=30)(x)
    expected = x + reference_table(range(5), 6, 30)[None]
    assert_all_close(y, expected, atol=1e-6)


def test_concat_mode_appends_the_table():
    x = np.random.default_rng(2).normal(size=(2, 3, 5)).astype("float32")
    layer = SinusoidalPositionalEncoding(mode="concat", output_dim=4)
    y = ops.convert_to_numpy(layer(x, start_index=1))
    assert y.shape == (2, 3, 9)
    assert_all_close(y[..., :5], x)
    code = reference_table([1, 2, 3], 4)
    assert_all_close(y[..., 5:], np.broadcast_to(code, (2, 3, 4)), atol=1e-6)


@pytest.mark.parametrize("mode", ["add", "concat"])
def test_start_index_gives_rows_of_the_full_table(mode):
    layer = SinusoidalPositionalEncoding(mode=mode, output_dim=4)
    x = np.random.default_rng(3).normal(size=(1, 6, 4)).astype("float32")
    full = ops.convert_to_numpy(layer(x))
    for k in (0, 3, 5):
        step = x[:, k : k + 1]
        assert_all_close(layer(step, start_index=k), full[:, k : k + 1])
        index = ops.convert_to_tensor(k, dtype="int32")
        assert_all_close(layer(step, start_index=index), full[:, k : k + 1])
    assert_all_close(decode_step_by_step(layer, x), full)


def test_mask_passes_through():
    ids = np.array([[3, 1, 0, 0], [2, 2, 2, 0]])
    inputs = keras.Input(shape=(4,), dtype="int32")
    x = keras.layers.Embedding(5, 4, mask_zero=True)(inputs)
    x = SinusoidalPositionalEncoding()(x)
    pooled = keras.layers.GlobalAveragePooling1D()(x)
    model = keras.Model(inputs, [x, pooled])
    encoded, pooled = model(ids)
    encoded = ops.convert_to_numpy(encoded)
    real = (ids != 0)[..., None]
    expected = (encoded * real).sum(axis=1) / real.sum(axis=1)
    assert_all_close(pooled, expected, atol=1e-6)


def test_mixed_precision_keeps_values():
    layer = SinusoidalPositionalEncoding(dtype="mixed_bfloat16")
    y = layer(np.zeros((1, 3, 4), dtype="float32"), start_index=1)
    assert keras.backend.standardize_dtype(y.dtype) == "bfloat16"
    expected = reference_table([1, 2, 3], 4)[None]
    assert_all_close(ops.cast(y, "float32"), expected, atol=1e-2)


def test_odd_width_in_add_mode_is_refused():
    with pytest.raises(ValueError, match="input width 5"):
        SinusoidalPositionalEncoding()(np.zeros((1, 2, 5), dtype="float32"))


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"mode": "concat"}, "output_dim"),
        ({"mode": "concat", "output_dim": 3}, "output_dim"),
        ({"mode": "interleave"}, "mode"),
        ({"max_wavelength": 0}, "max_wavelength"),
    ],
)
def test_invalid_arguments(kwargs, argument):
    with pytest.raises(ValueError, match=f"`{argument}`"):
        SinusoidalPositionalEncoding(**kwargs)


def test_add_mode_output_dim_must_match_width():
    layer = SinusoidalPositionalEncoding(output_dim=6)
    with pytest.raises(ValueError, match="`output_dim` must be None or 4"):
        layer(np.zeros((1, 2, 4), dtype="float32"))


def test_helper_refuses_odd_dim_and_negative_start():
    with pytest.raises(ValueError, match="`dim`"):
        sinusoidal_encoding(length=3, dim=5)
    with pytest.raises(ValueError, match="`start_index`"):
        sinusoidal_encoding(length=3, dim=4, start_index=-1)


# The concatenated layout (tensor2tensor's and Marian's table).


def marian_table(length, dim):
    """transformers' `MarianSinusoidalPositionalEmbedding.create_weight`,
    written out in float64: sines of the even-j angles in the first half,
    cosines of the odd-j angles (the same frequencies) in the second."""
    angles = np.array(
        [
            [t / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)]
            for t in range(length)
        ]
    )
    return np.concatenate([np.sin(angles[:, 0::2]), np.cos(angles[:, 1::2])], axis=1)


def test_concatenated_layout_is_marians_table():
    table = sinusoidal_encoding(64, 16, layout="concatenated")
    assert_all_close(table, marian_table(64, 16), atol=2e-5)


def test_concatenated_layout_permutes_the_interleaved_columns():
    dim = 8
    interleaved = ops.convert_to_numpy(sinusoidal_encoding(7, dim, start_index=3))
    concatenated = ops.convert_to_numpy(
        sinusoidal_encoding(7, dim, start_index=3, layout="concatenated")
    )
    order = list(range(0, dim, 2)) + list(range(1, dim, 2))
    np.testing.assert_array_equal(concatenated, interleaved[:, order])


def test_layer_takes_the_layout_and_round_trips_it():
    layer = SinusoidalPositionalEncoding(layout="concatenated")
    restored = SinusoidalPositionalEncoding.from_config(layer.get_config())
    assert restored.layout == "concatenated"
    x = np.zeros((1, 5, 6), "float32")
    assert_all_close(restored(x)[0], marian_table(5, 6), atol=1e-6)
    step = decode_step_by_step(layer, np.ones((2, 5, 6), "float32"))
    assert_all_close(step, layer(np.ones((2, 5, 6), "float32")), atol=1e-6)


def test_unknown_layout_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^`layout` must be one of .*'sines'") as e:
        SinusoidalPositionalEncoding(layout="sines")
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="`layout`"):
        sinusoidal_encoding(4, 4, layout="sines")
