import keras
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from keras import ops

from keras_seq import masks
from keras_seq.layers import MultiHeadAttention
from keras_seq.testing import (
    assert_all_close,
    input_gradient,
    run_layer_test,
)

B, T, S, D, N, H = 2, 5, 7, 8, 2, 4
IMPLEMENTATIONS = ["fused", "explicit"]


def _random(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def _padding(lengths, length):
    return np.arange(length)[None, :] < np.asarray(lengths)[:, None]


def _pair(implementation="explicit", use_bias=True, **kwargs):
    """Our layer and keras' with identical weights."""
    reference = keras.layers.MultiHeadAttention(
        num_heads=N, key_dim=H, use_bias=use_bias, **kwargs
    )
    ours = MultiHeadAttention(
        num_heads=N,
        key_dim=H,
        use_bias=use_bias,
        attention_implementation=implementation,
        **kwargs,
    )
    q, v = _random(B, T, D), _random(B, S, D, seed=1)
    reference(q, v)
    ours(q, v)
    ours.set_weights(reference.get_weights())
    return ours, reference


@pytest.mark.parametrize("use_bias", [True, False])
def test_layer_harness(use_bias):
    params = 4 * D * N * H + (3 * N * H + D if use_bias else 0)
    run_layer_test(
        MultiHeadAttention,
        init_kwargs={"num_heads": N, "key_dim": H, "use_bias": use_bias},
        input_data={
            "query": _random(B, T, D),
            "value": _random(B, S, D, seed=1),
        },
        expected_output_shape=(B, T, D),
        expected_num_trainable_weights=8 if use_bias else 4,
        expected_num_params=params,
    )


def test_harness_with_scores_and_dropout():
    run_layer_test(
        MultiHeadAttention,
        init_kwargs={
            "num_heads": N,
            "key_dim": H,
            "value_dim": 3,
            "dropout": 0.1,
        },
        input_data={
            "query": _random(B, T, D),
            "value": _random(B, S, 6, seed=1),
        },
        call_kwargs={"return_attention_scores": True},
        expected_output_shape=[(B, T, D), (B, N, T, S)],
        expected_num_trainable_weights=8,
        # query, key (width 6), value (width 6, V=3), output projections.
        expected_num_params=(D + 1) * N * H
        + (6 + 1) * N * H
        + (6 + 1) * N * 3
        + N * 3 * D
        + D,
    )


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("use_bias", [True, False])
def test_parity_with_keras_unmasked(implementation, use_bias):
    ours, reference = _pair(implementation, use_bias)
    q, v = _random(B, T, D, seed=3), _random(B, S, D, seed=4)
    assert_all_close(ours(q, v), reference(q, v), atol=1e-5)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_parity_with_keras_masked(implementation):
    ours, reference = _pair(implementation)
    q, v = _random(B, T, D, seed=3), _random(B, S, D, seed=4)
    query_mask = _padding([5, 3], T)
    value_mask = _padding([7, 2], S)
    expected = reference(q, v, query_mask=query_mask, value_mask=value_mask)
    actual = ours(q, v, query_mask=query_mask, value_mask=value_mask)
    # Keras lets padded queries attend uniformly; ours returns zeros there.
    real = query_mask[:, :, None]
    assert_all_close(np.where(real, actual, 0), np.where(real, expected, 0), 1e-5)
    assert np.all(np.asarray(actual)[~query_mask] == 0)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_parity_with_keras_attention_mask_and_causal(implementation):
    ours, reference = _pair(implementation)
    x = _random(B, T, D, seed=5)
    attention_mask = np.random.default_rng(0).random((B, T, T)) > 0.3
    attention_mask[:, :, 0] = True  # Every query keeps a key.
    expected = reference(x, x, attention_mask=attention_mask, use_causal_mask=True)
    actual = ours(x, x, attention_mask=attention_mask, use_causal_mask=True)
    assert_all_close(actual, expected, atol=1e-5)


def test_fused_and_explicit_paths_agree():
    fused, _ = _pair("fused")
    explicit = MultiHeadAttention(N, H, attention_implementation="explicit")
    q, v = _random(B, T, D), _random(B, S, D, seed=1)
    explicit(q, v)
    explicit.set_weights(fused.get_weights())
    mask = np.random.default_rng(1).random((B, T, S)) > 0.5
    mask[0, 1] = False  # A fully masked row.
    assert_all_close(
        fused(q, v, attention_mask=mask),
        explicit(q, v, attention_mask=mask),
        1e-6,
    )


def test_scores_are_masked_softmax_weights():
    layer = MultiHeadAttention(N, H)
    q, v = _random(B, T, D), _random(B, S, D, seed=1)
    value_mask = _padding([4, 7], S)
    _, scores = layer(q, v, value_mask=value_mask, return_attention_scores=True)
    scores = np.asarray(scores)
    assert scores.shape == (B, N, T, S)
    np.testing.assert_allclose(scores.sum(-1), 1.0, atol=1e-6)
    assert np.all(scores[0, :, :, 4:] == 0)


def test_implicit_mask_equals_explicit_mask():
    ids = np.array([[3, 4, 5, 0, 0], [6, 7, 0, 0, 0]])
    embedding = keras.layers.Embedding(10, D, mask_zero=True)
    layer = MultiHeadAttention(N, H)
    inputs = keras.Input((T,), dtype="int32")
    x = embedding(inputs)
    model = keras.Model(inputs, layer(x, x))
    implicit = model(ids)
    vectors = ops.convert_to_tensor(np.asarray(embedding(ids)))  # No mask.
    mask = ids != 0
    explicit = layer(vectors, vectors, query_mask=mask, value_mask=mask)
    assert_all_close(implicit, explicit, atol=1e-6)
    unmasked = layer(vectors, vectors)
    assert not np.allclose(np.asarray(unmasked), np.asarray(implicit))


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_cached_decoding_equals_causal_pass(implementation):
    layer = MultiHeadAttention(N, H, attention_implementation=implementation)
    x = _random(B, T, D)
    full = layer(x, x, use_causal_mask=True)
    cache = np.zeros((B, 2, N, T, H), "float32")
    steps = []
    for t in range(T):
        out, cache = layer(
            x[:, t : t + 1],
            x[:, t : t + 1],
            cache=cache,
            cache_update_index=t,
            use_causal_mask=True,
        )
        steps.append(np.asarray(out))
    assert_all_close(np.concatenate(steps, axis=1), full, atol=1e-5)


@pytest.mark.parametrize("value_dim", [3, 6])
def test_cached_decoding_with_unequal_head_widths(value_dim):
    """Keys and values share one stacked cache, the narrower zero-padded
    to `cache_width`: step by step, and a fixed source cache, equal the
    full passes."""
    layer = MultiHeadAttention(N, H, value_dim=value_dim)
    x, z = _random(B, T, D), _random(B, S, D, seed=1)
    full = layer(x, x, use_causal_mask=True)
    assert layer.cache_shape(B, T) == (B, 2, N, T, max(H, value_dim))
    cache = np.zeros(layer.cache_shape(B, T), "float32")
    steps = []
    for t in range(T):
        out, cache = layer(
            x[:, t : t + 1],
            x[:, t : t + 1],
            cache=cache,
            cache_update_index=t,
            use_causal_mask=True,
        )
        steps.append(np.asarray(out))
    assert_all_close(np.concatenate(steps, axis=1), full, atol=1e-5)
    mask = _padding([7, 4], S)
    out, _ = layer(x, None, value_mask=mask, cache=layer.compute_cache(z))
    assert_all_close(out, layer(x, z, value_mask=mask), atol=1e-5)


def test_cache_prefill_then_step():
    layer = MultiHeadAttention(N, H)
    x = _random(B, T, D)
    full = np.asarray(layer(x, x, use_causal_mask=True))
    cache = np.zeros((B, 2, N, T, H), "float32")
    out, cache = layer(
        x[:, :3],
        x[:, :3],
        cache=cache,
        cache_update_index=0,
        use_causal_mask=True,
    )
    assert_all_close(out, full[:, :3], atol=1e-5)
    out, cache = layer(
        x[:, 3:4],
        x[:, 3:4],
        cache=cache,
        cache_update_index=3,
        use_causal_mask=True,
    )
    assert_all_close(out, full[:, 3:4], atol=1e-5)


def test_cache_holds_keys_and_values_heads_first():
    layer = MultiHeadAttention(N, H)
    x, z = _random(B, T, D), _random(B, S, D, seed=1)
    assert layer.cache_shape(B, T) == (B, 2, N, T, H)
    _, cache = layer(
        x, x, cache=np.zeros(layer.cache_shape(B, T), "float32"), cache_update_index=0
    )
    keys = np.asarray(layer._key_dense(x))  # (B, T, N, H)
    values = np.asarray(layer._value_dense(x))
    cache = np.asarray(cache)
    assert cache.shape == (B, 2, N, T, H)
    assert_all_close(cache[:, 0], keys.transpose(0, 2, 1, 3), atol=1e-6)
    assert_all_close(cache[:, 1], values.transpose(0, 2, 1, 3), atol=1e-6)
    fixed = np.asarray(layer.compute_cache(z))
    assert fixed.shape == (B, 2, N, S, H)
    assert_all_close(
        fixed[:, 0], np.asarray(layer._key_dense(z)).transpose(0, 2, 1, 3), atol=1e-6
    )


def test_fixed_cache_equals_cross_attention():
    layer = MultiHeadAttention(N, H)
    q, v = _random(B, T, D), _random(B, S, D, seed=1)
    mask = _padding([7, 4], S)
    expected = layer(q, v, value_mask=mask)
    cache = layer.compute_cache(v)
    out, _ = layer(q[:, :2], None, value_mask=mask, cache=cache)
    assert_all_close(out, np.asarray(expected)[:, :2], atol=1e-5)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_fully_masked_row_gives_zeros_and_zero_gradient(implementation, dtype):
    layer = MultiHeadAttention(
        N, H, attention_implementation=implementation, dtype=dtype
    )
    q, v = _random(B, T, D), _random(B, S, D, seed=1)
    mask = np.ones((B, T, S), bool)
    mask[0, 2, :] = False  # Query 2 of example 0 sees no key.
    layer(q, v)

    def query_fn(x):
        return layer(x, ops.cast(v, dtype), attention_mask=mask)

    def value_fn(x):
        out = layer(ops.cast(q, dtype), x, attention_mask=mask)
        return out[0, 2]  # Only the masked row: it depends on no value.

    output = np.asarray(ops.cast(query_fn(ops.cast(q, dtype)), "float32"))
    assert np.all(np.isfinite(output))
    assert np.all(output[0, 2] == 0)
    assert np.any(output[0, 1] != 0)
    grad_q = input_gradient(query_fn, ops.cast(q, dtype))
    assert np.all(np.isfinite(grad_q))
    assert np.all(grad_q[0, 2] == 0)
    grad_v = input_gradient(value_fn, ops.cast(v, dtype))
    assert np.all(np.isfinite(grad_v))
    assert np.all(grad_v == 0)


@given(
    lengths=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    extra=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_padding_invariance(lengths, extra, seed):
    """Real positions ignore how much padding follows and what it holds."""
    layer = MultiHeadAttention(N, H, attention_implementation="explicit")
    batch, short = len(lengths), max(lengths)
    x = _random(batch, short + extra, D, seed=seed)
    mask = _padding(lengths, short + extra)
    noisy = np.where(mask[:, :, None], x, _random(*x.shape, seed=seed + 1))
    long_out = np.asarray(layer(noisy, noisy, query_mask=mask, value_mask=mask))
    trimmed = x[:, :short]
    short_out = np.asarray(
        layer(
            trimmed,
            trimmed,
            query_mask=mask[:, :short],
            value_mask=mask[:, :short],
        )
    )
    for i, length in enumerate(lengths):
        np.testing.assert_allclose(
            long_out[i, :length], short_out[i, :length], atol=1e-5
        )


@given(
    length=st.integers(2, 8),
    position=st.integers(0, 7),
    seed=st.integers(0, 2**16),
)
def test_causality(length, position, seed):
    """Outputs before `position` do not change when later tokens change."""
    position = position % length
    layer = MultiHeadAttention(N, H)
    x = _random(2, length, D, seed=seed)
    changed = x.copy()
    changed[:, position:] = _random(2, length - position, D, seed=seed + 1)
    a = np.asarray(layer(x, x, use_causal_mask=True))
    b = np.asarray(layer(changed, changed, use_causal_mask=True))
    np.testing.assert_allclose(a[:, :position], b[:, :position], atol=1e-5)
    if position < length:
        assert not np.allclose(a[:, position:], b[:, position:])


def test_causal_mask_with_cache_is_bottom_right_aligned():
    mask = np.asarray(masks.causal_mask(2, 5))
    np.testing.assert_array_equal(
        mask, [[True, True, True, True, False], [True, True, True, True, True]]
    )


class TestErrors:
    def test_wrong_rank(self):
        layer = MultiHeadAttention(N, H)
        with pytest.raises(ValueError, match="`query` must have rank 3"):
            layer(_random(B, D), _random(B, S, D))

    def test_key_value_lengths(self):
        layer = MultiHeadAttention(N, H)
        with pytest.raises(ValueError, match="`key` and `value`.*same length"):
            layer(_random(B, T, D), _random(B, S, D), key=_random(B, S + 1, D))

    def test_mask_shape(self):
        layer = MultiHeadAttention(N, H)
        with pytest.raises(ValueError, match=r"`attention_mask` must have shape"):
            layer(
                _random(B, T, D),
                _random(B, S, D),
                attention_mask=np.ones((B, T, S + 1), bool),
            )
        with pytest.raises(ValueError, match=r"`value_mask` must have shape"):
            layer(
                _random(B, T, D),
                _random(B, S, D),
                value_mask=np.ones((B, T), bool),
            )

    @pytest.mark.parametrize(
        "kwargs, name",
        [
            ({"num_heads": 0, "key_dim": 4}, "num_heads"),
            ({"num_heads": 2, "key_dim": 2.5}, "key_dim"),
            ({"num_heads": 2, "key_dim": 4, "dropout": 1.5}, "dropout"),
            (
                {"num_heads": 2, "key_dim": 4, "attention_implementation": "x"},
                "attention_implementation",
            ),
        ],
    )
    def test_constructor(self, kwargs, name):
        with pytest.raises(ValueError, match=f"`{name}`"):
            MultiHeadAttention(**kwargs)

    def test_cache_index_without_cache(self):
        layer = MultiHeadAttention(N, H)
        x = _random(B, T, D)
        with pytest.raises(ValueError, match="`cache_update_index`"):
            layer(x, x, cache_update_index=0)

    def test_cache_shape(self):
        layer = MultiHeadAttention(N, H)
        x = _random(B, 1, D)
        with pytest.raises(ValueError, match="`cache` must have shape"):
            layer(
                x,
                x,
                cache=np.zeros((B, 2, N, T, H + 1), "float32"),
                cache_update_index=0,
            )
        with pytest.raises(ValueError, match="`cache` must have shape"):
            layer(  # Positions before heads: the layout of keras-hub's caches.
                x,
                x,
                cache=np.zeros((B, 2, T, N, H), "float32"),
                cache_update_index=0,
            )


# Habits from keras.layers.MultiHeadAttention.


@pytest.mark.parametrize("value_dim", [3, 6])
def test_values_wider_or_narrower_than_keys_on_both_paths(value_dim):
    """JAX's fused kernel takes values only as wide as the keys: heads of
    other widths go the explicit way, with the same numbers."""
    fused = MultiHeadAttention(N, H, value_dim=value_dim)
    explicit = MultiHeadAttention(
        N, H, value_dim=value_dim, attention_implementation="explicit"
    )
    q, v = _random(B, T, D), _random(B, S, D, seed=1)
    fused(q, v)
    explicit(q, v)
    explicit.set_weights(fused.get_weights())
    mask = _padding([7, 3], S)
    expected = explicit(q, v, value_mask=mask)
    assert tuple(expected.shape) == (B, T, D)
    assert_all_close(fused(q, v, value_mask=mask), expected, 1e-6)


@pytest.mark.parametrize("output_dim", [8.0, -1, "8", 0, True])
def test_output_dim_is_refused_at_construction(output_dim):
    expected = (
        f"`output_dim` must be a positive integer or None; received {output_dim!r}."
    )
    with pytest.raises(ValueError) as refused:
        MultiHeadAttention(N, H, output_dim=output_dim)
    assert str(refused.value) == expected


def _keras_mask(shape, seed=0):
    """A random boolean mask in which every query keeps its first key."""
    mask = np.random.default_rng(seed).random(shape) > 0.4
    mask[..., 0] = True
    return mask


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("shape", [(T, S), (1, T, S), (B, T, S), (B, N, T, S)])
def test_attention_mask_shapes_keras_takes(implementation, shape):
    """(T, S), (1, T, S), (B, T, S) and per head (B, N, T, S): the numbers of
    Keras' layer given the same mask and weights."""
    ours, reference = _pair(implementation)
    q, v = _random(B, T, D, seed=3), _random(B, S, D, seed=4)
    mask = _keras_mask(shape)
    if len(shape) < 4:  # Keras takes a per-head mask as it is.
        expected = reference(q, v, attention_mask=np.broadcast_to(mask, (B, T, S)))
    else:
        expected = reference(q, v, attention_mask=mask)
    assert_all_close(ours(q, v, attention_mask=mask), expected, atol=1e-5)


def test_a_head_without_keys_contributes_nothing_on_both_paths():
    fused, _ = _pair("fused")
    explicit = MultiHeadAttention(N, H, attention_implementation="explicit")
    q, v = _random(B, T, D), _random(B, S, D, seed=1)
    explicit(q, v)
    explicit.set_weights(fused.get_weights())
    mask = _keras_mask((B, N, T, S))
    mask[0, 1, 2] = False  # Query 2 of row 0 has no key in head 1.
    mask[1, :, 3] = False  # Query 3 of row 1 has no key in any head.
    actual = np.asarray(fused(q, v, attention_mask=mask))
    assert_all_close(actual, explicit(q, v, attention_mask=mask), 1e-6)
    assert np.all(actual[1, 3] == 0)
    assert not np.allclose(actual[0, 2], 0)  # Head 0 still attends.


def test_attention_mask_of_another_shape_is_refused():
    layer = MultiHeadAttention(N, H)
    q, v = _random(B, T, D), _random(B, S, D, seed=1)
    with pytest.raises(ValueError) as refused:
        layer(q, v, attention_mask=np.ones((B, N + 1, T, S), bool))
    # Keras adds the layer's name and arguments around the message.
    assert (
        "`attention_mask` must have shape (query_length, key_length), "
        "(batch_size, query_length, key_length) or (batch_size, num_heads, "
        "query_length, key_length), a batch or head axis possibly 1: here "
        f"({T}, {S}), ({B}, {T}, {S}) or ({B}, {N}, {T}, {S}); received "
        f"shape ({B}, {N + 1}, {T}, {S})."
    ) in str(refused.value)


@pytest.mark.parametrize("output_dim", [None, 7])
def test_compute_output_shape_is_the_output_shape(output_dim):
    layer = MultiHeadAttention(N, H, output_dim=output_dim)
    q, v = _random(B, T, D), _random(B, S, 6, seed=1)
    expected = (B, T, output_dim or D)
    assert layer.compute_output_shape(q.shape, v.shape) == expected
    assert tuple(layer(q, v).shape) == expected
    with pytest.raises(ValueError, match="`key` and `value` must have the same"):
        layer.compute_output_shape(q.shape, v.shape, (B, S + 1, 6))


@pytest.mark.parametrize("policy", ["float32", "mixed_float16", "mixed_bfloat16"])
def test_output_spec_under_mixed_precision(policy):
    """The spec Keras asks for in a functional graph, in the compute dtype."""
    layer = MultiHeadAttention(N, H, dtype=policy)
    q, v = keras.KerasTensor((B, T, D)), keras.KerasTensor((B, S, 6))
    output, scores = layer.compute_output_spec(q, v, return_attention_scores=True)
    compute = layer.compute_dtype
    assert (output.shape, output.dtype) == ((B, T, D), compute)
    assert (scores.shape, scores.dtype) == ((B, N, T, S), compute)
    cache = keras.KerasTensor((B, 2, N, 9, H), dtype=compute)
    output, new_cache = layer.compute_output_spec(
        keras.KerasTensor((B, 1, D)), q[:, :1], cache=cache, cache_update_index=0
    )
    assert (output.shape, new_cache.shape) == ((B, 1, D), (B, 2, N, 9, H))


def test_causal_mask_of_a_short_query_is_aligned_to_the_last_key():
    """Keras aligns a (T, S) causal mask to the first key (`j <= i`); ours to
    the last (`j <= S - T + i`), as a query appended to a cache needs."""
    ours, reference = _pair()
    q, v = _random(B, 2, D, seed=3), _random(B, S, D, seed=4)
    bottom_right = np.asarray(masks.causal_mask(2, S))  # (2, S)
    np.testing.assert_array_equal(
        bottom_right, np.arange(S)[None, :] <= (S - 2 + np.arange(2))[:, None]
    )
    actual = ours(q, v, use_causal_mask=True)
    mask = np.broadcast_to(bottom_right, (B, 2, S))
    assert_all_close(actual, reference(q, v, attention_mask=mask), atol=1e-5)
    assert not np.allclose(actual, reference(q, v, use_causal_mask=True), atol=1e-3)
