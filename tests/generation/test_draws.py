"""`keras_seq.generation.draws`: seeded sampling as a hash.

A seed must mean the same tokens on every call and on every backend: the
golden ids below were computed once and are asserted on TensorFlow, JAX and
PyTorch alike (`make test` runs this file in all three stages), from
weights set from NumPy so that every backend decodes the same model.
"""

import keras
import numpy as np
import pytest
from keras import ops

import zoo
from keras_seq.generation import draws

IDS = np.array([[5, 6, 7, 8, 0], [9, 10, 11, 0, 0], [12, 13, 14, 15, 16]], "int32")


def _numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


@pytest.fixture(scope="module")
def language_model():
    """A tiny language model whose weights come from NumPy, not a backend."""
    keras.utils.set_random_seed(0)
    model = zoo.build_language_model("tiny")
    rng = np.random.default_rng(0)
    model.set_weights(
        [rng.normal(0.0, 0.3, w.shape).astype("float32") for w in model.weights]
    )
    return model


def test_uniforms_lie_inside_the_unit_interval_and_are_spread():
    keys = draws.row_keys(np.arange(1, 65, dtype="int32")[:, None], 3)  # 64 rows
    u = _numpy(draws.uniforms(keys, 2, 3, 1000))  # (64, 1000)
    assert u.min() > 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.005  # 64,000 draws: sd of the mean 0.0011
    # Neighbouring tokens and rows are not correlated.
    assert abs(np.corrcoef(u[:, :-1].ravel(), u[:, 1:].ravel())[0, 1]) < 0.02
    assert abs(np.corrcoef(u[:-1].ravel(), u[1:].ravel())[0, 1]) < 0.02


def test_row_keys_ignore_padding_and_depend_on_seed_ids_and_order():
    keys = _numpy(draws.row_keys([[5, 6, 0, 0], [5, 6, 0, 0], [6, 5, 0, 0]], 1))
    assert keys[0] == keys[1] != keys[2]
    assert _numpy(draws.row_keys([[5, 6]], 1))[0] == keys[0]  # padding: nothing
    assert _numpy(draws.row_keys([[5, 6]], 2))[0] != keys[0]


def test_gumbel_draws_follow_the_softmax():
    probabilities = np.array([0.5, 0.25, 0.15, 0.1], "float32")
    rows = 4000
    logits = np.tile(np.log(probabilities), (rows, 1))
    keys = draws.row_keys(np.arange(1, rows + 1, dtype="int32")[:, None], 11)
    scores = draws.gumbel_scores(logits, keys, 1, 11, 1.0, None, None)
    counts = np.bincount(_numpy(ops.argmax(scores, axis=-1)), minlength=4)
    # Binomial standard deviations are below 0.008 of the rows.
    np.testing.assert_allclose(counts / rows, probabilities, atol=0.025)


def test_top_k_and_top_p_allow_the_tokens_keras_hub_would():
    probabilities = np.array([[0.4, 0.3, 0.2, 0.1], [0.1, 0.6, 0.25, 0.05]])
    logits = np.log(probabilities).astype("float32")
    allowed = _numpy(draws.allowed_tokens(logits, top_k=2))
    np.testing.assert_array_equal(allowed, [[1, 1, 0, 0], [0, 1, 1, 0]])
    # p = 0.65: 0.4 + 0.3 reach it in row 0; 0.6 + 0.25 in row 1.
    allowed = _numpy(draws.allowed_tokens(logits, top_p=0.65))
    np.testing.assert_array_equal(allowed, [[1, 1, 0, 0], [0, 1, 1, 0]])
    allowed = _numpy(draws.allowed_tokens(logits, top_k=1, top_p=0.65))
    np.testing.assert_array_equal(allowed, [[1, 0, 0, 0], [0, 1, 0, 0]])


def _generate(model, ids, **kwargs):
    kwargs = {"max_new_tokens": 6, "end_token_id": None, **kwargs}
    return _numpy(model.generate(ids, **kwargs))


def test_a_seed_repeats_its_draw_and_a_row_does_not_depend_on_its_neighbours(
    language_model,
):
    prompts = IDS[:, :3]
    first = _generate(language_model, prompts, strategy="sample", seed=3)
    np.testing.assert_array_equal(
        _generate(language_model, prompts, strategy="sample", seed=3), first
    )
    alone = _generate(language_model, prompts[1:2], strategy="sample", seed=3)
    np.testing.assert_array_equal(alone[0], first[1])
    assert not np.array_equal(
        _generate(language_model, prompts, strategy="sample", seed=4), first
    )
    assert not np.array_equal(
        _generate(language_model, prompts, strategy="sample"),
        _generate(language_model, prompts, strategy="sample"),
    )


# Computed once on TensorFlow; JAX and PyTorch must give the same ids. No
# special token (padding, [UNK], [START], [MASK]) is ever drawn.
GOLDEN = {
    "greedy": [[47, 9, 9, 18, 9, 18], [14, 9, 9, 18, 9, 18], [18, 9, 9, 18, 9, 18]],
    "sample": [
        [68, 95, 76, 88, 62, 47],
        [9, 92, 60, 33, 5, 18],
        [55, 56, 24, 30, 12, 28],
    ],
    "top_k_top_p": [
        [55, 43, 14, 9, 43, 9],
        [18, 74, 56, 9, 74, 74],
        [18, 61, 74, 61, 18, 14],
    ],
    "beam": [[9, 9, 9, 18, 9, 18], [9, 9, 9, 18, 9, 18], [18, 9, 9, 18, 9, 18]],
}


def test_generation_gives_the_golden_ids_on_every_backend(language_model):
    prompts = IDS[:, :3]
    got = {
        "greedy": _generate(language_model, prompts),
        "sample": _generate(
            language_model, prompts, strategy="sample", seed=3, temperature=1.5
        ),
        "top_k_top_p": _generate(
            language_model, prompts, strategy="sample", seed=5, top_k=8, top_p=0.9
        ),
        "beam": _generate(language_model, prompts, strategy="beam", beam_width=3),
    }
    for name, expected in GOLDEN.items():
        np.testing.assert_array_equal(got[name], expected, err_msg=name)
