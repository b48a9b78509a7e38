import keras
import numpy as np
import pytest

from keras_seq.losses import MaskedSparseCategoricalCrossentropy
from keras_seq.metrics import MaskedAccuracy, perplexity
from keras_seq.schedules import InverseSquareRootWarmup


def _logits(seed=0, shape=(2, 4, 6)):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def _reference_loss(labels, logits, eps):
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    total, count = 0.0, 0
    for b, t in np.ndindex(labels.shape):
        if labels[b, t] == 0:
            continue
        nll = -log_probs[b, t, labels[b, t]]
        total += (1 - eps) * nll + eps * -log_probs[b, t].mean()
        count += 1
    return total / count


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_loss_matches_numpy_and_ignores_padding(eps):
    labels = np.array([[3, 1, 0, 0], [2, 5, 4, 0]])
    logits = _logits()
    loss = MaskedSparseCategoricalCrossentropy(label_smoothing=eps)
    value = float(loss(labels, logits))
    assert value == pytest.approx(_reference_loss(labels, logits, eps), rel=1e-5)
    # Whatever the logits at padded positions, the loss is the same.
    noisy = logits.copy()
    noisy[labels == 0] = 100.0
    assert float(loss(labels, noisy)) == pytest.approx(value, rel=1e-6)
    # Padding a batch further does not change it either.
    wider = np.concatenate([labels, np.zeros((2, 3), int)], axis=1)
    wider_logits = np.concatenate([logits, _logits(1, (2, 3, 6))], axis=1)
    assert float(loss(wider, wider_logits)) == pytest.approx(value, rel=1e-6)


def test_loss_serializes_and_refuses_bad_smoothing():
    loss = MaskedSparseCategoricalCrossentropy(label_smoothing=0.1)
    revived = keras.losses.deserialize(keras.losses.serialize(loss))
    assert revived.label_smoothing == 0.1
    with pytest.raises(ValueError, match="`label_smoothing`"):
        MaskedSparseCategoricalCrossentropy(label_smoothing=1.0)


def test_masked_accuracy_counts_real_tokens_only():
    labels = np.array([[1, 2, 0], [3, 0, 0]])
    logits = np.zeros((2, 3, 5), "float32")
    logits[0, 0, 1] = logits[0, 1, 4] = logits[1, 0, 3] = 1.0
    logits[0, 2, 0] = logits[1, 1, 0] = logits[1, 2, 0] = 1.0  # Padding "right".
    metric = MaskedAccuracy()
    metric.update_state(labels, logits)
    assert float(metric.result()) == pytest.approx(2 / 3)


def test_perplexity_is_exp_of_mean_nll():
    labels = np.array([[3, 1, 0, 0], [2, 5, 4, 0]])
    logits = _logits()
    metric = perplexity()
    metric.update_state(labels, logits)
    expected = np.exp(_reference_loss(labels, logits, 0.0))
    assert float(metric.result()) == pytest.approx(expected, rel=1e-4)


def test_warmup_schedule_shape_and_peak():
    schedule = InverseSquareRootWarmup(model_dim=512, warmup_steps=4000)
    rates = np.array([float(schedule(s)) for s in [0, 1999, 3999, 15999]])
    peak = 512**-0.5 * 4000**-0.5
    assert rates[2] == pytest.approx(peak, rel=1e-6)
    assert schedule.peak_learning_rate == pytest.approx(peak)
    assert rates[1] == pytest.approx(peak / 2, rel=1e-3)  # Linear warm-up.
    assert rates[3] == pytest.approx(peak / 2, rel=1e-3)  # 1/sqrt decay.


def test_warmup_schedule_serializes_inside_an_optimizer():
    schedule = InverseSquareRootWarmup(model_dim=128, warmup_steps=100, scale=2.0)
    optimizer = keras.optimizers.Adam(schedule, beta_1=0.9, beta_2=0.98, epsilon=1e-9)
    revived = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert isinstance(revived.learning_rate, InverseSquareRootWarmup) or isinstance(
        revived._learning_rate, InverseSquareRootWarmup
    )
    assert revived.get_config()["learning_rate"]["config"] == schedule.get_config()
    with pytest.raises(ValueError, match="`warmup_steps`"):
        InverseSquareRootWarmup(model_dim=128, warmup_steps=0)


def test_loss_is_a_token_mean_inside_fit_even_when_logits_carry_a_mask():
    """The model's output mask must not rescale or reshape the loss."""
    import zoo

    model = zoo.build_language_model("tiny", dropout=0.0)
    ids = np.array([[5, 6, 7, 8, 0, 0], [9, 10, 11, 12, 13, 0]], "int32")
    labels = np.roll(ids, -1, axis=1) * (np.roll(ids, -1, axis=1) != 0)
    loss = MaskedSparseCategoricalCrossentropy()
    model.compile(optimizer="sgd", loss=loss)
    reported = model.evaluate(ids, labels, verbose=0)
    direct = float(loss(labels, model.predict(ids, verbose=0)))
    assert reported == pytest.approx(direct, rel=1e-4)
    history = model.fit(ids, labels, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_loss_sample_weights_weight_examples():
    labels = np.array([[3, 1, 0, 0], [2, 5, 4, 0]])
    logits = _logits()
    loss = MaskedSparseCategoricalCrossentropy()
    only_first = float(loss(labels, logits, sample_weight=np.array([1.0, 0.0])))
    assert only_first == pytest.approx(float(loss(labels[:1], logits[:1])), rel=1e-5)


def test_translate_texts_gives_blank_sentences_an_empty_translation():
    import zoo
    from keras_seq import text
    from zoo.recipes.translation import translate_texts

    vocabulary = list(text.RESERVED_TOKENS) + ["w1", "w2", "."]
    tokenizer = text.make_tokenizer(vocabulary)
    keras.utils.set_random_seed(0)
    model = zoo.build_translator("tiny", vocabulary_size=len(vocabulary))
    translations = translate_texts(
        model, tokenizer, tokenizer, ["", "   ", "w1 w2.", "\t"], max_new_tokens=4
    )
    assert translations[0] == translations[1] == translations[3] == ""
    assert len(translations) == 4 and isinstance(translations[2], str)


def test_train_translator_returns_the_mean_of_the_last_epochs(tmp_path, monkeypatch):
    from keras_seq.data import TranslationCorpus
    from zoo.recipes import translation as recipe

    words = [("ich", "i"), ("du", "you"), ("er", "he"), ("wir", "we")]
    pairs = [(f"{a} sehe {b}.", f"{c} see {d}.") for a, c in words for b, d in words]
    corpus = TranslationCorpus(train=pairs * 4, validation=pairs[:4], test=pairs[:4])
    ends = []

    class Keep(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            ends.append([np.array(v) for v in self.model.trainable_variables])

    # The raw epoch-end weights, recorded by a callback that `fit` runs first.
    fit = keras.Model.fit

    def fit_and_keep(model, *args, callbacks=(), **kwargs):
        return fit(model, *args, callbacks=[Keep(), *callbacks], **kwargs)

    monkeypatch.setattr(keras.Model, "fit", fit_and_keep)
    result = recipe.train_translator(
        corpus, str(tmp_path), preset="tiny", epochs=3, vocabulary_size=60,
        average_last_epochs=2, bleu_sample=4, verbose=0,
    )  # fmt: skip
    assert len(ends) == 3 and result["averaged_epochs"] == 2
    model = result["model"]
    for variable, last, before in zip(model.trainable_variables, ends[-1], ends[-2]):
        np.testing.assert_allclose(np.array(variable), (last + before) / 2, rtol=1e-5)
    assert not np.allclose(np.array(model.trainable_variables[0]), ends[-1][0])


@pytest.mark.parametrize("value", [0, 2.0, None])
def test_train_translator_refuses_a_bad_average_count(tmp_path, value):
    from keras_seq.data import TranslationCorpus
    from zoo.recipes import translation as recipe

    corpus = TranslationCorpus(train=[("a.", "b.")], validation=[], test=[])
    with pytest.raises(ValueError, match="`average_last_epochs` must be a positive"):
        recipe.train_translator(corpus, str(tmp_path), average_last_epochs=value)
    assert not any(tmp_path.iterdir()), "refused before anything is written"
