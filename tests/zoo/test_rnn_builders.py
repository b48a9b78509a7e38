"""The RNN builders: Eq. (7.2), (7.14)-(7.19), Fig. 7.9 and Fig. 7.10.

On JAX every eager call of a recurrent model compiles its scan, and every
new weight shape compiles its initializer, so the tests share read-only
tiny models (`_shared`) and batch the inputs they compare.
"""

import keras
import numpy as np
import pytest
from keras import ops

import zoo
from keras_seq.losses import MaskedSparseCategoricalCrossentropy
from keras_seq.testing import run_model_saving_test
from zoo.rnn import ReverseTokens, reverse_real_tokens

BUILDERS = {
    "rnn_language_model": (
        zoo.build_rnn_language_model,
        zoo.RNN_LANGUAGE_MODEL_PRESETS,
    ),
    "rnn_seq2seq": (zoo.build_rnn_seq2seq, zoo.RNN_SEQ2SEQ_PRESETS),
    "rnn_translator": (zoo.build_rnn_translator, zoo.RNN_TRANSLATOR_PRESETS),
}
PRESET_CASES = [
    (family, preset) for family, (_, presets) in BUILDERS.items() for preset in presets
]
_SHARED = {}


def _shared(family, **overrides):
    """A tiny model built once per module; only for tests that do not train."""
    key = (family, tuple(sorted(overrides.items())))
    if key not in _SHARED:
        _SHARED[key] = BUILDERS[family][0]("tiny", **overrides)
    return _SHARED[key]


def _ids(batch, length, vocabulary_size=100, seed=0, pad=2):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, vocabulary_size, size=(batch, length)).astype("int32")
    if pad:
        ids[:, length - pad :] = 0
    return ids


def _pair(batch=3, source_length=7, target_length=6):
    """Sources with 0, 1, 2, ... trailing pads per row; post-padded targets."""
    source = _ids(batch, source_length, seed=0, pad=0)
    for row in range(batch):
        source[row, source_length - row :] = 0
    return {
        "encoder_token_ids": source,
        "decoder_token_ids": _ids(batch, target_length, seed=1, pad=1),
    }


def _inputs(family):
    return _ids(3, 6) if family == "rnn_language_model" else _pair()


def _numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


def _logits(model, x):
    """Inference logits. On JAX an eager call compiles the scans anew each
    time; `predict_on_batch` compiles once per model and input shape."""
    if keras.backend.backend() == "jax":
        return np.asarray(model.predict_on_batch(x))
    return _numpy(model(x))


# Sizes, by hand.


def _simple(units, inputs):
    """Eq. (7.2): W_hh (H, H), W_hx (H, p) and b_h."""
    return units * (inputs + units) + units


def _lstm(units, inputs):
    """Eq. (7.16)-(7.17): the candidate and three gates, each W_h (H, H),
    W_x (H, p) and a bias."""
    return 4 * (units * (inputs + units) + units)


def _gru(units, inputs):
    """Eq. (7.18)-(7.19) as Keras builds it with `reset_after=True`: the
    candidate and two gates, each W_h and W_x, and two biases per gate (one
    on the input side, one on the recurrent side)."""
    return 3 * units * (inputs + units) + 2 * 3 * units


_CELL_PARAMS = {"simple": _simple, "lstm": _lstm, "gru": _gru}


def _expected_params(family, config):
    """The parameter count of a builder config, from the formulas above."""
    cell = _CELL_PARAMS[config["cell"]]
    units, embedding = config["units"], config["embedding_dim"]
    if family == "rnn_language_model":
        vocabulary = config["vocabulary_size"]
        directions = 2 if config.get("bidirectional") else 1
        total = vocabulary * embedding  # token table
        inputs = embedding
        for _ in range(config["num_layers"]):  # Eq. (7.15), each (7.14)
            total += directions * cell(units, inputs)
            inputs = directions * units
        return total + inputs * vocabulary + vocabulary  # output layer
    source, target = config["source_vocabulary_size"], config["target_vocabulary_size"]
    total = (source + target) * embedding  # two token tables
    if family == "rnn_seq2seq":
        context = units if config.get("feed_context") else 0  # Fig. 7.9 (b)
        for layer in range(config["num_layers"]):
            total += cell(units, embedding if layer == 0 else units)  # encoder
            total += cell(units, embedding + context if layer == 0 else units)
        return total + (units + context) * target + target
    encoder = config["encoder_units"]
    attention = {  # ScoreAttention with U = units hidden units
        "dot": 0,
        "scaled_dot": 0,
        "general": units * 2 * encoder,
        "additive": (units + 2 * encoder + 1) * units,
        "concat": (units + 2 * encoder + 2) * units,
    }[config["score"]]
    total += 2 * cell(encoder, embedding)  # bidirectional encoder, Eq. (7.14)
    total += 2 * encoder * units + units  # bridge to s(0)
    total += attention + cell(units, embedding + 2 * encoder)  # [y; u] input
    return total + (units + 2 * encoder) * target + target  # from [s; u]


@pytest.mark.parametrize("family, preset", PRESET_CASES)
def test_preset_parameter_counts_match_the_formulas(family, preset):
    presets = BUILDERS[family][1]
    assert (
        _expected_params(family, presets[preset]["config"])
        == (presets[preset]["params"])
    )
    assert presets[preset]["description"]


@pytest.mark.parametrize("family", BUILDERS)
def test_tiny_preset_parameter_counts(family):
    model = _shared(family)
    assert model.count_params() == BUILDERS[family][1]["tiny"]["params"]


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="Counts do not depend on the backend; on JAX the 8,000-token "
    "presets cost ~20 s of initializer compilation for no new information.",
)
@pytest.mark.parametrize("family", BUILDERS)
def test_small_preset_parameter_counts(family):
    build, presets = BUILDERS[family]
    assert build("small").count_params() == presets["small"]["params"]


def test_parameter_counts_by_hand():
    # LSTM language model: V = 100, E = 16, H = 16, L = 2.
    model = _shared("rnn_language_model")
    assert _lstm(16, 16) == 2112
    assert [layer.count_params() for layer in model.recurrent_layers] == [2112] * 2
    assert model.count_params() == 100 * 16 + 2 * 2112 + (16 * 100 + 100) == 7524

    # Attention translator: V = 100, E = 16, K = 8 per direction, H = 16.
    model = _shared("rnn_translator")
    encoder = 2 * (3 * 8 * (16 + 8) + 2 * 3 * 8)  # both GRU directions
    bridge = 16 * 16 + 16  # [h_f; h_r] (2K) -> s(0) (H)
    attention = (16 + 16 + 1) * 16  # additive: W_q (H, U), W_k (2K, U), v (U)
    decoder_cell = 3 * 16 * (32 + 16) + 2 * 3 * 16  # input [y(t-1); u(t)]
    logits = (16 + 16) * 100 + 100  # from [s(t); u(t)]
    assert model.encoder.count_params() == encoder == 1248
    assert model.decoder.attention.count_params() == attention == 528
    assert model.decoder.recurrent_cell.count_params() == decoder_cell == 2400
    assert model.count_params() == (
        2 * 100 * 16 + encoder + bridge + attention + decoder_cell + logits
    )


@pytest.mark.parametrize(
    "family, overrides",
    [
        ("rnn_language_model", {"cell": "simple", "num_layers": 1}),
        ("rnn_language_model", {"bidirectional": True, "num_layers": 1}),
        ("rnn_seq2seq", {"feed_context": True}),
        ("rnn_translator", {"cell": "lstm", "score": "concat"}),
        ("rnn_translator", {"score": "general"}),
        ("rnn_translator", {"score": "dot"}),
    ],
    ids=[
        "simple_rnn",
        "bidirectional",
        "context_fed",
        "lstm_concat",
        "general",
        "dot",
    ],
)
def test_variant_parameter_counts(family, overrides):
    model = _shared(family, **overrides)
    config = {**BUILDERS[family][1]["tiny"]["config"], **overrides}
    assert model.count_params() == _expected_params(family, config)


# Saving and training.


@pytest.mark.parametrize("family", BUILDERS)
def test_named_inputs_save_and_load(family):
    model = _shared(family)
    names = sorted(i.name for i in keras.tree.flatten(model.inputs))
    expected = (
        ["token_ids"]
        if family == "rnn_language_model"
        else ["decoder_token_ids", "encoder_token_ids"]
    )
    assert names == expected
    # The masked loss handles padding; a mask on the logits would re-weight it.
    assert getattr(model.outputs[0], "_keras_mask", None) is None
    restored = run_model_saving_test(model, _inputs(family), atol=1e-6)
    assert type(restored) is type(model)
    assert restored.get_config() == model.get_config()
    assert [layer.name for layer in model.layers] == [
        layer.name for layer in restored.layers
    ]


def test_context_fed_reversed_seq2seq_saves_and_loads():
    overrides = {"cell": "lstm", "feed_context": True, "reverse_source": True}
    model = _shared("rnn_seq2seq", **overrides)
    restored = run_model_saving_test(model, _pair(), atol=1e-6)
    assert restored.get_config() == model.get_config()


@pytest.mark.parametrize("family", BUILDERS)
def test_a_few_fit_steps_lower_the_loss(family):
    build, _ = BUILDERS[family]
    keras.utils.set_random_seed(0)
    model = build("tiny")
    x = _inputs(family)
    ids = x if family == "rnn_language_model" else x["decoder_token_ids"]
    y = np.roll(ids, -1, axis=1)
    model.compile(
        optimizer=keras.optimizers.Adam(2e-2),
        loss=MaskedSparseCategoricalCrossentropy(),
    )
    # `train_on_batch` reports the loss before each update.
    losses = [float(model.train_on_batch(x, y)) for _ in range(12)]
    assert np.isfinite(losses).all()
    assert losses[-1] < 0.8 * losses[0]


# Masks and causality.


@pytest.mark.parametrize(
    "family, overrides",
    [
        ("rnn_translator", {}),
        ("rnn_seq2seq", {"cell": "lstm", "feed_context": True, "reverse_source": True}),
    ],
    ids=["translator", "seq2seq"],
)
def test_source_padding_does_not_change_logits(family, overrides):
    model = _shared(family, **overrides)
    x = _pair()
    longer = dict(x)
    extra = np.zeros((3, 4), "int32")
    longer["encoder_token_ids"] = np.concatenate([x["encoder_token_ids"], extra], 1)
    np.testing.assert_allclose(_logits(model, longer), _logits(model, x), atol=1e-5)


def _perturb_after(ids, t):
    changed = ids.copy()
    changed[:, t + 1 :] = (changed[:, t + 1 :] + 7) % 99 + 1
    return changed


@pytest.mark.parametrize(
    "family, overrides",
    [
        ("rnn_translator", {}),
        ("rnn_seq2seq", {"feed_context": True}),
        ("rnn_language_model", {}),
    ],
    ids=["translator", "seq2seq", "language_model"],
)
def test_decoder_is_causal(family, overrides):
    """Changing target tokens after t changes no logit at or before t."""
    model, t = _shared(family, **overrides), 2
    if family == "rnn_language_model":
        x = _ids(3, 6, pad=0)
        perturbed = _perturb_after(x, t)
    else:
        x = _pair()
        perturbed = dict(x)
        perturbed["decoder_token_ids"] = _perturb_after(x["decoder_token_ids"], t)
    original, changed = _logits(model, x), _logits(model, perturbed)
    np.testing.assert_allclose(original[:, : t + 1], changed[:, : t + 1], atol=1e-6)
    assert np.abs(original[:, t + 1 :] - changed[:, t + 1 :]).max() > 1e-4


def test_bidirectional_language_model_sees_the_future():
    """Documented: a bidirectional LM is a representation model, not causal."""
    model = _shared("rnn_language_model", bidirectional=True, num_layers=1)
    assert not model.is_causal
    assert _shared("rnn_language_model").is_causal
    ids = _ids(3, 6, pad=0)
    changed = ids.copy()
    changed[:, 4] = (changed[:, 4] + 5) % 99 + 1
    original, perturbed = _logits(model, ids), _logits(model, changed)
    assert np.abs(original[:, :4] - perturbed[:, :4]).max() > 1e-6


# Attention weights and step-by-step decoding.


def _decode_step_by_step(model, x):
    """Logits of `decoding_step` and, per step, the attention weights of
    the decoder layer's own step (`AttentionDecoder.step`)."""
    target = x["decoder_token_ids"]
    given, context, state = model.start_decoding(
        x["encoder_token_ids"], target.shape[1], 2
    )
    np.testing.assert_array_equal(_numpy(given), np.full((len(target), 1), 2))
    encoded, mask = context
    if model.cell == "lstm":  # [h, c]; the memory cell starts at zero
        assert len(state) == 2
        np.testing.assert_array_equal(_numpy(state[1]), 0.0)
    else:
        assert len(state) == 1
    logits, weights = [], []
    for t in range(target.shape[1]):
        embedded = model.target_embedding(target[:, t])  # (B, E)
        _, _, step_weights = model.decoder.step(state, embedded, encoded, mask)
        step_logits, state = model.decoding_step(
            target[:, t : t + 1], t, context, state
        )
        logits.append(_numpy(step_logits))
        weights.append(_numpy(step_weights))
    return np.stack(logits, 1), np.stack(weights, 1)


@pytest.mark.parametrize(
    "overrides",
    [{}, {"cell": "lstm", "score": "concat"}],
    ids=["gru_additive", "lstm_concat"],
)
def test_step_by_step_decoding_equals_teacher_forcing(overrides):
    model = _shared("rnn_translator", **overrides)
    x = _pair()
    logits, weights = _decode_step_by_step(model, x)
    np.testing.assert_allclose(logits, _logits(model, x), atol=1e-5)

    # Fig. 7.11-style weights: rows sum to 1 over the real source tokens.
    expected = _numpy(
        model.attention_weights(x["encoder_token_ids"], x["decoder_token_ids"])
    )
    np.testing.assert_allclose(weights, expected, atol=1e-5)
    assert expected.shape == (3, 6, 7)
    np.testing.assert_allclose(expected.sum(-1), 1.0, atol=1e-5)
    padded = np.broadcast_to((x["encoder_token_ids"] == 0)[:, None, :], expected.shape)
    assert np.all(expected[padded] == 0.0)
    assert np.all(expected[~padded] > 0.0)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_generate_greedy_equals_full_recompute(cell):
    """The compiled loop over the carried state picks the tokens that
    rerunning the whole teacher-forced model on its own output picks."""
    keras.utils.set_random_seed(5)
    model = zoo.build_rnn_translator("tiny", cell=cell)
    source = _pair()["encoder_token_ids"]
    steps = 6
    # One padded length for every pass (one trace on JAX); the recurrence
    # runs left to right, so the padding cannot reach earlier steps.
    tokens = np.zeros((3, steps + 1), "int32")
    tokens[:, 0] = 2
    for t in range(steps):
        logits = _numpy(
            model({"encoder_token_ids": source, "decoder_token_ids": tokens})
        )
        # Decoding never writes the ids the model suppresses.
        logits[..., list(model.unsamplable_token_ids)] = -np.inf
        tokens[:, t + 1] = logits[:, t].argmax(-1)
    expected = tokens[:, 1:]
    assert len(np.unique(expected)) > 2  # Not a degenerate path.
    generated = _numpy(model.generate(source, max_new_tokens=steps, end_token_id=-1))
    np.testing.assert_array_equal(generated, expected)

    # With an end token that appears, each row stops there and pads.
    end = int(expected[0, 2])
    stopped = _numpy(model.generate(source, max_new_tokens=steps, end_token_id=end))
    first = list(stopped[0]).index(end)
    assert first <= 2 and np.all(stopped[0, first + 1 :] == 0)


def test_rnn_beam_search_scores_and_width_one():
    keras.utils.set_random_seed(6)
    model = zoo.build_rnn_translator("tiny")
    source = _pair()["encoder_token_ids"]
    greedy = _numpy(model.generate(source, max_new_tokens=5, end_token_id=7))
    one = _numpy(
        model.generate(
            source, max_new_tokens=5, end_token_id=7, strategy="beam", beam_width=1
        )
    )
    np.testing.assert_array_equal(one, greedy)
    ids, scores = model.beam_search(
        source, 5, beam_width=3, num_return=2, length_penalty=0.0, end_token_id=7
    )
    ids, scores = _numpy(ids), _numpy(scores)
    for row in range(3):
        tokens = list(ids[row, 0])
        tokens = tokens[: tokens.index(7) + 1] if 7 in tokens else tokens
        decoder = np.array([[2] + tokens[:-1]], "int32")
        logits = _logits(
            model,
            {"encoder_token_ids": source[row : row + 1], "decoder_token_ids": decoder},
        )[0].astype("float64")
        # Beam search normalises over the ids the model may write.
        logits[..., list(model.unsamplable_token_ids)] = -np.inf
        log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        total = sum(log_probs[t, token] for t, token in enumerate(tokens))
        assert scores[row, 0] == pytest.approx(total, abs=1e-3)
        assert scores[row, 0] >= scores[row, 1] - 1e-6


# Source reversal.


def test_reverse_source_reverses_only_real_tokens():
    ids = np.array([[5, 6, 7, 0, 0], [1, 2, 3, 4, 9], [8, 0, 0, 0, 0], [0] * 5])
    expected = np.array([[7, 6, 5, 0, 0], [9, 4, 3, 2, 1], [8, 0, 0, 0, 0], [0] * 5])
    dtypes = ["int32"] + (["int64"] if keras.backend.backend() != "jax" else [])
    for dtype in dtypes:
        tensor = ops.convert_to_tensor(ids, dtype)
        np.testing.assert_array_equal(_numpy(reverse_real_tokens(tensor)), expected)
    np.testing.assert_array_equal(_numpy(reverse_real_tokens(expected)), ids)
    layer_output = _numpy(ReverseTokens()(ids.astype("int32")))
    np.testing.assert_array_equal(layer_output, expected)


def test_reverse_source_model_equals_reversed_input():
    """The reversing model is the plain one fed reversed sources."""
    reversing = _shared("rnn_seq2seq", reverse_source=True)
    plain = zoo.build_rnn_seq2seq("tiny")
    plain.set_weights(reversing.get_weights())
    x = _pair()
    flipped = dict(x)
    flipped["encoder_token_ids"] = _numpy(reverse_real_tokens(x["encoder_token_ids"]))
    reversed_logits = _logits(reversing, x)
    np.testing.assert_allclose(reversed_logits, _logits(plain, flipped), atol=1e-6)
    assert np.abs(reversed_logits - _logits(plain, x)).max() > 1e-5


# Errors.


@pytest.mark.parametrize(
    "build, overrides, match",
    [
        (zoo.build_rnn_language_model, {"cell": "rnn"}, "`cell`"),
        (zoo.build_rnn_language_model, {"units": 0}, "`units`"),
        (zoo.build_rnn_language_model, {"num_layers": -1}, "`num_layers`"),
        (zoo.build_rnn_language_model, {"vocabulary_size": 2.5}, "`vocabulary_size`"),
        (zoo.build_rnn_language_model, {"dropout": 1.0}, "`dropout`"),
        (zoo.build_rnn_language_model, {"bidirectional": "yes"}, "`bidirectional`"),
        (zoo.build_rnn_seq2seq, {"embedding_dim": 0}, "`embedding_dim`"),
        (zoo.build_rnn_seq2seq, {"cell": "transformer"}, "`cell`"),
        (zoo.build_rnn_seq2seq, {"feed_context": 1}, "`feed_context`"),
        (zoo.build_rnn_translator, {"score": "cosine"}, "`score`"),
        (zoo.build_rnn_translator, {"cell": "simple"}, "`cell`"),
        (zoo.build_rnn_translator, {"encoder_units": 0}, "`encoder_units`"),
        (zoo.build_rnn_translator, {"score": "dot", "units": 12}, r"2 \* `encoder_"),
        (
            zoo.build_rnn_translator,
            {"target_vocabulary_size": -3},
            "`target_vocabulary_size`",
        ),
    ],
)
def test_bad_arguments_raise(build, overrides, match):
    with pytest.raises(ValueError, match=match):
        build("tiny", **overrides)


def test_unknown_preset_and_argument():
    with pytest.raises(ValueError, match="Unknown RNN translator `preset` 'huge'"):
        zoo.build_rnn_translator("huge")
    with pytest.raises(TypeError, match="Unknown RNN seq2seq arguments"):
        zoo.build_rnn_seq2seq("tiny", model_dim=3)
    with pytest.raises(TypeError, match="Unknown RNN language model arguments"):
        zoo.RNNLanguageModel(width=3)


# The context-vector seq2seq model generates (Fig. 7.9).

SEQ2SEQ_GENERATION = [
    {"cell": "gru"},
    {"cell": "lstm", "num_layers": 2, "feed_context": True, "reverse_source": True},
]


@pytest.mark.parametrize("overrides", SEQ2SEQ_GENERATION, ids=["gru", "lstm_b"])
def test_seq2seq_cached_steps_equal_the_full_pass(overrides):
    model = _shared("rnn_seq2seq", **overrides)
    x = _pair()
    target = x["decoder_token_ids"]
    full = _logits(model, x)  # (B, T, V)
    given, context, cache = model.start_decoding(
        x["encoder_token_ids"], target.shape[1], 2
    )
    np.testing.assert_array_equal(_numpy(given), np.full((len(target), 1), 2))
    steps = []
    for t in range(target.shape[1]):
        logits, cache = model.decoding_step(target[:, t : t + 1], t, context, cache)
        steps.append(_numpy(logits))
    np.testing.assert_allclose(np.stack(steps, 1), full, atol=1e-5)


@pytest.mark.parametrize("overrides", SEQ2SEQ_GENERATION, ids=["gru", "lstm_b"])
def test_seq2seq_greedy_is_the_full_recompute_and_one_beam(overrides):
    model = _shared("rnn_seq2seq", **overrides)
    source = _pair()["encoder_token_ids"]
    steps = 5
    # One padded length for every pass; the recurrence runs left to right.
    tokens = np.zeros((3, steps + 1), "int32")
    tokens[:, 0] = 2
    for t in range(steps):
        logits = _logits(
            model, {"encoder_token_ids": source, "decoder_token_ids": tokens}
        )
        logits[..., list(model.unsamplable_token_ids)] = -np.inf
        tokens[:, t + 1] = logits[:, t].argmax(-1)
    expected = tokens[:, 1:]
    assert model.unsamplable_token_ids == (0, 2, 4)  # [PAD], [START], [MASK]
    greedy = _numpy(model.generate(source, max_new_tokens=steps, end_token_id=-1))
    np.testing.assert_array_equal(greedy, expected)
    one = model.generate(
        source, max_new_tokens=steps, end_token_id=-1, strategy="beam", beam_width=1
    )
    np.testing.assert_array_equal(_numpy(one), expected)
