"""Compiled generation reads the model's current weights and seed state.

A compiled decoding loop is kept on the model and reused. It must not keep
the values the weights had when it was compiled: after training further,
`load_weights` or `set_weights`, `generate` and `beam_search` decode with
the new weights, exactly as a model built with those weights does. A
sampler without a seed draws afresh on every call.
"""

import keras
import numpy as np
import pytest

import zoo

BUILDERS = {
    "translator": zoo.build_translator,
    "language_model": zoo.build_language_model,
    "rnn_translator": zoo.build_rnn_translator,
}


def _pair(name):
    """Two tiny models of one builder with different random weights."""
    keras.utils.set_random_seed(5)
    first = BUILDERS[name]("tiny")
    keras.utils.set_random_seed(6)
    second = BUILDERS[name]("tiny")
    return first, second


def _decode(model, how):
    ids = np.random.default_rng(0).integers(4, 100, (3, 5)).astype("int32")
    if how == "beam":
        return keras.ops.convert_to_numpy(
            model.beam_search(ids, 6, beam_width=3, num_return=2, end_token_id=None)[0]
        )
    return keras.ops.convert_to_numpy(
        model.generate(ids, max_new_tokens=6, end_token_id=None, strategy=how)
    )


@pytest.mark.parametrize("name", sorted(BUILDERS))
@pytest.mark.parametrize("how", ["greedy", "beam"])
def test_compiled_generation_uses_weights_set_after_compiling(name, how):
    model, other = _pair(name)
    before = _decode(model, how)  # Compiles and keeps the loop.
    expected = _decode(other, how)
    assert not np.array_equal(before, expected)  # The weights matter.

    model.set_weights(other.get_weights())

    np.testing.assert_array_equal(_decode(model, how), expected)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_unseeded_sampling_draws_afresh_and_seeded_sampling_repeats(name):
    model, _ = _pair(name)
    ids = np.random.default_rng(1).integers(4, 100, (4, 5)).astype("int32")

    def sample(model, seed):
        return keras.ops.convert_to_numpy(
            model.generate(
                ids,
                max_new_tokens=8,
                end_token_id=None,
                strategy="sample",
                temperature=2.0,
                seed=seed,
            )
        )

    # 32 tokens drawn at temperature 2 from 100: two draws agree by chance
    # with negligible probability.
    assert not np.array_equal(sample(model, None), sample(model, None))
    # A seed fixes the first draw, whatever the model drew before.
    same_weights, _ = _pair(name)
    np.testing.assert_array_equal(sample(model, 7), sample(same_weights, 7))
