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


def _decodable(model, logits):
    """`logits` with the ids the model never writes at -inf: decoding
    chooses among, and normalises over, the others."""
    logits = np.array(keras.ops.convert_to_numpy(logits), "float64")
    logits[..., list(model.unsamplable_token_ids)] = -np.inf
    return logits


def _full_recompute_greedy(model, source, steps):
    """Greedy decoding by one full forward pass per step, no cache.

    The prefix is padded to `steps` tokens, so every pass has one shape (one
    trace on JAX instead of one a length); the padding after position `t`
    cannot change position `t`'s logits (the causal and padding masks,
    tested in tests/layers).
    """
    tokens = np.zeros((source.shape[0], steps), "int32")
    tokens[:, 0] = START
    ids, all_logits = [], []
    for t in range(steps):
        logits = np.asarray(
            model({"encoder_token_ids": source, "decoder_token_ids": tokens})
        )[:, t]
        all_logits.append(logits)
        ids.append(_decodable(model, logits).argmax(-1).astype("int32"))
        if t + 1 < steps:
            tokens[:, t + 1] = ids[-1]
    return np.stack(ids, axis=1), np.stack(all_logits, axis=1)


@pytest.mark.parametrize("tie", [False, True])
def test_cached_steps_equal_full_recompute(tie):
    model = _model(tie_embeddings=tie)
    source = _source()
    steps = 8
    expected_ids, expected_logits = _full_recompute_greedy(model, source, steps)
    if not tie:
        assert len(np.unique(expected_ids)) > 2  # The paths are not degenerate.
    previous, context, cache = model.start_decoding(source, steps, START)
    np.testing.assert_array_equal(previous, np.full((3, 1), START))
    for t in range(steps):
        logits, cache = model.decoding_step(previous, t, context, cache)
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


# Beam search.


def _sequence_log_prob(model, source_row, ids, end):
    """Summed log-probabilities of `ids` (cut after `end`) by full passes."""
    ids = list(ids)
    if end in ids:
        ids = ids[: ids.index(end) + 1]
    decoder = np.array([[START] + ids[:-1]], "int32")
    logits = _decodable(
        model,
        model({"encoder_token_ids": source_row[None], "decoder_token_ids": decoder})[0],
    )
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return sum(log_probs[t, token] for t, token in enumerate(ids)), len(ids)


def test_beam_width_one_equals_greedy():
    model = _model()
    source = _source(4)
    greedy = np.asarray(model.generate(source, max_new_tokens=8))
    beam = np.asarray(
        model.generate(source, max_new_tokens=8, strategy="beam", beam_width=1)
    )
    np.testing.assert_array_equal(beam, greedy)


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_beam_scores_are_length_normalised_log_probabilities(alpha):
    model = _model()
    source = _source(5)
    ids, scores = model.beam_search(
        source, max_new_tokens=7, beam_width=3, length_penalty=alpha, num_return=3
    )
    ids, scores = np.asarray(ids), np.asarray(scores)
    assert ids.shape == (3, 3, 7) and scores.shape == (3, 3)
    assert np.all(np.diff(scores, axis=1) <= 1e-6)  # Best first.
    for row in range(3):
        for rank in range(3):
            total, length = _sequence_log_prob(model, source[row], ids[row, rank], END)
            expected = total / ((5 + length) / 6) ** alpha
            assert scores[row, rank] == pytest.approx(expected, abs=1e-3)
        # Beams are distinct hypotheses.
        assert len({tuple(h) for h in ids[row]}) == 3


def test_beam_search_beats_or_ties_greedy_on_its_own_score():
    model = _model()
    source = _source(6)
    greedy = np.asarray(model.generate(source, max_new_tokens=7))
    ids, scores = model.beam_search(
        source, max_new_tokens=7, beam_width=4, length_penalty=0.0
    )
    for row in range(3):
        greedy_score, _ = _sequence_log_prob(model, source[row], greedy[row], END)
        assert np.asarray(scores)[row, 0] >= greedy_score - 1e-4


def test_beam_search_refuses_bad_arguments():
    model = _model()
    with pytest.raises(ValueError, match="num_return"):
        model.beam_search(_source(), beam_width=2, num_return=3)
    with pytest.raises(ValueError, match="beam_width"):
        model.beam_search(_source(), beam_width=0)


# Reserved tokens.


def _favouring_special_tokens(builder):
    """A tiny untrained translator whose output bias puts [PAD] first,
    [START] second and [MASK] third at every step: with one of them left
    unsuppressed, decoding would write it."""
    keras.utils.set_random_seed(4)
    model = builder("tiny", source_vocabulary_size=40, target_vocabulary_size=40)
    bias = next(v for v in model.weights if v.path.endswith("logits/bias"))
    values = np.zeros(bias.shape, "float32")
    values[[0, 2, 4]] = [30.0, 29.0, 28.0]
    bias.assign(values)
    return model


@pytest.mark.parametrize("builder", [zoo.build_translator, zoo.build_rnn_translator])
def test_translators_never_write_padding_start_or_mask(builder):
    model = _favouring_special_tokens(builder)
    assert tuple(model.unsamplable_token_ids) == (0, 2, 4)
    source = np.random.default_rng(0).integers(5, 40, (3, 5)).astype("int32")
    source[1, 3:] = 0
    outputs = {
        "greedy": model.generate(source, max_new_tokens=6, end_token_id=None),
        "sample": model.generate(
            source, max_new_tokens=6, strategy="sample", seed=1, end_token_id=None
        ),
        "beam": model.beam_search(
            source, max_new_tokens=6, beam_width=3, num_return=3, end_token_id=None
        )[0],
    }
    for name, ids in outputs.items():
        ids = keras.ops.convert_to_numpy(ids)
        assert not np.isin(ids, [0, 2, 4]).any(), (name, ids)
    # The bias does decide: with nothing suppressed, greedy writes only them.
    model.unsamplable_token_ids = ()
    free = model.generate(source, max_new_tokens=6, end_token_id=None)
    assert np.isin(keras.ops.convert_to_numpy(free), [0, 2, 4]).all()
