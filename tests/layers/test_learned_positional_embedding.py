import keras
import numpy as np
import pytest
from keras import ops

from keras_seq.layers import LearnedPositionalEmbedding
from keras_seq.testing import assert_all_close, run_layer_test


def built_layer(max_length=6, dim=4, **kwargs):
    layer = LearnedPositionalEmbedding(max_length, **kwargs)
    layer.build((None, None, dim))
    table = np.arange(max_length * dim, dtype="float32").reshape(-1, dim)
    layer.set_weights([table])
    return layer, table


def test_layer():
    run_layer_test(
        LearnedPositionalEmbedding,
        init_kwargs={"max_length": 5},
        input_data=np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32"),
        expected_output_shape=(2, 3, 4),
        expected_num_trainable_weights=1,
        expected_num_params=5 * 4,
    )


def test_layer_with_start_index():
    run_layer_test(
        LearnedPositionalEmbedding,
        init_kwargs={
            "max_length": 5,
            "initializer": keras.initializers.Zeros(),
        },
        input_data=np.zeros((2, 2, 3), dtype="float32"),
        expected_output_shape=(2, 2, 3),
        expected_num_trainable_weights=1,
        expected_num_params=5 * 3,
        call_kwargs={"start_index": 3},
    )


def test_returns_rows_of_the_table_for_every_batch_entry():
    layer, table = built_layer()
    x = np.random.default_rng(1).normal(size=(3, 4, 4)).astype("float32")
    y = layer(x)
    assert_all_close(y, np.broadcast_to(table[:4], (3, 4, 4)))


def test_start_index_gives_rows_of_the_full_table():
    layer, table = built_layer()
    x = np.zeros((2, 6, 4), dtype="float32")
    full = ops.convert_to_numpy(layer(x))
    for k in (0, 2, 5):
        expected = np.broadcast_to(table[k], (2, 1, 4))
        assert_all_close(layer(x[:, :1], start_index=k), expected)
        index = ops.convert_to_tensor(k, dtype="int32")
        assert_all_close(layer(x[:, :1], start_index=index), expected)
        assert_all_close(full[:, k : k + 1], expected)
    assert_all_close(layer(x[:, :3], start_index=2), full[:, 2:5])


def test_traced_start_index_in_a_decoding_loop():
    layer, table = built_layer()
    x = ops.zeros((2, 1, 4))

    def step(i, outputs):
        y = layer(x, start_index=i)  # (B, 1, D)
        return ops.slice_update(outputs, (0, i, 0), y)

    outputs = ops.fori_loop(0, 6, step, ops.zeros((2, 6, 4)))
    assert_all_close(outputs, np.broadcast_to(table, (2, 6, 4)))


def test_gradient_reaches_only_the_used_rows():
    layer, _ = built_layer()
    model = keras.Sequential([keras.Input((2, 4)), layer])
    model.compile(optimizer=keras.optimizers.SGD(1.0), loss="mse")
    before = ops.convert_to_numpy(layer.embeddings).copy()
    model.fit(np.zeros((1, 2, 4), "float32"), np.zeros((1, 2, 4)), verbose=0)
    after = ops.convert_to_numpy(layer.embeddings)
    assert not np.allclose(after[:2], before[:2])
    assert_all_close(after[2:], before[2:])


def test_mask_passes_through():
    ids = np.array([[3, 1, 0], [2, 0, 0]])
    inputs = keras.Input(shape=(3,), dtype="int32")
    x = keras.layers.Embedding(5, 4, mask_zero=True)(inputs)
    positions = LearnedPositionalEmbedding(3)(x)
    pooled = keras.layers.GlobalAveragePooling1D()(positions)
    model = keras.Model(inputs, [positions, pooled])
    positions, pooled = model(ids)
    real = (ids != 0)[..., None]
    expected = (ops.convert_to_numpy(positions) * real).sum(1) / real.sum(1)
    assert_all_close(pooled, expected, atol=1e-6)


def test_too_long_input_is_refused():
    layer = LearnedPositionalEmbedding(4)
    with pytest.raises(ValueError, match=r"max_length=4.*length 5"):
        layer(np.zeros((1, 5, 2), dtype="float32"))
    layer(np.zeros((1, 4, 2), dtype="float32"))  # Exactly max_length is fine.
    with pytest.raises(ValueError, match=r"max_length=4.*needs 5 positions"):
        layer(np.zeros((1, 2, 2), dtype="float32"), start_index=3)
    with pytest.raises(ValueError, match="max_length"):
        LearnedPositionalEmbedding(4)(keras.Input((6, 2)))


def test_invalid_arguments():
    with pytest.raises(ValueError, match="`max_length`"):
        LearnedPositionalEmbedding(0)
    with pytest.raises(ValueError, match="`max_length`"):
        LearnedPositionalEmbedding(None)
    with pytest.raises(ValueError, match="`inputs` must have rank 3"):
        LearnedPositionalEmbedding(4)(np.zeros((2, 3), dtype="float32"))
    with pytest.raises(ValueError, match="`start_index`"):
        LearnedPositionalEmbedding(4)(
            np.zeros((1, 2, 2), dtype="float32"), start_index=-1
        )


def test_symbolic_inputs_are_checked_too():
    layer = LearnedPositionalEmbedding(4)
    with pytest.raises(ValueError, match=r"max_length=4.*needs 5 positions"):
        layer(keras.Input((2, 3)), start_index=3)
