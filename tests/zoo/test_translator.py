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


# Builder options a pretrained checkpoint needs (each useful on its own).

OPTIONS = {
    "gelu": {"activation": "gelu"},
    "swish": {"activation": "swish"},
    "silu": {"activation": "silu"},
    "concatenated sines": {"sinusoidal_layout": "concatenated"},
    "tied output, separate tables": {
        "tie_output_embedding": True,
        "source_vocabulary_size": 37,
    },
    "tied output with logits bias": {
        "tie_output_embedding": True,
        "logits_bias": True,
        "source_vocabulary_size": 37,
    },
    "tied embeddings with logits bias": {"tie_embeddings": True, "logits_bias": True},
    "no logits bias": {"logits_bias": False},
    "decoder start id": {"decoder_start_token_id": 7},
    "Marian's": {
        "activation": "swish",
        "sinusoidal_layout": "concatenated",
        "tie_output_embedding": True,
        "logits_bias": True,
        "scale_embeddings": True,
        "decoder_start_token_id": 2,
    },
}


def _spread_model(**overrides):
    """An untrained tiny translator with unit token tables and non-zero
    logits biases, so that its positions and steps differ."""
    keras.utils.set_random_seed(5)
    config = {"source_vocabulary_size": 41, "target_vocabulary_size": 41}
    config.update(overrides)
    model = zoo.build_translator("tiny", **config)
    rng = np.random.default_rng(6)
    for variable in model.weights:
        if variable.path.endswith(("token_embedding/embeddings", "logits_bias")):
            variable.assign(rng.normal(size=variable.shape).astype("float32"))
        elif variable.path.endswith("logits/bias"):
            variable.assign(rng.normal(size=variable.shape).astype("float32"))
    return model


def _inputs(model):
    rng = np.random.default_rng(7)
    source = rng.integers(5, model.source_vocabulary_size, (2, 6)).astype("int32")
    source[1, 4:] = 0
    target = rng.integers(5, model.target_vocabulary_size, (2, 5)).astype("int32")
    target[:, 0] = model.default_start_token_id
    return {"encoder_token_ids": source, "decoder_token_ids": target}


@pytest.mark.parametrize("name", OPTIONS, ids=OPTIONS.keys())
def test_options_round_trip_config_and_keras_file(name):
    model = _spread_model(**OPTIONS[name])
    config = model.get_config()
    for key, value in OPTIONS[name].items():
        assert config[key] == value
    restored = zoo.Translator.from_config(config)
    restored.set_weights(model.get_weights())
    inputs = _inputs(model)
    assert_all_close(restored(inputs), model(inputs), atol=1e-6)
    from keras_seq.testing import run_model_saving_test

    loaded = run_model_saving_test(model, inputs)
    assert loaded.get_config() == config


@pytest.mark.parametrize("name", OPTIONS, ids=OPTIONS.keys())
def test_options_cached_steps_equal_the_full_pass(name):
    model = _spread_model(**OPTIONS[name])
    inputs = _inputs(model)
    full = keras.ops.convert_to_numpy(model(inputs))
    target = inputs["decoder_token_ids"]
    steps = target.shape[1]
    start = model.default_start_token_id
    previous, context, cache = model.start_decoding(
        inputs["encoder_token_ids"], steps, start
    )
    np.testing.assert_array_equal(previous, target[:, :1])
    for t in range(steps):
        logits, cache = model.decoding_step(target[:, t : t + 1], t, context, cache)
        # Logits up to about 12: float32 sums of another order (one step
        # against the whole sequence) differ by a few ulps of that size.
        assert_all_close(logits, full[:, t], atol=1e-5, rtol=1e-5)
    assert np.ptp(full) > 1.0  # Not degenerate.


def test_default_start_token_id():
    assert zoo.build_translator("tiny").default_start_token_id == START
    assert _spread_model(decoder_start_token_id=7).default_start_token_id == 7


def _dense_weights(model):
    return {v.path for v in model.weights if v.path.startswith("logits/")}


def test_tied_output_reads_the_target_table_and_its_bias():
    model = _spread_model(**OPTIONS["tied output with logits bias"])
    assert model.source_embedding is not model.target_embedding
    assert model.output_dense is None and not _dense_weights(model)
    assert model.decoder_stack().output_dense is None
    embedding = model.target_embedding
    table = keras.ops.convert_to_numpy(embedding.token_embedding.embeddings)
    bias = keras.ops.convert_to_numpy(embedding.logits_bias)
    assert np.abs(bias).max() > 0.1
    hidden = np.random.default_rng(0).normal(size=(2, 3, model.model_dim))
    hidden = hidden.astype("float32")
    assert_all_close(model._logits(hidden), hidden @ table.T + bias, atol=1e-5)
    source_table = model.source_embedding.token_embedding.embeddings
    assert tuple(source_table.shape) == (37, model.model_dim)
    assert model.source_embedding.logits_bias is None
    # Without `logits_bias`, a tied output has no bias (as before).
    plain = _spread_model(tie_output_embedding=True, source_vocabulary_size=37)
    assert plain.target_embedding.logits_bias is None
    assert plain.count_params() == model.count_params() - 41


def test_logits_bias_false_drops_the_dense_bias():
    assert _dense_weights(_spread_model()) == {"logits/kernel", "logits/bias"}
    assert _dense_weights(_spread_model(logits_bias=False)) == {"logits/kernel"}


@pytest.mark.parametrize("activation", ["gelu", "swish", "silu"])
def test_activation_reaches_every_block(activation):
    model = _spread_model(activation=activation)
    blocks = model.encoder_blocks + model.decoder_blocks
    expected = keras.activations.get(activation)
    for block in blocks:
        assert block.spec().feed_forward.activation is expected
    relu = _spread_model()
    relu.set_weights(model.get_weights())
    inputs = _inputs(model)
    assert np.abs(np.asarray(relu(inputs)) - np.asarray(model(inputs))).max() > 1e-3


def test_scale_embeddings_scales_tokens_before_adding_positions():
    model = _spread_model(scale_embeddings=True, sinusoidal_layout="concatenated")
    embedding = model.source_embedding
    ids = _inputs(model)["encoder_token_ids"][:1, :4]
    table = keras.ops.convert_to_numpy(embedding.token_embedding.embeddings)
    positions = keras.ops.convert_to_numpy(embedding.position_table())[:4]
    expected = table[ids] * np.sqrt(model.model_dim) + positions[None]
    assert_all_close(embedding(ids), expected, atol=1e-5)


@pytest.mark.parametrize(
    "overrides, pattern",
    [
        ({"activation": "tanh"}, r"`activation` must be one of .*'tanh'"),
        ({"sinusoidal_layout": "sines"}, r"`sinusoidal_layout` must be one of"),
        ({"tie_output_embedding": "yes"}, r"`tie_output_embedding` must be True"),
        ({"logits_bias": 1}, r"`logits_bias` must be True or False"),
        ({"decoder_start_token_id": 0}, r"`decoder_start_token_id` must not be"),
        ({"decoder_start_token_id": 99}, r"`decoder_start_token_id` must be an int"),
    ],
)
def test_bad_options_are_refused_in_one_line(overrides, pattern):
    with pytest.raises(ValueError, match=pattern) as error:
        zoo.build_translator("tiny", vocabulary_size=41, **overrides)
    assert "\n" not in str(error.value)
