"""Tests for keras_seq.losses: the padding-masked, label-smoothed token loss."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_seq.losses import MaskedSparseCategoricalCrossentropy

LABELS = np.array([[3, 1, 0, 0], [2, 5, 4, 0]])  # 0 is padding.


def _logits(seed=0, shape=(2, 4, 6)):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def _reference_loss(labels, logits, eps, weights=None):
    """The smoothed cross-entropy of each real token, averaged by hand."""
    logits = logits.astype("float64")
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    total, count = 0.0, 0.0
    for b, t in np.ndindex(labels.shape):
        if labels[b, t] == 0:
            continue
        weight = 1.0 if weights is None else weights[b]
        nll = -log_probs[b, t, labels[b, t]]
        uniform = -log_probs[b, t].mean()
        total += weight * ((1 - eps) * nll + eps * uniform)
        count += weight
    return total / count


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_matches_numpy_reference(eps):
    loss = MaskedSparseCategoricalCrossentropy(label_smoothing=eps)
    value = float(loss(LABELS, _logits()))
    assert value == pytest.approx(_reference_loss(LABELS, _logits(), eps), rel=1e-5)


def test_uniform_logits_give_log_vocabulary_size_with_any_smoothing():
    uniform = np.zeros((2, 4, 6), "float32")
    for eps in (0.0, 0.1, 0.5):
        loss = MaskedSparseCategoricalCrossentropy(label_smoothing=eps)
        assert float(loss(LABELS, uniform)) == pytest.approx(np.log(6), rel=1e-6)


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_padding_is_ignored(eps):
    loss = MaskedSparseCategoricalCrossentropy(label_smoothing=eps)
    logits = _logits()
    value = float(loss(LABELS, logits))
    # Whatever the logits at padded positions, the loss is the same.
    noisy = logits.copy()
    noisy[LABELS == 0] = 100.0
    assert float(loss(LABELS, noisy)) == pytest.approx(value, rel=1e-6)
    # Padding the batch to a longer bucket does not change it either.
    wider = np.concatenate([LABELS, np.zeros((2, 3), int)], axis=1)
    wider_logits = np.concatenate([logits, _logits(1, (2, 3, 6))], axis=1)
    assert float(loss(wider, wider_logits)) == pytest.approx(value, rel=1e-6)


def test_another_padding_id():
    labels = np.where(LABELS == 0, 5, LABELS)
    labels[1, 1] = 0  # A real token now.
    loss = MaskedSparseCategoricalCrossentropy(padding_id=5)
    logits = _logits()
    real = labels != 5
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, labels[..., None], axis=-1)[..., 0]
    expected = -picked[real].mean()
    assert float(loss(labels, logits)) == pytest.approx(expected, rel=1e-5)


def test_all_padding_batch_gives_zero_not_nan():
    loss = MaskedSparseCategoricalCrossentropy(label_smoothing=0.1)
    value = float(loss(np.zeros((2, 4), int), _logits()))
    assert value == 0.0


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_probabilities_when_not_from_logits(eps):
    logits = _logits()
    probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    loss = MaskedSparseCategoricalCrossentropy(label_smoothing=eps, from_logits=False)
    value = float(loss(LABELS, probabilities))
    assert value == pytest.approx(_reference_loss(LABELS, logits, eps), rel=1e-5)


def test_zero_probabilities_are_clipped_not_infinite():
    probabilities = np.zeros((1, 2, 4), "float32")
    probabilities[..., 0] = 1.0  # The targets below get probability 0.
    loss = MaskedSparseCategoricalCrossentropy(from_logits=False)
    value = float(loss(np.array([[1, 2]]), probabilities))
    assert value == pytest.approx(-np.log(1e-7), rel=1e-4)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_logits_are_scored_in_float32(dtype):
    """Mixed-precision models emit half-precision logits; the softmax is not."""
    logits = ops.cast(_logits() * 4.0, dtype)
    rounded = ops.convert_to_numpy(ops.cast(logits, "float32"))
    loss = MaskedSparseCategoricalCrossentropy(label_smoothing=0.1)
    value = loss(LABELS, logits)
    assert ops.convert_to_numpy(value).dtype == np.float32
    expected = _reference_loss(LABELS, rounded, 0.1)
    assert float(value) == pytest.approx(expected, rel=1e-5)


def test_sample_weights_weight_examples():
    loss = MaskedSparseCategoricalCrossentropy(label_smoothing=0.1)
    logits = _logits()
    weights = np.array([1.0, 0.0])
    only_first = float(loss(LABELS, logits, sample_weight=weights))
    assert only_first == pytest.approx(float(loss(LABELS[:1], logits[:1])), rel=1e-5)
    weights = np.array([2.0, 0.5])
    expected = _reference_loss(LABELS, logits, 0.1, weights)
    value = float(loss(LABELS, logits, sample_weight=weights))
    assert value == pytest.approx(expected, rel=1e-5)


def test_config_round_trip():
    loss = MaskedSparseCategoricalCrossentropy(
        label_smoothing=0.1, padding_id=3, from_logits=False, name="token_loss"
    )
    config = loss.get_config()
    assert config["label_smoothing"] == 0.1
    assert config["padding_id"] == 3
    assert config["from_logits"] is False
    assert "reduction" not in config
    revived = keras.losses.deserialize(keras.losses.serialize(loss))
    assert isinstance(revived, MaskedSparseCategoricalCrossentropy)
    assert revived.get_config() == config
    labels = np.array([[1, 3, 2]])
    probabilities = np.full((1, 3, 4), 0.25, "float32")
    assert float(revived(labels, probabilities)) == float(loss(labels, probabilities))


@pytest.mark.parametrize("eps", [1.0, -0.1, 2, "0.1"])
def test_refuses_bad_smoothing(eps):
    with pytest.raises(ValueError, match="`label_smoothing`"):
        MaskedSparseCategoricalCrossentropy(label_smoothing=eps)


def test_token_mean_inside_fit_even_when_logits_carry_a_mask():
    """The model's output mask must not rescale or reshape the loss."""
    inputs = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(16, 8, mask_zero=True)(inputs)
    logits = keras.layers.Dense(16)(x)  # Carries the padding mask.
    model = keras.Model(inputs, logits)
    ids = np.array([[5, 6, 7, 8, 0, 0], [9, 10, 11, 12, 13, 0]], "int32")
    labels = np.roll(ids, -1, axis=1) * (np.roll(ids, -1, axis=1) != 0)
    loss = MaskedSparseCategoricalCrossentropy()
    model.compile(optimizer="sgd", loss=loss)
    reported = model.evaluate(ids, labels, verbose=0)
    direct = float(loss(labels, model.predict(ids, verbose=0)))
    assert reported == pytest.approx(direct, rel=1e-5)
    history = model.fit(ids, labels, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
