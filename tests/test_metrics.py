"""Tests for keras_seq.metrics: masked accuracy and perplexity."""

import keras
import numpy as np
import pytest

from keras_seq.metrics import MaskedAccuracy, perplexity

LABELS = np.array([[1, 2, 0], [3, 0, 0]])  # 0 is padding.


def _one_hot_logits(predicted, vocabulary_size=5):
    return np.eye(vocabulary_size, dtype="float32")[np.asarray(predicted)]


def test_counts_real_tokens_only():
    # Right, wrong, "right" padding; right, "right" padding, "right" padding.
    logits = _one_hot_logits([[1, 4, 0], [3, 0, 0]])
    metric = MaskedAccuracy()
    metric.update_state(LABELS, logits)
    assert float(metric.result()) == pytest.approx(2 / 3)


def test_padding_predictions_do_not_matter():
    metric = MaskedAccuracy()
    metric.update_state(LABELS, _one_hot_logits([[1, 4, 2], [3, 4, 1]]))
    assert float(metric.result()) == pytest.approx(2 / 3)


def test_accumulates_tokens_across_batches_and_resets():
    metric = MaskedAccuracy()
    metric.update_state(LABELS, _one_hot_logits([[1, 4, 0], [3, 0, 0]]))  # 2 of 3
    metric.update_state(np.array([[2, 2, 0]]), _one_hot_logits([[2] * 3]))  # 2 of 2
    assert float(metric.result()) == pytest.approx(4 / 5)  # Tokens, not batches.
    metric.reset_state()
    assert float(metric.result()) == 0.0
    metric.update_state(LABELS, _one_hot_logits([[4, 4, 0], [3, 0, 0]]))
    assert float(metric.result()) == pytest.approx(1 / 3)


def test_all_padding_gives_zero_not_nan():
    metric = MaskedAccuracy()
    metric.update_state(np.zeros((2, 3), int), _one_hot_logits([[0] * 3] * 2))
    assert float(metric.result()) == 0.0


def test_sample_weights_weight_tokens():
    metric = MaskedAccuracy()
    logits = _one_hot_logits([[1, 4, 0], [3, 0, 0]])
    metric.update_state(LABELS, logits, sample_weight=np.array([[1, 3, 1], [1, 1, 1]]))
    assert float(metric.result()) == pytest.approx(2 / 5)


def test_another_padding_id():
    metric = MaskedAccuracy(padding_id=4)
    labels = np.array([[1, 0, 4]])
    metric.update_state(labels, _one_hot_logits([[1, 2, 4]]))
    assert float(metric.result()) == pytest.approx(1 / 2)


def test_config_round_trip():
    metric = MaskedAccuracy(padding_id=3, name="token_accuracy")
    config = metric.get_config()
    assert config["padding_id"] == 3 and config["name"] == "token_accuracy"
    revived = keras.metrics.deserialize(keras.metrics.serialize(metric))
    assert isinstance(revived, MaskedAccuracy)
    assert revived.get_config() == config


def test_perplexity_is_exp_of_mean_nll_over_real_tokens():
    labels = np.array([[3, 1, 0, 0], [2, 5, 4, 0]])
    logits = np.random.default_rng(0).normal(size=(2, 4, 6)).astype("float32")
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, labels[..., None], axis=-1)[..., 0]
    expected = np.exp(-picked[labels != 0].mean())
    metric = perplexity()
    metric.update_state(labels, logits)
    assert float(metric.result()) == pytest.approx(expected, rel=1e-4)


def test_perplexity_of_uniform_logits_is_the_vocabulary_size():
    metric = perplexity(name="ppl")
    metric.update_state(np.array([[5, 2, 0]]), np.zeros((1, 3, 8), "float32"))
    assert float(metric.result()) == pytest.approx(8.0, rel=1e-5)
    assert metric.name == "ppl"


def test_batches_of_other_lengths_weigh_tokens_by_one_over_length():
    """Keras' `Mean` reduces each row to its mean over T before weighting."""
    metric = MaskedAccuracy()
    metric.update_state(LABELS, _one_hot_logits([[1, 4, 0], [3, 0, 0]]))  # T = 3
    metric.update_state(np.array([[2, 2, 2, 2, 0]]), _one_hot_logits([[2] * 5]))
    total = (1 + 0 + 1) / 3 + 4 / 5  # Correct tokens, each weighed 1/T.
    count = 3 / 3 + 4 / 5  # Real tokens, each weighed 1/T.
    assert float(metric.result()) == pytest.approx(total / count, rel=1e-6)
