import math

import keras
import numpy as np
import pytest
from keras import ops

from keras_seq.layers import TokenAndPositionEmbedding
from keras_seq.layers.sinusoidal_positional_encoding import (
    sinusoidal_encoding,
)
from keras_seq.testing import assert_all_close, run_layer_test

VOCABULARY_SIZE, MAX_LENGTH, DIM = 10, 6, 4
IDS = np.array([[3, 7, 1, 0, 0], [9, 2, 4, 8, 0]], dtype="int32")


def built_layer(positional="learned", **kwargs):
    layer = TokenAndPositionEmbedding(
        VOCABULARY_SIZE, MAX_LENGTH, DIM, positional=positional, **kwargs
    )
    layer.build((None, None))
    rng = np.random.default_rng(0)
    layer.set_weights(
        [rng.normal(size=w.shape).astype("float32") for w in layer.weights]
    )
    return layer


def positions_of(layer, start, length):
    if layer.positional == "learned":
        table = ops.convert_to_numpy(layer.position_embedding.embeddings)
        return table[start : start + length]
    return ops.convert_to_numpy(sinusoidal_encoding(length, DIM, start_index=start))


@pytest.mark.parametrize(
    "positional, num_weights, num_params",
    [
        ("learned", 2, VOCABULARY_SIZE * DIM + MAX_LENGTH * DIM),
        ("sinusoidal", 1, VOCABULARY_SIZE * DIM),
    ],
)
def test_layer(positional, num_weights, num_params):
    run_layer_test(
        TokenAndPositionEmbedding,
        init_kwargs={
            "vocabulary_size": VOCABULARY_SIZE,
            "max_length": MAX_LENGTH,
            "embedding_dim": DIM,
            "positional": positional,
            "scale_embeddings": True,
        },
        input_data=IDS,
        expected_output_shape=(2, 5, DIM),
        expected_num_trainable_weights=num_weights,
        expected_num_params=num_params,
    )


@pytest.mark.parametrize("positional", ["learned", "sinusoidal"])
def test_output_is_token_plus_position_embedding(positional):
    layer = built_layer(positional)
    tokens = ops.convert_to_numpy(layer.token_embedding.embeddings)[IDS]
    expected = tokens + positions_of(layer, 0, 5)[None]
    assert_all_close(layer(IDS), expected, atol=1e-6)


@pytest.mark.parametrize("positional", ["learned", "sinusoidal"])
def test_scale_embeddings_multiplies_tokens_by_sqrt_dim(positional):
    scaled = built_layer(positional, scale_embeddings=True)
    tokens = ops.convert_to_numpy(scaled.token_embedding.embeddings)[IDS]
    expected = math.sqrt(DIM) * tokens + positions_of(scaled, 0, 5)[None]
    assert_all_close(scaled(IDS), expected, atol=1e-6)
    plain = built_layer(positional, scale_embeddings=False)
    difference = ops.convert_to_numpy(scaled(IDS) - plain(IDS))
    assert_all_close(difference, (math.sqrt(DIM) - 1.0) * tokens, atol=1e-5)


def test_token_embedding_is_exposed_for_weight_tying():
    layer = built_layer()
    assert isinstance(layer.token_embedding, keras.layers.Embedding)
    assert tuple(layer.token_embedding.embeddings.shape) == (
        VOCABULARY_SIZE,
        DIM,
    )
    assert layer.token_embedding.name == "token_embedding"
    assert layer.position_embedding.name == "position_embedding"


@pytest.mark.parametrize("positional", ["learned", "sinusoidal"])
def test_start_index_gives_rows_of_the_full_pass(positional):
    layer = built_layer(positional)
    full = ops.convert_to_numpy(layer(IDS))
    for k in (0, 2, 4):
        step = IDS[:, k : k + 1]
        assert_all_close(layer(step, start_index=k), full[:, k : k + 1])
        index = ops.convert_to_tensor(k, dtype="int32")
        assert_all_close(layer(step, start_index=index), full[:, k : k + 1])

    # A traced start index, as in a compiled decoding loop.
    ids = ops.convert_to_tensor(IDS)

    def step_fn(i, outputs):
        token = ops.slice(ids, (0, i), (2, 1))  # (B, 1)
        return ops.slice_update(outputs, (0, i, 0), layer(token, start_index=i))

    decoded = ops.fori_loop(0, 5, step_fn, ops.zeros((2, 5, DIM)))
    assert_all_close(decoded, full, atol=1e-6)


def test_padding_mask_is_computed():
    layer = built_layer()
    assert_all_close(ops.cast(layer.compute_mask(IDS), "int32"), IDS != 0)
    no_mask = built_layer(mask_zero=False)
    assert no_mask.compute_mask(IDS) is None


@pytest.mark.parametrize("positional", ["learned", "sinusoidal"])
def test_mask_propagates_through_a_functional_model(positional):
    layer = built_layer(positional)
    inputs = keras.Input(shape=(None,), dtype="int32")
    embedded = layer(inputs)
    pooled = keras.layers.GlobalAveragePooling1D()(embedded)
    model = keras.Model(inputs, [embedded, pooled])
    embedded, pooled = model(IDS)
    real = (IDS != 0)[..., None]
    masked_mean = (ops.convert_to_numpy(embedded) * real).sum(1) / real.sum(1)
    assert_all_close(pooled, masked_mean, atol=1e-6)


def test_without_mask_zero_padding_is_averaged():
    layer = built_layer(mask_zero=False)
    inputs = keras.Input(shape=(5,), dtype="int32")
    pooled = keras.layers.GlobalAveragePooling1D()(layer(inputs))
    mean = ops.convert_to_numpy(layer(IDS)).mean(axis=1)
    assert_all_close(keras.Model(inputs, pooled)(IDS), mean, atol=1e-6)


def test_float_token_ids_are_refused():
    layer = TokenAndPositionEmbedding(VOCABULARY_SIZE, MAX_LENGTH, DIM)
    with pytest.raises(ValueError, match=r"`token_ids`.*float32"):
        layer(IDS.astype("float32"))


def test_rank_3_token_ids_are_refused():
    layer = TokenAndPositionEmbedding(VOCABULARY_SIZE, MAX_LENGTH, DIM)
    with pytest.raises(ValueError, match=r"`token_ids` must have rank 2"):
        layer(IDS[..., None])


def test_ids_outside_the_vocabulary_are_refused():
    layer = TokenAndPositionEmbedding(VOCABULARY_SIZE, MAX_LENGTH, DIM)
    with pytest.raises(ValueError, match="vocabulary_size=10"):
        layer(np.array([[1, 10]], dtype="int32"))


@pytest.mark.parametrize("positional", ["learned", "sinusoidal"])
def test_too_long_sequences_are_refused(positional):
    layer = built_layer(positional)
    too_long = np.ones((1, MAX_LENGTH + 1), dtype="int32")
    with pytest.raises(ValueError, match=r"max_length=6.*length 7"):
        layer(too_long)
    layer(too_long[:, :MAX_LENGTH])  # Exactly max_length is fine.
    with pytest.raises(ValueError, match=r"max_length=6.*needs 7 positions"):
        layer(too_long[:, :2], start_index=5)
    with pytest.raises(ValueError, match="max_length"):
        built_layer(positional)(keras.Input((MAX_LENGTH + 1,), dtype="int32"))


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"vocabulary_size": 0}, "vocabulary_size"),
        ({"max_length": -1}, "max_length"),
        ({"embedding_dim": 0}, "embedding_dim"),
        ({"positional": "rotary"}, "positional"),
        ({"positional": "sinusoidal", "embedding_dim": 5}, "embedding_dim"),
        ({"max_wavelength": -1.0}, "max_wavelength"),
    ],
)
def test_invalid_arguments(kwargs, argument):
    arguments = {
        "vocabulary_size": VOCABULARY_SIZE,
        "max_length": MAX_LENGTH,
        "embedding_dim": DIM,
    }
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=f"`{argument}`"):
        TokenAndPositionEmbedding(**arguments)


def test_symbolic_inputs_are_checked_too():
    layer = TokenAndPositionEmbedding(VOCABULARY_SIZE, MAX_LENGTH, DIM)
    with pytest.raises(ValueError, match=r"`token_ids`.*float32"):
        layer(keras.Input((3,), dtype="float32"))
    with pytest.raises(ValueError, match=r"`token_ids` must have rank 2"):
        layer(keras.Input((3, 1), dtype="int32"))
    with pytest.raises(ValueError, match=r"max_length=6.*needs 7 positions"):
        layer(keras.Input((3,), dtype="int32"), start_index=4)


def test_sinusoidal_layout_and_output_bias_round_trip_the_config():
    layer = built_layer(
        "sinusoidal", sinusoidal_layout="concatenated", output_bias=True
    )
    config = layer.get_config()
    assert config["sinusoidal_layout"] == "concatenated"
    assert config["output_bias"] is True
    restored = TokenAndPositionEmbedding.from_config(config)
    restored.build((None, None))
    restored.set_weights(layer.get_weights())
    assert_all_close(restored(IDS), layer(IDS))
    hidden = np.random.default_rng(1).normal(size=(2, 3, DIM)).astype("float32")
    assert_all_close(restored(hidden, reverse=True), layer(hidden, reverse=True))


def test_concatenated_layout_adds_all_sines_then_all_cosines():
    layer = built_layer("sinusoidal", sinusoidal_layout="concatenated")
    table = ops.convert_to_numpy(layer.token_embedding.embeddings)
    code = ops.convert_to_numpy(
        sinusoidal_encoding(IDS.shape[1], DIM, layout="concatenated")
    )
    assert_all_close(layer(IDS), table[IDS] + code[None], atol=1e-6)
    interleaved = ops.convert_to_numpy(sinusoidal_encoding(IDS.shape[1], DIM))
    np.testing.assert_allclose(code, interleaved[:, [0, 2, 1, 3]], atol=1e-7)
    spec = layer.spec()
    assert spec.sinusoidal_layout == "concatenated"
    assert_all_close(spec.position_table()[: IDS.shape[1]], code, atol=1e-6)


def test_output_bias_is_added_to_the_tied_logits_only():
    layer = built_layer(output_bias=True)
    bias = np.arange(VOCABULARY_SIZE, dtype="float32") / 10
    layer.logits_bias.assign(bias)
    table = ops.convert_to_numpy(layer.token_embedding.embeddings)
    hidden = np.random.default_rng(2).normal(size=(2, 3, DIM)).astype("float32")
    assert_all_close(layer(hidden, reverse=True), hidden @ table.T + bias, atol=1e-5)
    # The embedding side is unchanged by the bias.
    positions = positions_of(layer, 0, IDS.shape[1])
    assert_all_close(layer(IDS), table[IDS] + positions[None], atol=1e-6)
    plain = built_layer()
    assert layer.spec().output_bias is layer.logits_bias
    assert plain.spec().output_bias is None
    assert len(layer.trainable_weights) == len(plain.trainable_weights) + 1


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"sinusoidal_layout": "sines"}, "sinusoidal_layout"),
        ({"output_bias": 1}, "output_bias"),
    ],
)
def test_new_options_are_refused_in_one_line(kwargs, argument):
    with pytest.raises(ValueError, match=f"^`{argument}` must be") as e:
        TokenAndPositionEmbedding(VOCABULARY_SIZE, MAX_LENGTH, DIM, **kwargs)
    assert "\n" not in str(e.value)
