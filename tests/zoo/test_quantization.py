"""Keras' post-training quantization (`model.quantize("int8")`, and
`"int4"` on the Transformer translator and language model) on every zoo
family: logits close to float, generation over the quantized weights, and
an exact `.keras` round trip, on every backend (each int4 case on one)."""

import keras
import numpy as np
import pytest
from keras import ops

import zoo
from keras_seq.text.vocabulary import START_ID

VOCABULARY_SIZE = 100


def _ids(rng, batch, length):
    # Ids from 5 on: no padding and no special token.
    return rng.integers(5, VOCABULARY_SIZE, size=(batch, length)).astype("int32")


def _pair(rng):
    return {
        "encoder_token_ids": _ids(rng, 3, 7),
        "decoder_token_ids": _ids(rng, 3, 5),
    }


def _sequence(rng):
    return _ids(rng, 3, 6)


# name: (builder of a tiny model, its inputs).
FAMILIES = {
    "translator": (lambda: zoo.build_translator("tiny"), _pair),
    "tied_translator": (
        lambda: zoo.build_translator("tiny", tie_embeddings=True),
        _pair,
    ),
    "language_model": (lambda: zoo.build_language_model("tiny"), _sequence),
    "classifier": (lambda: zoo.build_classifier("tiny"), _sequence),
    "masked_language_model": (
        lambda: zoo.build_masked_language_model("tiny"),
        _sequence,
    ),
    "rnn_translator": (lambda: zoo.build_rnn_translator("tiny"), _pair),
    "rnn_seq2seq": (lambda: zoo.build_rnn_seq2seq("tiny"), _pair),
    "rnn_language_model": (lambda: zoo.build_rnn_language_model("tiny"), _sequence),
}


def _on(backend, *values):
    """A parameter run on `backend` only: each int4 case runs on one
    backend, the cases spread over the three, so that every backend
    quantizes to int4 while the suite stays within its time (each case
    compiles and saves a model of its own)."""
    return pytest.param(
        *values,
        marks=pytest.mark.skipif(
            keras.backend.backend() != backend, reason=f"int4 runs on {backend}"
        ),
    )


# `(family, mode)` of each quantized model: int8 on every family; int4,
# Keras' 4-bit weights, on the Transformer translator and language model.
QUANTIZED = [(name, "int8") for name in sorted(FAMILIES)] + [
    _on("tensorflow", ("translator", "int4")),
    _on("torch", ("language_model", "int4")),
]

# The largest logit error allowed, as a fraction of the float logits' range.
# Int8 with one scale per output channel of a weight and one per row of an
# activation rounds each factor of a product by at most half a step, 1/254
# of that row's or channel's largest value. A logit goes through about a
# dozen such products in series (embedding, attention, feed-forward,
# output), so a few percent of the logits' range bounds the error; the tiny
# models here stay under 2.5%. Int4 rounds the weights only (activations
# stay float), each to one of 16 levels scaled by the largest of its group
# of (up to) 128 inputs: half a step is 1/14 of that value, 18 times
# int8's, so the same products put the error under 18 x 2.5% = 45%; the
# tiny models here reach 10% to 31%.
RELATIVE_TOLERANCE = {"int8": 0.05, "int4": 0.5}


def _numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


def _quantized_kinds(model, mode):
    return {
        type(layer).__name__
        for layer in model._flatten_layers()
        if layer.quantization_mode == mode
    }


@pytest.fixture(scope="module", params=QUANTIZED, ids="-".join)
def quantized(request, tmp_path_factory):
    """`(name, mode, float model's outputs, quantized model, inputs, .keras
    path)`."""
    name, mode = request.param
    keras.utils.set_random_seed(0)
    build, make_inputs = FAMILIES[name]
    model = build()
    inputs = make_inputs(np.random.default_rng(0))
    float_outputs = _numpy(model(inputs))
    model.quantize(mode)
    path = tmp_path_factory.mktemp("quantized") / f"{name}-{mode}.keras"
    model.save(path)
    return name, mode, float_outputs, model, inputs, path


def test_logits_close_to_float(quantized):
    name, mode, float_outputs, model, inputs, _ = quantized
    outputs = _numpy(model(inputs))
    error = np.abs(outputs - float_outputs).max()
    assert error <= RELATIVE_TOLERANCE[mode] * np.abs(float_outputs).max()
    assert error > 0  # The quantized weights are the ones read.
    # The output projection and the token table are among them.
    kinds = _quantized_kinds(model, mode)
    if name in ("tied_translator", "language_model"):
        assert "ReversibleEmbedding" in kinds
    elif "rnn" not in name:
        assert {"ReversibleEmbedding", "Dense", "EinsumDense"} <= kinds
    else:
        assert {"Embedding", "LogitsDense"} & kinds


def test_keras_file_round_trip_is_exact(quantized):
    _, mode, _, model, inputs, path = quantized
    loaded = keras.saving.load_model(path)
    np.testing.assert_array_equal(_numpy(loaded(inputs)), _numpy(model(inputs)))
    assert _quantized_kinds(loaded, mode) == _quantized_kinds(model, mode)
    assert loaded.get_config() == model.get_config()


def test_float_config_records_no_quantization():
    assert "quantization" not in zoo.build_translator("tiny").get_config()


def _blanked(model, logits):
    """Logits as decoding reads them: the model's never-output tokens at
    -inf (`unsamplable_token_ids`; no end token is given here)."""
    logits = _numpy(logits).copy()
    logits[..., list(model.unsamplable_token_ids)] = -np.inf
    return logits


def _reference_scores(model, source, ids):
    """Sum of log-probabilities of `ids` (B, K, M) under full passes.

    With no end token and no length penalty, this is what `beam_search`
    scores each hypothesis; computed here by teacher-forced calls of the
    whole model, not by the decoding loop.
    """
    batch, beams, length = ids.shape
    flat = ids.reshape(batch * beams, length)
    if isinstance(model, zoo.Translator):
        given = np.full((batch * beams, 1), START_ID, "int32")
        logits = model(
            {
                "encoder_token_ids": np.repeat(source, beams, axis=0),
                "decoder_token_ids": np.concatenate([given, flat[:, :-1]], 1),
            }
        )
    else:  # A language model continuing `source`.
        prompt = np.repeat(source, beams, axis=0)
        full = np.concatenate([prompt, flat[:, :-1]], axis=1)
        logits = model(full)[:, prompt.shape[1] - 1 :]
    log_probs = _numpy(ops.log_softmax(_blanked(model, logits), axis=-1))
    chosen = np.take_along_axis(log_probs, flat[..., None], axis=-1)[..., 0]
    return chosen.sum(axis=1).reshape(batch, beams)


@pytest.mark.parametrize(
    ("family", "mode"),
    [
        ("tied_translator", "int8"),
        ("language_model", "int8"),
        _on("torch", "translator", "int4"),
        _on("jax", "language_model", "int4"),
    ],
)
def test_generation_reads_the_quantized_weights(family, mode):
    keras.utils.set_random_seed(1)
    build, _ = FAMILIES[family]
    model = build()
    rng = np.random.default_rng(1)
    source = _ids(rng, 2, 3 if family == "language_model" else 6)
    options = dict(beam_width=3, num_return=3, length_penalty=0.0, end_token_id=None)

    # Compiled over the float weights first, as a notebook would.
    ids, scores = (_numpy(x) for x in model.beam_search(source, 5, **options))
    float_reference = _reference_scores(model, source, ids)
    np.testing.assert_allclose(scores, float_reference, atol=1e-5)

    model.quantize(mode)
    ids, scores = (_numpy(x) for x in model.beam_search(source, 5, **options))
    reference = _reference_scores(model, source, ids)
    np.testing.assert_allclose(scores, reference, atol=1e-5)
    # Float weights would score these hypotheses measurably otherwise.
    assert np.abs(_reference_scores_float(build, source, ids) - scores).max() > 1e-4
    # Greedy decoding follows the quantized logits as well: each id is the
    # argmax of the full pass over the ids before it.
    greedy = _numpy(model.generate(source, 5, end_token_id=None))
    np.testing.assert_array_equal(greedy, _greedy_reference(model, source, 5))


def _reference_scores_float(build, source, ids):
    keras.utils.set_random_seed(1)
    return _reference_scores(build(), source, ids)


def _greedy_reference(model, source, length):
    """Greedy ids by rerunning the whole model on each longer prefix.

    Each pass reads ids of the full `length` (the ids not yet chosen are 1,
    an ordinary token): the decoder is causal, so position t's logits see
    ids up to t only, and one input shape lets eager backends reuse the
    ops they compiled for the first pass.
    """
    batch = source.shape[0]
    ids = np.ones((batch, length), "int32")
    for t in range(length):
        if isinstance(model, zoo.Translator):
            given = np.full((batch, 1), START_ID, "int32")
            logits = model(
                {
                    "encoder_token_ids": source,
                    "decoder_token_ids": np.concatenate([given, ids[:, :-1]], 1),
                }
            )[:, t]
        else:
            logits = model(np.concatenate([source, ids[:, :-1]], axis=1))
            logits = logits[:, source.shape[1] - 1 + t]
        ids[:, t] = _blanked(model, logits).argmax(axis=-1)
    return ids


@pytest.mark.parametrize("mode", ["int8", _on("torch", "int4")])
def test_quantize_skips_what_keras_cannot_quantize(mode):
    model = zoo.build_rnn_translator("tiny", score="additive")
    model.quantize(mode)
    kinds = {layer.name: layer.quantization_mode for layer in model._flatten_layers()}
    # The score vector v stays float; the projections around it are quantized.
    assert kinds["score_vector"] is None
    assert mode in kinds.values()
