"""Tests for `keras_seq.layers.ScoreAttention` (Sec. 7.4, Eq. 7.20-7.21).

Shape legend: B batch, T query length, S key length, Q query width,
K key width, V value width, U score units.
"""

import keras
import numpy as np
import pytest
from keras import ops

from keras_seq.layers import ScoreAttention
from keras_seq.testing import assert_all_close, run_layer_test

SCORES = ("dot", "scaled_dot", "general", "additive", "concat")
DOT_SCORES = ("dot", "scaled_dot")
UNITS = 5

# Masks used across tests: the first batch item has one padded key (3) in
# the middle and one padded query (2); the second has a short source.
QUERY_MASK = np.array([[True, True, False], [True, True, True]])
VALUE_MASK = np.array(
    [[True, True, True, False, True], [True, True, False, False, False]]
)


def _random(shape, seed, dtype="float32"):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def _inputs(score, batch=2, query_length=3, key_length=5):
    """Query (B, T, Q), key (B, S, K) and value (B, S, V) with K != V.

    The dot scores need Q == K; the others get a wider query. Most tests use
    these shapes, so that JAX reuses the operations it compiled.
    """
    query_dim = 4 if score in DOT_SCORES else 6
    query = _random((batch, query_length, query_dim), 0)
    key = _random((batch, key_length, 4), 1)
    value = _random((batch, key_length, 3), 2)
    return query, key, value


def _randomize_weights(layer, seed=3):
    """Non-default weights, so that e.g. the concat bias is not zero."""
    rng = np.random.default_rng(seed)
    layer.set_weights(
        [0.5 * rng.normal(size=w.shape).astype("float32") for w in layer.weights]
    )


def _named_weights(layer):
    """{"query_projection/kernel": array, ...} from the layer's weights."""
    return {
        w.path.split("/", 1)[1]: np.asarray(ops.convert_to_numpy(w), "float64")
        for w in layer.weights
    }


# A plain numpy implementation of Eq. (7.20) and (7.21).


def _reference_scores(score, weights, query, key):
    """s(q, k) for every pair, (B, T, S), written without the layer's tricks."""
    q, k = query.astype("float64"), key.astype("float64")
    if score == "dot":
        return np.einsum("btk,bsk->bts", q, k)
    if score == "scaled_dot":
        return np.einsum("btk,bsk->bts", q, k) / np.sqrt(k.shape[-1])
    if score == "general":
        w = weights["general_kernel/kernel"]  # (Q, K)
        return np.einsum("btq,qk,bsk->bts", q, w, k)
    if score == "additive":
        w_q = weights["query_projection/kernel"]  # (Q, U)
        w_k = weights["key_projection/kernel"]  # (K, U)
        hidden = np.tanh((q @ w_q)[:, :, None, :] + (k @ w_k)[:, None, :, :])
        return hidden @ weights["score_vector/kernel"]
    # concat: really concatenate every (q, k) pair, (B, T, S, Q + K).
    t, s = q.shape[1], k.shape[1]
    pairs = np.concatenate(
        [
            np.repeat(q[:, :, None, :], s, axis=2),
            np.repeat(k[:, None, :, :], t, axis=1),
        ],
        axis=-1,
    )
    hidden = np.tanh(
        pairs @ weights["concat_projection/kernel"] + weights["concat_projection/bias"]
    )
    return hidden @ weights["score_vector/kernel"]


def _reference(score, weights, query, key, value, mask=None):
    """Weights (B, T, S) and context (B, T, V); rows with no key are 0."""
    scores = _reference_scores(score, weights, query, key)
    if mask is None:
        mask = np.ones(scores.shape, bool)
    mask = np.broadcast_to(mask, scores.shape)
    row_max = np.max(np.where(mask, scores, -np.inf), axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    exp = np.where(mask, np.exp(scores - row_max), 0.0)
    total = exp.sum(-1, keepdims=True)
    alpha = np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)
    return alpha, alpha @ value.astype("float64")


def _padding_attention_mask(query_mask, value_mask):
    return query_mask[:, :, None] & value_mask[:, None, :]  # (B, T, S)


# The shared harness.


HARNESS_CASES = [
    # score, extra init kwargs, trainable weights, parameters; with Q = 6
    # (4 for the dot scores), K = 4, V = 3.
    pytest.param("dot", {}, 0, 0),
    pytest.param("scaled_dot", {}, 0, 0),
    # W: 6 * 4.
    pytest.param("general", {}, 1, 24),
    # W_q 6 * 5 + W_k 4 * 5 + v 5.
    pytest.param("additive", {"units": UNITS}, 3, 55),
    # W (6 + 4) * 5 + b 5 + v 5.
    pytest.param("concat", {"units": UNITS}, 3, 60),
]


def _run_harness(score, extra_kwargs, num_weights, num_params, step=False, **flags):
    query, key, value = _inputs(score)
    if step:
        query = query[:, 0]  # (B, Q)
    prefix = query.shape[:-1]  # (B, T) or (B,)
    run_layer_test(
        ScoreAttention,
        init_kwargs={"score": score, "dropout": 0.1, **extra_kwargs},
        input_data={"query": query, "value": value, "key": key},
        expected_output_shape=[prefix + value.shape[-1:], prefix + value.shape[1:2]],
        expected_num_trainable_weights=num_weights,
        expected_num_params=num_params,
        **flags,
    )


@pytest.mark.parametrize("score, extra_kwargs, num_weights, num_params", HARNESS_CASES)
def test_layer_harness(score, extra_kwargs, num_weights, num_params):
    _run_harness(score, extra_kwargs, num_weights, num_params)


# The variants below differ from the cases above only in shapes: check the
# config, calls, counts and saving, not training and precision again.
SHAPE_ONLY = {"run_training_check": False, "run_precision_checks": False}


def test_layer_harness_units_default_to_key_width():
    # U = K = 4, not V = 3: W_q 6 * 4 + W_k 4 * 4 + v 4.
    _run_harness("additive", {}, 3, 44, **SHAPE_ONLY)


def test_layer_harness_single_step_query():
    # A rank-2 query (B, Q): W (6 + 4) * 5 + b 5 + v 5.
    _run_harness("concat", {"units": UNITS}, 3, 60, step=True, **SHAPE_ONLY)


# Numbers.


@pytest.mark.parametrize("masked", [False, True], ids=["no_mask", "mask"])
@pytest.mark.parametrize("score", SCORES)
def test_matches_numpy_reference(score, masked):
    query, key, value = _inputs(score)
    layer = ScoreAttention(score=score, units=UNITS)
    layer(query, value, key=key)
    _randomize_weights(layer)
    masks = {}
    mask = None
    if masked:
        masks = {"query_mask": QUERY_MASK, "value_mask": VALUE_MASK}
        mask = _padding_attention_mask(QUERY_MASK, VALUE_MASK)
    context, weights = layer(query, value, key=key, **masks)
    expected_weights, expected_context = _reference(
        score, _named_weights(layer), query, key, value, mask
    )
    assert_all_close(weights, expected_weights, atol=1e-5, msg="weights")
    assert_all_close(context, expected_context, atol=1e-5, msg="context")
    if masked:
        # Exactly zero where masked; each row with a key sums to one.
        weights = ops.convert_to_numpy(weights)
        assert np.all(weights[~mask] == 0.0)
        has_key = mask.any(-1)
        np.testing.assert_allclose(weights.sum(-1)[has_key], 1.0, atol=1e-6)


@pytest.mark.parametrize("query_length, key_length", [(3, 3), (3, 5)])
def test_causal_mask_is_bottom_right_aligned(query_length, key_length):
    query, key, value = _inputs("general", 2, query_length, key_length)
    layer = ScoreAttention(score="general")
    context, weights = layer(query, value, key=key, use_causal_mask=True)
    # Query t sits at position t + S - T and sees keys s <= t + S - T.
    offset = key_length - query_length
    causal = np.arange(key_length)[None, :] <= np.arange(query_length)[:, None] + offset
    expected_weights, expected_context = _reference(
        "general", _named_weights(layer), query, key, value, causal[None]
    )
    assert_all_close(weights, expected_weights, atol=1e-5)
    assert_all_close(context, expected_context, atol=1e-5)
    assert np.all(ops.convert_to_numpy(weights)[:, ~causal] == 0.0)


def test_concat_without_bias_is_additive_with_stacked_matrices():
    # The documented difference: W [q; k] = W_q q + W_k k when W stacks W_q
    # over W_k, so only the bias b separates "concat" from "additive".
    query, key, value = _inputs("additive")
    additive = ScoreAttention(score="additive", units=UNITS)
    additive(query, value, key=key)
    _randomize_weights(additive)
    named = _named_weights(additive)
    concat = ScoreAttention(score="concat", units=UNITS)
    concat(query, value, key=key)
    kernel = np.concatenate(
        [named["query_projection/kernel"], named["key_projection/kernel"]]
    )
    concat.set_weights([kernel, np.zeros(UNITS), named["score_vector/kernel"]])
    assert_all_close(
        concat(query, value, key=key), additive(query, value, key=key), 1e-6
    )
    concat.set_weights([kernel, np.full(UNITS, 0.5), named["score_vector/kernel"]])
    _, shifted = concat(query, value, key=key)
    _, reference = additive(query, value, key=key)
    assert not np.allclose(ops.convert_to_numpy(shifted), reference)


@pytest.mark.parametrize("score", DOT_SCORES)
def test_dot_scores_match_keras_attention(score):
    # keras.layers.Attention scores q . k; scaled_dot also divides by sqrt(K).
    # (keras.layers.AdditiveAttention parametrizes its score differently
    # from Bahdanau's, so there is no parity test for "additive".)
    query, key, value = _inputs(score)  # Q == K == 4, V == 3
    context, weights = ScoreAttention(score=score)(query, value, key=key)
    scale = 1.0 if score == "dot" else 1.0 / np.sqrt(4.0)
    expected = keras.layers.Attention(use_scale=False)(
        [query * scale, value, key], return_attention_scores=True
    )
    assert_all_close((context, weights), expected, atol=1e-6)


def test_dropout_acts_on_weights_only_in_training():
    query, key, value = _inputs("additive")
    layer = ScoreAttention(score="additive", dropout=0.5)
    inference = layer(query, value, key=key, training=False)
    train_context, train_weights = layer(query, value, key=key, training=True)
    # The returned weights are taken before dropout.
    assert_all_close(train_weights, inference[1], atol=1e-6)
    assert not np.allclose(ops.convert_to_numpy(train_context), inference[0])


# Masks.


@pytest.mark.parametrize("score", SCORES)
def test_padding_invariance(score):
    query, key, value = _inputs(score)
    layer = ScoreAttention(score=score)
    expected = layer(query, value, key=key, value_mask=VALUE_MASK)
    # New content, some of it large, at the padded positions only.
    padded = ~VALUE_MASK[:, :, None]
    noisy_key = np.where(padded, 100.0 * _random(key.shape, 7), key)
    noisy_value = np.where(padded, 100.0 * _random(value.shape, 8), value)
    actual = layer(query, noisy_value, key=noisy_key, value_mask=VALUE_MASK)
    assert_all_close(actual, expected, atol=1e-6)


def _loss_and_input_gradients(layer, query, value, call_kwargs):
    """A loss over both outputs and its gradients for query and value."""
    backend = keras.backend.backend()
    # Fixed random cotangents, so that no gradient vanishes by symmetry.
    context_weight = _random((2, 3, value.shape[-1]), 11)
    weights_weight = _random((2, 3, value.shape[1]), 12)

    def forward(q, v):
        context, weights = layer(q, v, **call_kwargs)
        loss = ops.sum(ops.multiply(ops.cast(context, "float32"), context_weight))
        loss += ops.sum(ops.multiply(ops.cast(weights, "float32"), weights_weight))
        return loss, (context, weights)

    if backend == "tensorflow":
        import tensorflow as tf

        q, v = tf.constant(query), tf.constant(value)
        with tf.GradientTape() as tape:
            tape.watch([q, v])
            loss, outputs = forward(q, v)
        grads = tape.gradient(loss, [q, v])
    elif backend == "jax":
        import jax

        # One compiled function instead of op-by-op dispatch: faster here.
        grad_fn = jax.jit(jax.grad(forward, argnums=(0, 1), has_aux=True))
        grads, outputs = grad_fn(query, value)
    else:
        import torch

        q, v = (
            ops.convert_to_tensor(x).detach().requires_grad_(True)
            for x in (query, value)
        )
        loss, outputs = forward(q, v)
        grads = torch.autograd.grad(loss, [q, v])
    to_numpy = lambda x: np.asarray(  # noqa: E731
        ops.convert_to_numpy(ops.cast(x, "float32"))
    )
    return [to_numpy(o) for o in outputs], [to_numpy(g) for g in grads]


# Every score in float32; the low-precision dtypes with a score without
# weights and one with them (the masking path is shared by all scores).
ZERO_ROW_CASES = [(score, "float32") for score in SCORES] + [
    (score, dtype) for score in ("dot", "additive") for dtype in ("float16", "bfloat16")
]


@pytest.mark.parametrize("score, dtype", ZERO_ROW_CASES)
def test_fully_masked_rows_give_zeros_and_zero_gradients(score, dtype):
    # Q == K so that every score applies; the second batch item has no key
    # at all, and query 2 of the first is padding.
    query, key, value = _inputs("dot")
    layer = ScoreAttention(score=score, units=UNITS, dtype=dtype)
    layer(query, value, key=key)
    _randomize_weights(layer)
    value_mask = VALUE_MASK.copy()
    value_mask[1] = False
    masks = {
        "key": ops.cast(key, dtype),
        "query_mask": QUERY_MASK,
        "value_mask": value_mask,
    }
    query = ops.cast(query, dtype)
    value = ops.cast(value, dtype)
    (context, weights), (grad_query, grad_value) = _loss_and_input_gradients(
        layer, query, value, masks
    )
    for array in (context, weights, grad_query, grad_value):
        assert np.all(np.isfinite(array))
    no_key = ~_padding_attention_mask(QUERY_MASK, value_mask).any(-1)  # (B, T)
    assert np.all(context[no_key] == 0.0) and np.all(weights[no_key] == 0.0)
    assert np.all(grad_query[no_key] == 0.0)
    assert np.all(grad_value[1] == 0.0)
    # The rows that may attend do get gradients.
    assert np.any(grad_query[~no_key] != 0.0)
    assert np.any(grad_value[0] != 0.0)


def test_implicit_value_mask_matches_explicit():
    ids = np.array([[3, 1, 4, 0, 0], [2, 7, 1, 8, 0]], "int32")  # 0 = padding
    query = _random((2, 3, 6), 0)
    embedding = keras.layers.Embedding(10, 4, mask_zero=True)
    layer = ScoreAttention(score="additive")
    query_input = keras.Input((3, 6), name="query")
    ids_input = keras.Input((5,), dtype="int32", name="ids")
    outputs = layer(query_input, embedding(ids_input))
    model = keras.Model([query_input, ids_input], outputs)
    implicit = model([query, ids])

    # Same layers, called eagerly on a plain tensor with no mask attached.
    value = ops.convert_to_tensor(ops.convert_to_numpy(embedding(ids)))
    explicit = layer(query, value, value_mask=ids != 0)
    unmasked = layer(query, value)
    assert_all_close(implicit, explicit, atol=1e-6)
    assert not np.allclose(ops.convert_to_numpy(unmasked[1]), explicit[1])


def test_implicit_query_mask_matches_explicit_and_propagates():
    # Masking marks the all-zero query step 1 as padding; the output mask is
    # the query mask, so a masked mean skips that step.
    query = _random((2, 3, 6), 0)
    query[:, 1] = 0.0
    value = _random((2, 5, 4), 1)
    layer = ScoreAttention(score="concat")
    query_input = keras.Input((3, 6))
    value_input = keras.Input((5, 4))
    context, weights = layer(keras.layers.Masking(0.0)(query_input), value_input)
    pooled = keras.layers.GlobalAveragePooling1D()(context)
    model = keras.Model([query_input, value_input], [context, weights, pooled])
    implicit_context, implicit_weights, pooled = model([query, value])

    query_mask = np.array([[True, False, True]] * 2)
    explicit = layer(query, value, query_mask=query_mask)
    assert_all_close((implicit_context, implicit_weights), explicit, atol=1e-6)
    explicit_context = ops.convert_to_numpy(explicit[0])
    assert np.all(explicit_context[:, 1] == 0.0)
    expected_pooled = explicit_context[:, [0, 2]].mean(axis=1)
    assert_all_close(pooled, expected_pooled, atol=1e-6)


@pytest.mark.parametrize("score", SCORES)
def test_rank2_query_equals_one_step_sequence(score):
    query, key, value = _inputs(score)
    query = query[:, :1]  # (B, 1, Q)
    layer = ScoreAttention(score=score)
    step_mask = VALUE_MASK[:, None, :]  # (B, 1, S)
    sequence = layer(query, value, key=key, attention_mask=step_mask)
    context, weights = layer(query[:, 0], value, key=key, attention_mask=VALUE_MASK)
    assert tuple(context.shape) == (2, 3) and tuple(weights.shape) == (2, 5)
    assert_all_close((context, weights), (sequence[0][:, 0], sequence[1][:, 0]))
    step = layer(
        query[:, 0],
        value,
        key=key,
        query_mask=np.array([True, False]),
        value_mask=VALUE_MASK,
    )
    assert_all_close(step[0][0], context[0], atol=1e-6)
    assert np.all(ops.convert_to_numpy(step[1])[1] == 0.0)


# Errors.


def test_unknown_score_is_refused():
    with pytest.raises(ValueError, match=r"`score` must be one of .*'cosine'"):
        ScoreAttention(score="cosine")


@pytest.mark.parametrize(
    "kwargs, pattern",
    [({"units": 0}, "`units`"), ({"dropout": 1.0}, "`dropout`")],
)
def test_bad_hyperparameters_are_refused(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        ScoreAttention(**kwargs)


@pytest.mark.parametrize("score", DOT_SCORES)
def test_dot_scores_need_equal_widths(score):
    with pytest.raises(ValueError, match=r"query width 6 .*key width 4"):
        ScoreAttention(score=score)(_random((2, 3, 6), 0), _random((2, 5, 4), 1))


@pytest.mark.parametrize(
    "shapes, pattern",
    [
        ({"query": (2, 3, 4, 1)}, r"`query` must have rank 3"),
        ({"value": (2, 4)}, r"`value` must have rank 3"),
        ({"key": (2, 5)}, r"`key` must have rank 3"),
        ({"key": (2, 6, 4)}, r"`key` and `value` must have the same length"),
    ],
)
def test_bad_shapes_are_refused(shapes, pattern):
    shapes = {"query": (2, 3, 4), "value": (2, 5, 4), **shapes}
    inputs = {name: _random(shape, 0) for name, shape in shapes.items()}
    with pytest.raises(ValueError, match=pattern):
        ScoreAttention(score="additive")(**inputs)


@pytest.mark.parametrize(
    "query_shape, masks, pattern",
    [
        ((2, 3, 4), {"value_mask": np.ones((2, 4), bool)}, "`value_mask`"),
        ((2, 3, 4), {"query_mask": np.ones((2, 5), bool)}, "`query_mask`"),
        (
            (2, 3, 4),
            {"attention_mask": np.ones((2, 5, 3), bool)},
            "`attention_mask`",
        ),
        (
            (2, 4),
            {"attention_mask": np.ones((2, 3, 5), bool)},
            "`attention_mask`",
        ),
        ((2, 4), {"query_mask": np.ones((2, 3), bool)}, "`query_mask`"),
    ],
)
def test_bad_mask_shapes_are_refused(query_shape, masks, pattern):
    layer = ScoreAttention(score="general")
    query, value = _random(query_shape, 0), _random((2, 5, 4), 1)
    with pytest.raises(ValueError, match=pattern):
        layer(query, value, **masks)
