import keras
import numpy as np
import pytest

import zoo
from keras_seq.losses import MaskedSparseCategoricalCrossentropy
from keras_seq.testing import assert_all_close

START, END = 2, 3


_MODELS = {}


def _model(**overrides):
    """A tiny translator trained a little to copy, so its greedy paths vary."""
    key = tuple(sorted(overrides.items()))
    if key not in _MODELS:
        _MODELS[key] = _train(**overrides)
    return _MODELS[key]


def _train(**overrides):
    keras.utils.set_random_seed(3)
    model = zoo.build_translator("tiny", **overrides)
    rng = np.random.default_rng(0)
    source = rng.integers(4, 100, (256, 6)).astype("int32")
    target = np.concatenate(
        [np.full((256, 1), START), source, np.full((256, 1), END)], 1
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=MaskedSparseCategoricalCrossentropy(),
    )
    model.fit(
        {"encoder_token_ids": source, "decoder_token_ids": target[:, :-1]},
        target[:, 1:],
        epochs=6,
        batch_size=32,
        verbose=0,
    )
    return model


def _source(seed=0):
    ids = np.random.default_rng(seed).integers(4, 100, (3, 7)).astype("int32")
    ids[1, 5:] = 0
    ids[2, 3:] = 0
    return ids


def _full_recompute_greedy(model, source, steps):
    tokens = np.full((source.shape[0], 1), START, "int32")
    all_logits = []
    for _ in range(steps):
        logits = np.asarray(
            model({"encoder_token_ids": source, "decoder_token_ids": tokens})
        )
        all_logits.append(logits[:, -1])
        next_ids = logits[:, -1].argmax(-1).astype("int32")
        tokens = np.concatenate([tokens, next_ids[:, None]], axis=1)
    return tokens[:, 1:], np.stack(all_logits, axis=1)


@pytest.mark.parametrize("tie", [False, True])
def test_cached_steps_equal_full_recompute(tie):
    model = _model(tie_embeddings=tie)
    source = _source()
    steps = 8
    expected_ids, expected_logits = _full_recompute_greedy(model, source, steps)
    if not tie:
        assert len(np.unique(expected_ids)) > 2  # The paths are not degenerate.
    encoded, mask = model.encode(source)
    cross = model.cross_attention_caches(encoded)
    caches = model.empty_self_attention_caches(3, steps)
    previous = np.full((3, 1), START, "int32")
    for t in range(steps):
        logits, caches = model.decode_step(previous, t, encoded, mask, caches, cross)
        assert_all_close(logits, expected_logits[:, t], atol=1e-4)
        previous = expected_ids[:, t : t + 1]


def test_generate_greedy_equals_full_recompute():
    model = _model()
    source = _source(1)
    expected, _ = _full_recompute_greedy(model, source, 9)
    generated = np.asarray(model.generate(source, max_new_tokens=9, end_token_id=99))
    np.testing.assert_array_equal(generated, expected)


def test_generate_stops_at_end_token():
    model = _model()
    source = _source(2)
    free, _ = _full_recompute_greedy(model, source, 9)
    end = int(free[0, 2])  # Row 0 produces this id at step 2.
    generated = np.asarray(model.generate(source, max_new_tokens=9, end_token_id=end))
    row = generated[0]
    first = list(row).index(end)
    assert first <= 2
    assert np.all(row[first + 1 :] == 0)
    np.testing.assert_array_equal(row[: first + 1], free[0, : first + 1])


def test_generate_sampling_is_seeded():
    model = _model()
    source = _source(3)
    a = np.asarray(
        model.generate(
            source,
            max_new_tokens=6,
            strategy="sample",
            top_k=5,
            seed=7,
            end_token_id=99,
        )
    )
    assert a.shape == (3, 6)
    assert np.all((a >= 0) & (a < 100))


def test_generate_refuses_bad_input():
    model = _model()
    with pytest.raises(ValueError, match="`token_ids` must hold integer"):
        model.generate(np.ones((2, 3), "float32"))
    with pytest.raises(ValueError, match="`max_new_tokens` must be in"):
        model.generate(_source(), max_new_tokens=500)
    with pytest.raises(ValueError, match="`strategy` must be one of"):
        model.generate(_source(), strategy="nucleus")
    with pytest.raises(ValueError, match="max_length is 32"):
        model.generate(np.ones((1, 40), "int32"))
