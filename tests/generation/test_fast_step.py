"""The PyTorch decoding step of `keras_seq.generation.fast_step`.

It must compute what the layers' own `decoding_step` computes: the same
logits (1e-5) at every position, including a padding query (a finished
beam's) and a source without real tokens, and so the same greedy and beam
ids. Off PyTorch, and where it cannot mirror the layers exactly, there is
no fast step and generation takes the ordinary one.
"""

import contextlib

import keras
import numpy as np
import pytest

import zoo
from keras_seq.generation.fast_step import torch_decoder_step
from keras_seq.testing import assert_all_close

START = 2
ON_TORCH = keras.backend.backend() == "torch"
torch_only = pytest.mark.skipif(not ON_TORCH, reason="a PyTorch step")

TRANSLATORS = {
    "post-norm, untied, sinusoidal": {},
    "pre-norm, tied, learned": {
        "norm_first": True,
        "tie_embeddings": True,
        "positional": "learned",
    },
    "no biases, gelu": {"attention_bias": False, "activation": "gelu"},
}


def _translator(**overrides):
    keras.utils.set_random_seed(1)
    activation = overrides.pop("activation", None)
    model = zoo.build_translator("tiny", vocabulary_size=50, **overrides)
    if activation:  # A block hyperparameter the builder does not take.
        for block in model.decoder_blocks:
            dense = block._feed_forward_layer._intermediate_dense
            dense.activation = keras.activations.get(activation)
    return _spread(model)


def _language_model(**overrides):
    keras.utils.set_random_seed(2)
    return _spread(zoo.build_language_model("tiny", vocabulary_size=50, **overrides))


def _spread(model):
    """Token tables of unit scale: untrained, the default small ones make
    every position's logits nearly alike and the greedy paths constant."""
    rng = np.random.default_rng(3)
    for variable in model.variables:
        if variable.path.endswith("token_embedding/embeddings"):
            variable.assign(rng.normal(size=variable.shape).astype("float32"))
    return model


def _source():
    ids = np.random.default_rng(0).integers(4, 50, (3, 7)).astype("int32")
    ids[1, 4:] = 0
    ids[2, :] = 0  # No real token: cross attention has no key.
    return ids


def _no_grad():
    if not ON_TORCH:
        return contextlib.nullcontext()
    import torch  # The PyTorch backend only.

    return torch.no_grad()


def _step_both_ways(model, source, ids):
    """Logits of the ordinary and the fast step at every position of `ids`."""
    steps = ids.shape[1]
    with _no_grad():
        fast = model.fast_decoding_step()
        assert fast is not None
        results = []
        for step in (model.decoding_step, fast):
            given, context, cache = model.start_decoding(source, steps, START)
            logits = []
            for t in range(steps):
                previous = keras.ops.convert_to_tensor(ids[:, t : t + 1])
                out, cache = step(previous, t, context, cache)
                logits.append(keras.ops.convert_to_numpy(out))
            results.append(np.stack(logits, axis=1))
    return results


@torch_only
@pytest.mark.parametrize("overrides", TRANSLATORS.values(), ids=TRANSLATORS.keys())
def test_translator_fast_step_equals_ordinary_step(overrides):
    model = _translator(**overrides)
    ids = np.random.default_rng(1).integers(4, 50, (3, 6)).astype("int32")
    ids[:, 0] = START
    ids[0, 3] = 0  # A padding query, as a finished beam feeds.
    ordinary, fast = _step_both_ways(model, _source(), ids)
    assert np.ptp(ordinary) > 1.0  # The logits are not degenerate.
    assert_all_close(fast, ordinary, atol=1e-5)


@torch_only
@pytest.mark.parametrize("tie", [True, False])
def test_language_model_fast_step_equals_ordinary_step(tie):
    model = _language_model(tie_embeddings=tie)
    ids = np.random.default_rng(2).integers(4, 50, (2, 9)).astype("int32")
    ids[1, 5] = 0
    ordinary, fast = _step_both_ways(model, ids[:, :2], ids)
    assert_all_close(fast, ordinary, atol=1e-5)


def _without_fast_step(model):
    """`model` decoding through its ordinary step, with fresh loops."""
    model.fast_decoding_step = lambda: None
    model.__dict__.pop("_generate_functions", None)
    return model


@torch_only
@pytest.mark.parametrize("strategy", ["greedy", "beam"])
def test_fast_and_ordinary_steps_generate_the_same_ids(strategy):
    options = {"strategy": strategy, "max_new_tokens": 10, "end_token_id": 7}
    translator, language_model = _translator(), _language_model(tie_embeddings=False)
    source, prompt = _source(), _source()[:2, :3]
    fast = [translator.generate(source, **options)]
    fast.append(language_model.generate(prompt, **options))
    ordinary = [_without_fast_step(translator).generate(source, **options)]
    ordinary.append(_without_fast_step(language_model).generate(prompt, **options))
    for got, expected in zip(fast, ordinary):
        expected = keras.ops.convert_to_numpy(expected)
        assert len(np.unique(expected)) > 2  # The paths are not degenerate.
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(got), expected)


@torch_only
def test_fast_step_reads_the_current_weights():
    model = _translator()
    source = _source()
    before = keras.ops.convert_to_numpy(model.generate(source, max_new_tokens=6))
    for variable in model.decoder_blocks[0].trainable_variables:
        variable.assign(variable * 3.0)
    after = keras.ops.convert_to_numpy(model.generate(source, max_new_tokens=6))
    expected = _without_fast_step(model).generate(source, max_new_tokens=6)
    assert not np.array_equal(after, before)
    np.testing.assert_array_equal(after, keras.ops.convert_to_numpy(expected))


def test_no_fast_step_where_it_would_not_mirror_the_layers():
    model = _translator()
    if not ON_TORCH:
        # TensorFlow and JAX compile the ordinary step; it still generates.
        assert model.fast_decoding_step() is None
        ids = keras.ops.convert_to_numpy(model.generate(_source(), max_new_tokens=4))
        assert ids.shape == (3, 4)
        return
    # Outside `torch.no_grad()` the step could not write the caches.
    assert model.fast_decoding_step() is None
    layers = (model.target_embedding, model.decoder_blocks, model.decoder_norm)
    with _no_grad():
        assert torch_decoder_step(*layers, model.output_dense) is not None
        keras.config.set_dtype_policy("mixed_bfloat16")
        try:
            mixed = _translator()
        finally:
            keras.config.set_dtype_policy("float32")
        assert mixed.fast_decoding_step() is None
