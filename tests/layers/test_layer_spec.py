"""The layers' public specs (`keras_seq.layers.layer_spec`): what a fast
path reads instead of the layers' private sublayers."""

import keras
import numpy as np
import pytest

from keras_seq.layers import (
    MultiHeadAttention,
    PositionwiseFeedForward,
    TokenAndPositionEmbedding,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
    layer_spec,
)
from keras_seq.testing import assert_all_close

B, T, D, N = 2, 5, 8, 2


def _numpy(variable):
    return keras.ops.convert_to_numpy(variable)


def test_attention_spec_holds_the_projections_and_head_widths():
    layer = MultiHeadAttention(N, 3, value_dim=5, use_bias=False)
    x = np.random.default_rng(0).normal(size=(B, T, D)).astype("float32")
    layer(x, x)
    spec = layer.spec()
    assert (spec.num_heads, spec.key_dim, spec.value_dim) == (N, 3, 5)
    assert tuple(spec.query.kernel.shape) == (D, N, 3)
    assert tuple(spec.value.kernel.shape) == (D, N, 5)
    assert tuple(spec.output.kernel.shape) == (N, 5, D)
    assert spec.query.bias is None and spec.refusal is None
    # The spec holds the variables themselves: later updates show through.
    spec.query.kernel.assign(np.zeros((D, N, 3), "float32"))
    np.testing.assert_array_equal(_numpy(layer.spec().query.kernel), 0.0)


def test_blocks_spec_says_norm_placement_epsilon_and_activation():
    encoder = TransformerEncoderBlock(
        N, 16, norm_first=True, layer_norm_epsilon=0.01, activation="gelu"
    )
    encoder(np.zeros((B, T, D), "float32"))
    spec = encoder.spec()
    assert spec.norm_first and spec.cross_attention is None
    assert spec.self_attention_norm.epsilon == pytest.approx(0.01)
    assert spec.feed_forward.activation_name == "gelu"
    assert tuple(spec.feed_forward.inner.kernel.shape) == (D, 16)
    decoder = TransformerDecoderBlock(N, 16)
    decoder(np.zeros((B, T, D), "float32"), np.zeros((B, 3, D), "float32"))
    spec = decoder.spec()
    assert spec.cross_attention.key_dim == D // N
    assert spec.cross_attention_norm.epsilon == pytest.approx(1e-5)
    assert decoder.self_attention_cache_shape(B, 7) == (B, 2, N, 7, D // N)


# Keras deprecates the option; a norm that still has it is refused.
@pytest.mark.filterwarnings("ignore:You passed `rms_scaling=True`")
def test_refusals_name_the_option():
    ffn = PositionwiseFeedForward(16)
    ffn(np.zeros((B, T, D), "float32"))
    assert ffn.spec().inner.refusal is None
    dense = keras.layers.Dense(4)
    dense.build((None, D))
    dense.quantize("int8")
    assert layer_spec.projection_spec(dense).refusal == "quantization_mode='int8'"
    rms = keras.layers.LayerNormalization(rms_scaling=True)
    rms.build((None, T, D))
    assert layer_spec.norm_spec(rms).refusal == "rms_scaling=True"
    assert layer_spec.norm_spec(keras.layers.Identity()).identity
    assert layer_spec.norm_spec(None).identity


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_embedding_spec_position_table_is_what_the_layer_adds(positional):
    layer = TokenAndPositionEmbedding(
        20, 6, D, positional=positional, scale_embeddings=True
    )
    ids = np.array([[3, 4, 5, 6, 7, 8]], "int32")
    out = _numpy(layer(ids))
    spec = layer.spec()
    assert spec.scale == pytest.approx(np.sqrt(D))
    rows = _numpy(spec.table)[ids[0]] * spec.scale  # (T, D)
    table = _numpy(spec.position_table())
    assert table.shape == (6, D)
    assert np.ptp(table) > 0.05
    assert_all_close(rows + table, out[0], atol=1e-5)
