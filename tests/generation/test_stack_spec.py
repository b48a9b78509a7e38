"""One flat weight spec for every fast path (`keras_seq.generation.stack_spec`).

Every builder option that changes the arithmetic, on tiny models: the
greedy ids of `generate` (on PyTorch, its plain-PyTorch step where the
spec mirrors the model, the layers' step where it refuses) equal a greedy
loop over the layers' own `decoding_step` with the same weights, which
the cache-equals-full-pass contract holds equal to TensorFlow's. Where
the fast path refuses, it says which option in one line.
"""

import contextlib

import keras
import numpy as np
import pytest

import zoo
from keras_seq.generation import fast_step, stack_spec
from keras_seq.testing import assert_all_close

ON_TORCH = keras.backend.backend() == "torch"
START = 2
UNEQUAL_HEADS = {"key_dim": 4, "value_dim": 6}

OPTIONS = {
    "defaults": {},
    "norm_first": {"norm_first": True},
    "no attention bias": {"attention_bias": False},
    "learned positions": {"positional": "learned"},
    "tied embeddings": {"tie_embeddings": True},
    "layer_norm_epsilon": {"layer_norm_epsilon": 0.5},
    "unscaled embeddings": {"scale_embeddings": False},
    "narrow heads": {"key_dim": 4, "value_dim": 4},
    "value_dim != key_dim": UNEQUAL_HEADS,
    "values narrower": {"key_dim": 6, "value_dim": 3},
    "gelu": {"activation": "gelu"},
    "swish": {"activation": "swish"},
    "concatenated sines": {"sinusoidal_layout": "concatenated"},
    "tied output": {"tie_output_embedding": True},
    "tied output, logits bias": {"tie_output_embedding": True, "logits_bias": True},
    "tied embeddings, logits bias": {"tie_embeddings": True, "logits_bias": True},
    "no logits bias": {"logits_bias": False},
    "Marian's": {
        "activation": "swish",
        "sinusoidal_layout": "concatenated",
        "tie_output_embedding": True,
        "logits_bias": True,
    },
}
REFUSED = {"value_dim != key_dim", "values narrower"}


def _no_grad():
    if not ON_TORCH:
        return contextlib.nullcontext()
    import torch  # The PyTorch backend only.

    return torch.no_grad()


def _spread(model, seed=3):
    """Weights drawn by NumPy, the same on every backend: unit token tables
    (untrained small ones make the greedy ids constant), kernels at
    1/sqrt(fan-in), learned positions at 0.5, biases and norms as built."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        path, shape = variable.path, variable.shape
        if path.endswith("token_embedding/embeddings"):
            scale = 1.0
        elif path.endswith("position_embedding/embeddings"):
            scale = 0.5
        elif path.endswith("logits_bias"):
            scale = 1.0
        elif path.endswith("kernel"):
            scale = 1.0 / np.sqrt(shape[0])
        else:
            continue
        variable.assign(rng.normal(0.0, scale, shape).astype("float32"))
    return model


def _translator(**options):
    keras.utils.set_random_seed(1)
    # Draws under which no option's greedy ids are one repeated token once
    # the translators' special tokens are ruled out.
    return _spread(zoo.build_translator("tiny", vocabulary_size=50, **options), seed=0)


def _language_model(**options):
    keras.utils.set_random_seed(2)
    # Untrained, a tied model repeats its last token; the translator's
    # cases hold the tied output layer.
    options = {"tie_embeddings": False, **options}
    return _spread(zoo.build_language_model("tiny", vocabulary_size=50, **options))


def _greedy(model, token_ids, steps, step=None):
    """Greedy ids from `start_decoding` and `step` (the layers' own
    `decoding_step` by default), and the logits of each chosen id."""
    step = step or model.decoding_step
    with _no_grad():
        given, context, cache = model.start_decoding(token_ids, steps, START)
        given = keras.ops.convert_to_numpy(given)
        for t in range(given.shape[1] - 1):  # A prompt: read through the cache.
            ids = keras.ops.convert_to_tensor(given[:, t : t + 1])
            _, cache = step(ids, t, context, cache)
        previous, index, chosen, scores = given[:, -1:], given.shape[1] - 1, [], []
        for _ in range(steps):
            logits, cache = step(
                keras.ops.convert_to_tensor(previous), index, context, cache
            )
            logits = keras.ops.convert_to_numpy(logits)
            # The ids the model declares unsamplable are never chosen.
            logits[:, list(getattr(model, "unsamplable_token_ids", ()))] = -np.inf
            previous = np.argmax(logits, -1)[:, None].astype("int32")
            chosen.append(previous)
            scores.append(logits)
            index += 1
    return np.concatenate(chosen, axis=1), np.stack(scores, axis=1)


def _check(model, token_ids, refused):
    steps = 10
    expected, logits = _greedy(model, token_ids, steps)
    got = model.generate(token_ids, max_new_tokens=steps, end_token_id=None)
    got = keras.ops.convert_to_numpy(got)[:, -steps:]
    assert len(np.unique(expected)) > 1  # Not degenerate.
    np.testing.assert_array_equal(got, expected)
    if not ON_TORCH:
        return
    with _no_grad():
        fast = model.fast_decoding_step()
    assert (fast is None) == refused
    if fast is not None:
        # Along the same path the fast step's logits are the layers'.
        fast_ids, fast_logits = _greedy(model, token_ids, steps, fast)
        np.testing.assert_array_equal(fast_ids, expected)
        finite = np.isfinite(logits)
        assert_all_close(fast_logits[finite], logits[finite], atol=1e-5)


@pytest.mark.parametrize("name", OPTIONS, ids=OPTIONS.keys())
def test_translator_fast_path_gives_the_layers_ids(name):
    source = np.random.default_rng(0).integers(4, 50, (3, 7)).astype("int32")
    source[1, 4:] = 0
    model = _translator(**OPTIONS[name])
    _check(model, source, name in REFUSED)
    if ON_TORCH:
        with _no_grad():
            assert (model.fast_start_decoding() is None) == (name in REFUSED)


@pytest.mark.parametrize(
    "name", ["defaults", "norm_first", "learned positions", "value_dim != key_dim"]
)
def test_language_model_fast_path_gives_the_layers_ids(name):
    prompt = np.random.default_rng(1).integers(4, 50, (2, 3)).astype("int32")
    _check(_language_model(**OPTIONS[name]), prompt, name in REFUSED)


def test_a_refusal_names_the_option_in_one_line():
    model = _translator(**UNEQUAL_HEADS)
    assert fast_step.mirror_refusal(model.decoder_stack()) == (
        "value_dim=6 (key_dim=4)"
    )
    # A path that lays out heads of two widths is not told about them.
    assert stack_spec.refusal(model.decoder_stack()) is None
    relu = _language_model()
    assert stack_spec.refusal(relu.decoder_stack(), activations=("gelu",)) == (
        "activation='relu'"
    )


def test_the_flat_spec_joins_and_flattens_the_layers_weights():
    model = _translator(**UNEQUAL_HEADS, attention_bias=True)
    flat = stack_spec.flatten(model.decoder_stack(), "numpy")
    block = model.decoder_blocks[0].spec()
    attention = flat.blocks[0].self_attention
    d, n = 16, 2
    query = keras.ops.convert_to_numpy(block.self_attention.query.kernel)
    value = keras.ops.convert_to_numpy(block.self_attention.value.kernel)
    assert attention.fused[0].shape == (d, n * 4 + n * 4 + n * 6)
    np.testing.assert_array_equal(attention.fused[0][:, : n * 4], query.reshape(d, -1))
    np.testing.assert_array_equal(attention.fused[0][:, -n * 6 :], value.reshape(d, -1))
    assert attention.output[0].shape == (n * 6, d)
    assert attention.scale == pytest.approx(0.5)
    assert flat.blocks[0].cross_attention.fused[0].shape == (d, n * 4 + n * 6)
    assert flat.positions.shape == (32, d)
    assert flat.scale == pytest.approx(4.0)
    assert flat.final_norm is None  # post-norm: the closing norm is an identity
    assert flat.blocks[0].feed_forward_norm.epsilon == pytest.approx(1e-5)
    assert flat.output[0].shape == (d, 50)
    tied = stack_spec.flatten(_translator(tie_embeddings=True).decoder_stack(), "numpy")
    assert tied.output is None
