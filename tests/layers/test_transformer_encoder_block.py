import keras
import keras_hub
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from keras_seq.layers import TransformerEncoderBlock
from keras_seq.testing import assert_all_close, run_layer_test
from tests.layers.hub_parity import copy_encoder_weights

B, T, D, N, F = 2, 6, 8, 2, 16


def _random(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def _padding(lengths, length):
    return np.arange(length)[None, :] < np.asarray(lengths)[:, None]


@pytest.mark.parametrize("norm_first", [False, True])
def test_layer_harness(norm_first):
    # Attention 4 (D*D + D), feed forward 2*D*F + F + D, two norms 2*2*D.
    params = 4 * (D * D + D) + 2 * D * F + F + D + 4 * D
    run_layer_test(
        TransformerEncoderBlock,
        init_kwargs={"num_heads": N, "ff_dim": F, "norm_first": norm_first},
        input_data=_random(B, T, D),
        expected_output_shape=(B, T, D),
        expected_num_trainable_weights=16,
        expected_num_params=params,
    )


def test_book_parameter_count():
    """Eq. (7.32): p = 512, N_1 = 2048, m = m_v = 64, H = 8, no biases."""
    block = TransformerEncoderBlock(num_heads=8, ff_dim=2048, attention_bias=False)
    block.build((None, 10, 512))
    assert block._self_attention.key_dim == 64
    assert block.count_params() == 3_150_336
    p, n1, m, mv, h = 512, 2048, 64, 64, 8
    assert block.count_params() == (
        4 * p + 2 * n1 * p + n1 + p + h * (2 * m * p + 2 * mv * p)
    )


@pytest.mark.parametrize("norm_first", [False, True])
def test_parity_with_keras_hub(norm_first):
    x = _random(B, T, D, seed=2)
    mask = _padding([6, 3], T)
    hub = keras_hub.layers.TransformerEncoder(
        intermediate_dim=F, num_heads=N, normalize_first=norm_first
    )
    ours = TransformerEncoderBlock(num_heads=N, ff_dim=F, norm_first=norm_first)
    hub(x)
    ours(x)
    copy_encoder_weights(ours, hub)
    assert_all_close(ours(x), hub(x), atol=1e-5)
    # Keras-hub lets padded queries attend; compare real positions.
    expected = np.asarray(hub(x, padding_mask=mask))
    actual = np.asarray(ours(x, padding_mask=mask))
    assert_all_close(actual[mask], expected[mask], atol=1e-5)


def test_implicit_mask_propagates_and_equals_explicit():
    ids = np.array([[3, 4, 5, 0, 0, 0], [6, 7, 8, 9, 2, 0]])
    inputs = keras.Input((T,), dtype="int32")
    embedding = keras.layers.Embedding(10, D, mask_zero=True)
    block = TransformerEncoderBlock(num_heads=N, ff_dim=F)
    x = block(embedding(inputs))
    pooled = keras.layers.GlobalAveragePooling1D()(x)  # Reads the mask.
    model = keras.Model(inputs, [x, pooled])
    implicit, pooled = model(ids)
    vectors = keras.ops.convert_to_tensor(np.asarray(embedding(ids)))
    explicit = np.asarray(block(vectors, padding_mask=ids != 0))
    mask = ids != 0
    assert_all_close(np.asarray(implicit)[mask], explicit[mask], atol=1e-6)
    manual = (explicit * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    assert_all_close(pooled, manual, atol=1e-5)


def test_attention_scores_are_returned():
    block = TransformerEncoderBlock(num_heads=N, ff_dim=F)
    out, scores = block(
        _random(B, T, D),
        padding_mask=_padding([6, 2], T),
        return_attention_scores=True,
    )
    scores = np.asarray(scores)
    assert scores.shape == (B, N, T, T)
    assert np.all(scores[1, :, :2, 2:] == 0)


@given(
    lengths=st.lists(st.integers(1, 5), min_size=1, max_size=3),
    extra=st.integers(1, 3),
    norm_first=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_padding_invariance(lengths, extra, norm_first, seed):
    block = TransformerEncoderBlock(num_heads=N, ff_dim=F, norm_first=norm_first)
    batch, short = len(lengths), max(lengths)
    x = _random(batch, short + extra, D, seed=seed)
    mask = _padding(lengths, short + extra)
    noisy = np.where(mask[..., None], x, _random(*x.shape, seed=seed + 7))
    long_out = np.asarray(block(noisy, padding_mask=mask))
    short_out = np.asarray(block(x[:, :short], padding_mask=mask[:, :short]))
    for i, length in enumerate(lengths):
        np.testing.assert_allclose(
            long_out[i, :length], short_out[i, :length], atol=1e-5
        )


class TestErrors:
    def test_heads_must_divide_width(self):
        block = TransformerEncoderBlock(num_heads=3, ff_dim=F)
        with pytest.raises(ValueError, match="`num_heads` must divide.*width 8"):
            block(_random(B, T, D))

    def test_explicit_key_dim_allows_any_width(self):
        block = TransformerEncoderBlock(num_heads=3, ff_dim=F, key_dim=5)
        assert block(_random(B, T, D)).shape == (B, T, D)

    def test_rank(self):
        block = TransformerEncoderBlock(num_heads=N, ff_dim=F)
        with pytest.raises(ValueError, match="`inputs` must have rank 3"):
            block(_random(B, D))

    def test_padding_mask_shape(self):
        block = TransformerEncoderBlock(num_heads=N, ff_dim=F)
        with pytest.raises(ValueError, match="`padding_mask` must have shape"):
            block(_random(B, T, D), padding_mask=np.ones((B, T + 1), bool))

    @pytest.mark.parametrize(
        "kwargs, name",
        [
            ({"ff_dim": 0}, "ff_dim"),
            ({"dropout": -0.1}, "dropout"),
            ({"key_dim": -1}, "key_dim"),
        ],
    )
    def test_constructor(self, kwargs, name):
        with pytest.raises(ValueError, match=f"`{name}`"):
            TransformerEncoderBlock(**({"num_heads": N, "ff_dim": F} | kwargs))


def test_values_of_another_width_than_keys():
    """`value_dim != key_dim` runs (JAX's fused kernel cannot take it) and
    agrees with the explicit path."""
    x = np.random.default_rng(0).normal(size=(2, 3, 8)).astype("float32")
    fused = TransformerEncoderBlock(2, 16, key_dim=2, value_dim=4)
    explicit = TransformerEncoderBlock(
        2, 16, key_dim=2, value_dim=4, attention_implementation="explicit"
    )
    fused(x)
    explicit(x)
    explicit.set_weights(fused.get_weights())
    mask = np.array([[True, True, False], [True, True, True]])
    expected = explicit(x, padding_mask=mask)
    assert tuple(expected.shape) == (2, 3, 8)
    assert_all_close(fused(x, padding_mask=mask), expected, 1e-5)


def test_attention_mask_of_one_row_for_the_batch():
    """A (T, T) attention mask, as Keras takes it, equals its (B, T, T)
    broadcast."""
    x = np.random.default_rng(1).normal(size=(2, 4, 8)).astype("float32")
    block = TransformerEncoderBlock(2, 16)
    mask = np.tril(np.ones((4, 4), bool))
    assert_all_close(
        block(x, attention_mask=mask),
        block(x, attention_mask=np.broadcast_to(mask, (2, 4, 4))),
        1e-6,
    )


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_output_spec_under_mixed_precision(policy):
    block = TransformerEncoderBlock(2, 16, dtype=policy)
    output, scores = block.compute_output_spec(
        keras.KerasTensor((2, 5, 8)), return_attention_scores=True
    )
    assert (output.shape, output.dtype) == ((2, 5, 8), policy.split("_")[1])
    assert (scores.shape, scores.dtype) == ((2, 2, 5, 5), policy.split("_")[1])
