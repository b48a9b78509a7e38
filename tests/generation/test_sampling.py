"""`keras_seq.generation.sampling`: buffers, token choice, compiled loops.

A compiled decoding loop is kept on the model and reused. It must not keep
the values the weights had when it was compiled: after training further,
`load_weights` or `set_weights`, `generate` and `beam_search` decode with
the new weights, exactly as a model built with those weights does. A
sampler without a seed draws afresh on every call.
"""

import keras
import numpy as np
import pytest
from keras import ops

import zoo
from keras_seq import generation
from keras_seq.generation.sampling import first_argmax

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


def test_given_buffer_keeps_the_given_ids():
    given = np.array([[5, 6], [7, 8]], "int32")
    buffer, kept = generation.given_buffer(given, 3)
    np.testing.assert_array_equal(
        ops.convert_to_numpy(buffer), [[5, 6, 0, 0, 0], [7, 8, 0, 0, 0]]
    )
    np.testing.assert_array_equal(ops.convert_to_numpy(kept)[0], [1, 1, 0, 0, 0])
    start, first = generation.start_buffer(2, 3, 2)
    np.testing.assert_array_equal(ops.convert_to_numpy(start)[:, 0], [2, 2])
    np.testing.assert_array_equal(ops.convert_to_numpy(first)[1], [1, 0, 0, 0])


def test_zero_after_end_and_strip_after_end():
    ids = np.array([[4, 3, 5, 3], [4, 5, 6, 7]], "int32")
    zeroed = ops.convert_to_numpy(generation.zero_after_end(ids, 3))
    np.testing.assert_array_equal(zeroed, [[4, 3, 0, 0], [4, 5, 6, 7]])
    assert generation.strip_after_end(zeroed, 3) == [[4], [4, 5, 6, 7]]
    assert generation.strip_after_end(zeroed, None) == [[4, 3], [4, 5, 6, 7]]


def test_first_argmax_is_argmax_with_ties_to_the_first():
    logits = np.random.default_rng(0).normal(size=(6, 50)).astype("float32")
    logits[0, [3, 9]] = 10.0  # A tie.
    np.testing.assert_array_equal(
        ops.convert_to_numpy(first_argmax(logits)), logits.argmax(-1)
    )


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="TensorFlow tracing"
)
def test_run_compiled_inside_a_traced_function_joins_its_graph():
    import tensorflow as tf

    model, _ = _pair("translator")
    ids = np.random.default_rng(0).integers(4, 100, (2, 5)).astype("int32")
    eager = model.generate(ids, max_new_tokens=4)
    model.__dict__.pop("_generate_functions", None)
    traced = tf.function(lambda x: model.generate(x, max_new_tokens=4))
    graph = traced.get_concrete_function(tf.TensorSpec([None, None], tf.int32))
    # No compiled loop of its own, and no XLA cluster in the caller's graph.
    assert not model.__dict__.get("_generate_functions")
    assert "_XlaMustCompile" not in str(graph.graph.as_graph_def())
    np.testing.assert_array_equal(graph(tf.constant(ids)), eager)
