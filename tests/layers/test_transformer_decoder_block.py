import keras
import keras_hub
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from keras_seq.layers import TransformerDecoderBlock
from keras_seq.testing import assert_all_close, run_layer_test
from tests.layers.hub_parity import copy_decoder_weights

B, T, S, D, N, F = 2, 5, 7, 8, 2, 16
H = D // N


def _random(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def _padding(lengths, length):
    return np.arange(length)[None, :] < np.asarray(lengths)[:, None]


def _decode_step_by_step(block, x, z=None, encoder_padding_mask=None):
    """Feed `x` one position at a time through the self-attention cache."""
    batch, length = x.shape[:2]
    cache = np.zeros((batch, 2, N, length, H), "float32")
    cross_cache, steps = None, []
    for t in range(length):
        out, cache, cross_cache = block(
            x[:, t : t + 1],
            z,
            encoder_padding_mask=encoder_padding_mask,
            self_attention_cache=cache,
            self_attention_cache_update_index=t,
            cross_attention_cache=cross_cache,
        )
        steps.append(np.asarray(out))
    return np.concatenate(steps, axis=1)


@pytest.mark.parametrize("norm_first", [False, True])
def test_layer_harness_with_cross_attention(norm_first):
    attention = 4 * (D * D + D)
    params = 2 * attention + 2 * D * F + F + D + 6 * D
    run_layer_test(
        TransformerDecoderBlock,
        init_kwargs={"num_heads": N, "ff_dim": F, "norm_first": norm_first},
        input_data={
            "decoder_sequence": _random(B, T, D),
            "encoder_sequence": _random(B, S, D, seed=1),
        },
        expected_output_shape=(B, T, D),
        expected_num_trainable_weights=26,
        expected_num_params=params,
    )


def test_layer_harness_decoder_only():
    params = 4 * (D * D + D) + 2 * D * F + F + D + 4 * D
    run_layer_test(
        TransformerDecoderBlock,
        init_kwargs={"num_heads": N, "ff_dim": F},
        input_data=_random(B, T, D),
        expected_output_shape=(B, T, D),
        expected_num_trainable_weights=16,
        expected_num_params=params,
    )


def test_book_parameter_count():
    """Eq. (7.32) plus cross attention H(2mp + 2m_v p) and its 2p norm."""
    block = TransformerDecoderBlock(num_heads=8, ff_dim=2048, attention_bias=False)
    block.build((None, 10, 512), (None, 12, 512))
    assert block.count_params() == 4_199_936
    assert block.count_params() - 3_150_336 == 8 * (4 * 64 * 512) + 2 * 512


@pytest.mark.parametrize("norm_first", [False, True])
def test_parity_with_keras_hub(norm_first):
    x, z = _random(B, T, D, seed=2), _random(B, S, D, seed=3)
    decoder_mask, encoder_mask = _padding([5, 3], T), _padding([7, 4], S)
    hub = keras_hub.layers.TransformerDecoder(
        intermediate_dim=F, num_heads=N, normalize_first=norm_first
    )
    ours = TransformerDecoderBlock(num_heads=N, ff_dim=F, norm_first=norm_first)
    hub(x, z)
    ours(x, z)
    copy_decoder_weights(ours, hub)
    assert_all_close(ours(x, z), hub(x, z), atol=1e-5)
    expected = np.asarray(
        hub(
            x,
            z,
            decoder_padding_mask=decoder_mask,
            encoder_padding_mask=encoder_mask,
        )
    )
    actual = np.asarray(
        ours(
            x,
            z,
            decoder_padding_mask=decoder_mask,
            encoder_padding_mask=encoder_mask,
        )
    )
    assert_all_close(actual[decoder_mask], expected[decoder_mask], atol=1e-5)


def test_parity_with_keras_hub_decoder_only():
    x = _random(B, T, D, seed=2)
    hub = keras_hub.layers.TransformerDecoder(intermediate_dim=F, num_heads=N)
    ours = TransformerDecoderBlock(num_heads=N, ff_dim=F)
    hub(x)
    ours(x)
    copy_decoder_weights(ours, hub)
    assert_all_close(ours(x), hub(x), atol=1e-5)


def test_cross_attention_ignores_padded_source():
    block = TransformerDecoderBlock(num_heads=N, ff_dim=F)
    x, z = _random(B, T, D), _random(B, S, D, seed=1)
    mask = _padding([7, 3], S)
    changed = np.where(mask[..., None], z, _random(B, S, D, seed=9))
    a = block(x, z, encoder_padding_mask=mask)
    b = block(x, changed, encoder_padding_mask=mask)
    assert_all_close(a, b, atol=1e-6)
    unmasked = block(x, changed)
    assert not np.allclose(np.asarray(a), np.asarray(unmasked))


def test_implicit_encoder_mask_reaches_cross_attention():
    source = np.array([[3, 4, 5, 0, 0, 0, 0], [6, 7, 8, 9, 2, 1, 0]])
    target = _random(B, T, D)
    source_in = keras.Input((S,), dtype="int32")
    target_in = keras.Input((T, D))
    embedding = keras.layers.Embedding(10, D, mask_zero=True)
    block = TransformerDecoderBlock(num_heads=N, ff_dim=F)
    model = keras.Model([source_in, target_in], block(target_in, embedding(source_in)))
    implicit = model([source, target])
    vectors = keras.ops.convert_to_tensor(np.asarray(embedding(source)))
    explicit = block(target, vectors, encoder_padding_mask=source != 0)
    assert_all_close(implicit, explicit, atol=1e-6)


def test_cross_attention_scores():
    block = TransformerDecoderBlock(num_heads=N, ff_dim=F)
    out, scores = block(
        _random(B, T, D),
        _random(B, S, D, seed=1),
        encoder_padding_mask=_padding([7, 3], S),
        return_attention_scores=True,
    )
    scores = np.asarray(scores)
    assert scores.shape == (B, N, T, S)
    np.testing.assert_allclose(scores.sum(-1), 1.0, atol=1e-5)
    assert np.all(scores[1, :, :, 3:] == 0)


@given(
    length=st.integers(1, 6),
    source_length=st.integers(1, 6),
    source_padding=st.integers(0, 5),
    cross=st.booleans(),
    norm_first=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_cached_decoding_equals_full_pass(
    length, source_length, source_padding, cross, norm_first, seed
):
    block = TransformerDecoderBlock(num_heads=N, ff_dim=F, norm_first=norm_first)
    x = _random(2, length, D, seed=seed)
    z, mask = None, None
    if cross:
        z = _random(2, source_length, D, seed=seed + 1)
        real = max(1, source_length - source_padding)
        mask = _padding([source_length, real], source_length)
    full = block(x, z, encoder_padding_mask=mask)
    stepped = _decode_step_by_step(block, x, z, encoder_padding_mask=mask)
    assert_all_close(stepped, full, atol=1e-5)


@given(
    length=st.integers(2, 7),
    position=st.integers(1, 6),
    seed=st.integers(0, 2**16),
)
def test_causality(length, position, seed):
    position = 1 + position % (length - 1)
    block = TransformerDecoderBlock(num_heads=N, ff_dim=F)
    x, z = _random(2, length, D, seed=seed), _random(2, S, D, seed=seed + 1)
    changed = x.copy()
    changed[:, position:] += _random(2, length - position, D, seed=seed + 2)
    a, b = np.asarray(block(x, z)), np.asarray(block(changed, z))
    np.testing.assert_allclose(a[:, :position], b[:, :position], atol=1e-5)
    assert not np.allclose(a[:, position:], b[:, position:])


class TestErrors:
    def test_heads_must_divide_width(self):
        block = TransformerDecoderBlock(num_heads=3, ff_dim=F)
        with pytest.raises(ValueError, match="`num_heads` must divide"):
            block(_random(B, T, D), _random(B, S, D))

    def test_rank(self):
        block = TransformerDecoderBlock(num_heads=N, ff_dim=F)
        with pytest.raises(ValueError, match="`encoder_sequence` must have rank"):
            block(_random(B, T, D), _random(B, D))

    def test_encoder_mask_shape(self):
        block = TransformerDecoderBlock(num_heads=N, ff_dim=F)
        with pytest.raises(ValueError, match="`encoder_padding_mask` must have"):
            block(
                _random(B, T, D),
                _random(B, S, D),
                encoder_padding_mask=np.ones((B, T), bool),
            )

    def test_missing_encoder_sequence(self):
        block = TransformerDecoderBlock(num_heads=N, ff_dim=F)
        block(_random(B, T, D), _random(B, S, D))
        with pytest.raises(ValueError, match="needs `encoder_sequence`"):
            block(_random(B, T, D))

    def test_decoder_only_refuses_encoder_sequence(self):
        block = TransformerDecoderBlock(num_heads=N, ff_dim=F)
        block(_random(B, T, D))
        with pytest.raises(ValueError, match="without cross attention"):
            block(_random(B, T, D), _random(B, S, D))


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_output_spec_under_mixed_precision(policy):
    compute = policy.split("_")[1]
    x, z = keras.KerasTensor((2, 4, 8)), keras.KerasTensor((2, 6, 8))
    block = TransformerDecoderBlock(2, 16, dtype=policy)
    output = block.compute_output_spec(x, z)
    assert (output.shape, output.dtype) == ((2, 4, 8), compute)
    cache = keras.KerasTensor((2, 2, 2, 9, 4), dtype=compute)
    output, self_cache, cross_cache, scores = block.compute_output_spec(
        x[:, :1],
        z,
        self_attention_cache=cache,
        self_attention_cache_update_index=0,
        return_attention_scores=True,
    )
    assert output.shape == (2, 1, 8) and output.dtype == compute
    assert self_cache.shape == (2, 2, 2, 9, 4)
    assert (cross_cache.shape, cross_cache.dtype) == ((2, 2, 2, 6, 4), compute)
    assert scores.shape == (2, 2, 1, 6)
    # Built, in a functional graph under the policy, it runs as its spec says.
    inputs = keras.Input((4, 8)), keras.Input((6, 8))
    model = keras.Model(inputs, block(*inputs))
    assert model.outputs[0].dtype == compute
    ones = np.ones((2, 4, 8), "float32"), np.ones((2, 6, 8), "float32")
    assert keras.backend.standardize_dtype(model(ones).dtype) == compute
