"""A token id outside the vocabulary gets one `ValueError` on every path.

Inside a compiled step an embedding lookup past its table fails with
TensorFlow's `InvalidArgumentError`, or reads NaN on JAX. So every zoo model
refuses such ids, and class or token targets out of range, before any graph
runs: in an eager call, in `fit`, `evaluate`, `predict` and the `*_on_batch`
methods given arrays, and in `generate` and `beam_search`. Each case checks
the whole message, which names the input and the valid range.
"""

import re

import keras
import numpy as np
import pytest

import zoo
from keras_seq.validation import check_token_id

V = 30  # Every tiny model here is built on this vocabulary.
GOOD = np.array([[5, 6, 7, 0], [1, 2, 3, 4]], "int32")  # (2, 4), 0 = padding
TOO_LARGE = np.array([[5, 6, V, 0], [1, 2, 3, V + 7]], "int32")
NEGATIVE = np.array([[5, -1, 7, 0], [1, 2, 3, 4]], "int32")


def _message(name, low, high, size=V, size_name="vocabulary_size"):
    return (
        f"`{name}` must lie in [0, {size}) ({size_name}={size}); "
        f"received values in [{low}, {high}]."
    )


TOO_LARGE_RANGE = (0, V + 7)
NEGATIVE_RANGE = (-1, 7)

SEQ2SEQ = ("translator", "rnn_translator", "rnn_seq2seq")
BUILDERS = {
    "classifier": zoo.build_classifier,
    "masked_language_model": zoo.build_masked_language_model,
    "language_model": zoo.build_language_model,
    "rnn_language_model": zoo.build_rnn_language_model,
    "translator": zoo.build_translator,
    "rnn_translator": zoo.build_rnn_translator,
    "rnn_seq2seq": zoo.build_rnn_seq2seq,
}
# The hyperparameter named when a target is out of range.
LABEL_BOUND = {
    "classifier": "num_classes",
    "masked_language_model": "vocabulary_size",
    "language_model": "vocabulary_size",
    "rnn_language_model": "vocabulary_size",
    "translator": "target_vocabulary_size",
    "rnn_translator": "target_vocabulary_size",
    "rnn_seq2seq": "target_vocabulary_size",
}


@pytest.fixture(scope="module")
def models():
    keras.utils.set_random_seed(0)
    built = {}
    for family, builder in BUILDERS.items():
        model = builder("tiny", vocabulary_size=V)
        model.compile(
            "sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        )
        built[family] = model
    return built


def _inputs(family, encoder=GOOD, decoder=GOOD):
    """`x` of a family: ids, or a dict of source and target ids."""
    if family in SEQ2SEQ:
        return {"encoder_token_ids": encoder, "decoder_token_ids": decoder}
    return encoder


def _targets(family):
    """Valid targets: class ids for the classifier, token ids otherwise."""
    return np.array([0, 1], "int32") if family == "classifier" else GOOD


def _input_name(family, which):
    if family not in SEQ2SEQ:
        return "token_ids"
    return f"{which}_token_ids"


METHODS = {
    "fit": lambda m, x, y: m.fit(x, y, epochs=1, verbose=0),
    "evaluate": lambda m, x, y: m.evaluate(x, y, verbose=0),
    "predict": lambda m, x, y: m.predict(x, verbose=0),
    "train_on_batch": lambda m, x, y: m.train_on_batch(x, y),
    "test_on_batch": lambda m, x, y: m.test_on_batch(x, y),
    "predict_on_batch": lambda m, x, y: m.predict_on_batch(x),
}


@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize("family", sorted(BUILDERS))
def test_methods_refuse_ids_past_the_vocabulary(models, family, method):
    model = models[family]
    x = _inputs(family, encoder=TOO_LARGE)
    expected = _message(_input_name(family, "encoder"), *TOO_LARGE_RANGE)
    with pytest.raises(ValueError) as info:
        METHODS[method](model, x, _targets(family))
    assert str(info.value) == expected


@pytest.mark.parametrize("family", sorted(BUILDERS))
def test_predict_refuses_negative_ids(models, family):
    # A negative id in the last input: the decoder's for the seq2seq models.
    if family in SEQ2SEQ:
        x, name = _inputs(family, decoder=NEGATIVE), "decoder_token_ids"
    else:
        x, name = NEGATIVE, "token_ids"
    with pytest.raises(ValueError) as info:
        models[family].predict(x, verbose=0)
    assert str(info.value) == _message(name, *NEGATIVE_RANGE)


@pytest.mark.parametrize("family", sorted(BUILDERS))
def test_eager_call_names_the_input(models, family):
    which = "decoder" if family in SEQ2SEQ else "encoder"
    x = _inputs(family, **{which: TOO_LARGE})
    expected = _message(_input_name(family, which), *TOO_LARGE_RANGE)
    # Keras adds the layer's name and arguments around the message.
    with pytest.raises(ValueError, match=re.escape(expected)):
        models[family](x)


@pytest.mark.parametrize("method", ["fit", "evaluate", "train_on_batch"])
@pytest.mark.parametrize("family", sorted(BUILDERS))
def test_targets_out_of_range_are_refused(models, family, method):
    bound = LABEL_BOUND[family]
    size = getattr(models[family], bound)
    y = _targets(family).copy()
    y[1, ...] = size + 3
    expected = _message("y", 0, size + 3, size=size, size_name=bound)
    with pytest.raises(ValueError) as info:
        METHODS[method](models[family], _inputs(family), y)
    assert str(info.value) == expected


@pytest.mark.parametrize("family", ["classifier", "translator"])
def test_validation_data_is_checked_before_training(models, family):
    model = models[family]
    weights = [w.copy() for w in model.get_weights()]
    if family in SEQ2SEQ:
        bad_x = _inputs(family, encoder=TOO_LARGE)
        name = "validation_data[0]['encoder_token_ids']"
    else:
        bad_x, name = TOO_LARGE, "validation_data[0]"
    y = _targets(family)
    with pytest.raises(ValueError) as info:
        model.fit(_inputs(family), y, validation_data=(bad_x, y), verbose=0)
    assert str(info.value) == _message(name, *TOO_LARGE_RANGE)
    # Refused before the first step: no weight moved.
    for before, after in zip(weights, model.get_weights()):
        np.testing.assert_array_equal(before, after)

    bad_y = y.copy()
    bad_y[0, ...] = -2
    size = getattr(model, LABEL_BOUND[family])
    with pytest.raises(ValueError) as info:
        model.fit(
            _inputs(family), y, validation_data=(_inputs(family), bad_y), verbose=0
        )
    high = 1 if family == "classifier" else 4  # What is left of `y`.
    assert str(info.value) == _message(
        "validation_data[1]", -2, high, size=size, size_name=LABEL_BOUND[family]
    )


def test_valid_ids_still_train_and_predict(models):
    """The checks pass valid arrays and a `tf.data` dataset through."""
    import tensorflow as tf

    model = models["classifier"]
    y = np.array([0, 1], "int32")
    history = model.fit(GOOD, y, validation_data=(GOOD, y), epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    dataset = tf.data.Dataset.from_tensor_slices((GOOD, y)).batch(2)
    assert len(model.fit(dataset, shuffle=False, verbose=0).history["loss"]) == 1
    probabilities = model.predict(dataset.map(lambda x, _: x), verbose=0)
    np.testing.assert_allclose(probabilities, model.predict(GOOD, verbose=0))
    # Ids V - 1 and 0 are the ends of the valid range.
    edges = np.array([[V - 1, 0, 0, 0]], "int32")
    assert np.isfinite(model.predict(edges, verbose=0)).all()


def test_a_single_logit_takes_binary_targets():
    """With one logit the targets are a binary loss's 0/1, not class ids."""
    keras.utils.set_random_seed(0)
    model = zoo.build_classifier("tiny", vocabulary_size=V, num_classes=1)
    model.compile("sgd", keras.losses.BinaryCrossentropy(from_logits=True))
    y = np.array([[0], [1]], "int32")
    assert np.isfinite(model.evaluate(GOOD, y, verbose=0))


GENERATIVE = ("translator", "rnn_translator", "language_model")
SEARCHES = {
    "generate": lambda m, ids, **kw: m.generate(ids, 4, **kw),
    "generate_beam": lambda m, ids, **kw: m.generate(ids, 4, strategy="beam", **kw),
    "beam_search": lambda m, ids, **kw: m.beam_search(ids, 4, beam_width=2, **kw),
}


@pytest.mark.parametrize("search", sorted(SEARCHES))
@pytest.mark.parametrize("family", GENERATIVE)
@pytest.mark.parametrize(
    "ids, received",
    [(TOO_LARGE, TOO_LARGE_RANGE), (NEGATIVE, NEGATIVE_RANGE)],
    ids=["too_large", "negative"],
)
def test_prompts_out_of_range_are_refused(models, family, search, ids, received):
    if family == "language_model":
        # A prompt has no padding; its first three columns keep the bad id.
        ids, received = ids[:, :3], (1, V) if ids is TOO_LARGE else received
    with pytest.raises(ValueError) as info:
        SEARCHES[search](models[family], ids)
    assert str(info.value) == _message("token_ids", *received)


SPECIAL_IDS = {
    "start_token_id": (
        [V, -1, 2.0, True],
        f"`start_token_id` must be an int id in [0, {V})",
    ),
    "end_token_id": (
        [V, V + 9, 3.0],
        f"`end_token_id` must be an int id in [0, {V}), or None (or a negative "
        "id) for no end token",
    ),
}


@pytest.mark.parametrize("search", sorted(SEARCHES))
@pytest.mark.parametrize("family", GENERATIVE)
@pytest.mark.parametrize("argument", sorted(SPECIAL_IDS))
def test_start_and_end_ids_beyond_the_output_are_refused(
    models, family, search, argument
):
    ids = GOOD[:, :3]  # a language model's prompt has no padding
    values, expected = SPECIAL_IDS[argument]
    for value in values:
        with pytest.raises(ValueError) as info:
            SEARCHES[search](models[family], ids, **{argument: value})
        assert str(info.value) == f"{expected}; received {value!r}."
    # The checks run before anything is traced, so the accepted ids are
    # shown on the check itself: the last id, and no end token.
    check_token_id(V - 1, argument, V, allow_no_end=argument == "end_token_id")
    if argument == "end_token_id":
        check_token_id(None, argument, V, allow_no_end=True)
        check_token_id(-1, argument, V, allow_no_end=True)
