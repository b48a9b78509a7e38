"""The fast kernels equal the plain einsum formulation of Eq. (7.25)."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_seq import generation, masks
from keras_seq.layers import MultiHeadAttention
from keras_seq.layers import attention_kernels as kernels

B, T, S, N, H = 2, 3, 6, 2, 4


def _random(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def _mask(seed=0):
    """A random (B, T, S) mask in which every query keeps a key."""
    mask = np.random.default_rng(seed).random((B, T, S)) > 0.4
    mask[:, :, 0] = True
    return mask


def _reference(query, keys, values, mask=None):
    """Eq. (7.25) in float64 numpy: scaled scores, softmax, weighted sum."""
    scores = np.einsum("btnh,bsnh->bnts", query, keys) / np.sqrt(H)
    if mask is not None:
        scores = np.where(mask[:, None], scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights = weights / weights.sum(-1, keepdims=True)
    return np.einsum("bnts,bsnv->btnv", weights, values), weights


def _heads_first(keys, values):
    return np.stack([keys.transpose(0, 2, 1, 3), values.transpose(0, 2, 1, 3)], 1)


@pytest.mark.parametrize("use_bias", [True, False])
@pytest.mark.parametrize("shape", [(1, 1), (3, 1), (2, 5)])
def test_projections_equal_their_einsum_layers(use_bias, shape):
    # The layer computes its query, key and value heads as one 2-D matmul
    # over the weights of its `EinsumDense` projections; the heads must be
    # the projections' own outputs, for a single row (a decoding step) too,
    # and inside a compiled function whose shapes are unknown.
    layer = MultiHeadAttention(num_heads=3, key_dim=4, use_bias=use_bias)
    x = np.random.default_rng(0).normal(size=shape + (6,)).astype("float32")
    layer(x, x)
    for dense in (layer._query_dense, layer._key_dense, layer._value_dense):
        if use_bias:
            dense.bias.assign(np.arange(12, dtype="float32").reshape(3, 4) / 7)
        expected = ops.convert_to_numpy(dense(x))
        heads = kernels.project_heads(dense, x)
        assert tuple(heads.shape) == shape + (3, 4)
        np.testing.assert_allclose(ops.convert_to_numpy(heads), expected, atol=1e-6)
        compiled = generation.compile_for_backend(
            lambda t, d=dense: kernels.project_heads(d, t)
        )
        np.testing.assert_allclose(
            ops.convert_to_numpy(compiled(x)), expected, atol=1e-6
        )


def test_projection_equals_the_einsum_formula():
    dense = keras.layers.EinsumDense("btd,dnh->btnh", (None, N, H), bias_axes="nh")
    x = _random(B, T, 5)
    dense.build(x.shape)
    dense.bias.assign(_random(N, H, seed=1))
    kernel, bias = ops.convert_to_numpy(dense.kernel), ops.convert_to_numpy(dense.bias)
    expected = np.einsum("btd,dnh->btnh", x, kernel) + bias
    got = ops.convert_to_numpy(kernels.project_heads(dense, x))
    np.testing.assert_allclose(got, expected, atol=1e-6)


@pytest.mark.parametrize("masked", [False, True])
def test_fused_attention_equals_the_einsum_formula(masked):
    query, keys, values = (
        _random(B, T, N, H),
        _random(B, S, N, H, seed=1),
        _random(B, S, N, H, seed=2),
    )
    mask = _mask() if masked else None
    expected, _ = _reference(query, keys, values, mask)
    got = kernels.fused_attention(
        query, keys, values, None if mask is None else ops.array(mask), 1 / np.sqrt(H)
    )
    np.testing.assert_allclose(ops.convert_to_numpy(got), expected, atol=1e-6)


def test_fused_attention_is_available_in_float32():
    assert kernels.fused_attention_available("float32")


def test_stacked_cache_is_keys_then_values_heads_first():
    keys, values = _random(B, S, N, H), _random(B, S, N, H, seed=1)
    got = ops.convert_to_numpy(kernels.stack_heads_first(keys, values))
    np.testing.assert_array_equal(got, _heads_first(keys, values))


def test_cache_update_writes_at_the_index():
    cache = _random(B, 2, N, S, H)
    new = _random(B, 2, N, 2, H, seed=1)
    got = ops.convert_to_numpy(kernels.update_cache(cache, new, 3))
    expected = cache.copy()
    expected[:, :, :, 3:5] = new
    np.testing.assert_array_equal(got, expected)


def test_cached_scores_and_context_equal_the_einsum_formula():
    query = _random(B, T, N, H)
    cache = _random(B, 2, N, S, H, seed=1)
    scores = ops.convert_to_numpy(kernels.cached_scores(query, cache))
    expected = np.einsum("btnh,bnsh->bnts", query, cache[:, 0])
    np.testing.assert_allclose(scores, expected, atol=1e-6)
    weights = _random(B, N, T, S, seed=2)
    context = ops.convert_to_numpy(kernels.cached_context(weights, cache))
    expected = np.einsum("bnts,bnsv->btnv", weights, cache[:, 1])
    np.testing.assert_allclose(context, expected, atol=1e-6)


@pytest.mark.parametrize("masked", [False, True])
def test_cached_attention_equals_the_einsum_formula(masked):
    query, keys, values = (
        _random(B, T, N, H),
        _random(B, S, N, H, seed=1),
        _random(B, S, N, H, seed=2),
    )
    mask = _mask(seed=3) if masked else None
    expected_context, expected_weights = _reference(query, keys, values, mask)
    cache = kernels.stack_heads_first(keys, values)
    scores = kernels.cached_scores(query, cache) / np.sqrt(H).astype("float32")
    weights = masks.masked_softmax(
        scores, None if mask is None else ops.array(mask)[:, None], "float32"
    )
    context = kernels.cached_context(weights, cache)
    np.testing.assert_allclose(
        ops.convert_to_numpy(weights), expected_weights, atol=1e-6
    )
    np.testing.assert_allclose(
        ops.convert_to_numpy(context), expected_context, atol=1e-6
    )


@pytest.mark.parametrize("shape", [(1, 1), (3, 5)])
def test_tied_logits_equal_the_reverse_embedding(shape):
    """The table contracted as stored gives the transposed table's logits."""
    embedding = keras.layers.ReversibleEmbedding(50, 8, tie_weights=True)
    embedding.build((None, None))
    hidden = np.random.default_rng(0).normal(size=(*shape, 8)).astype("float32")
    expected = ops.convert_to_numpy(embedding(hidden, reverse=True))
    got = ops.convert_to_numpy(
        kernels.tied_logits(ops.convert_to_tensor(hidden), embedding)
    )
    assert got.shape == (*shape, 50)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
