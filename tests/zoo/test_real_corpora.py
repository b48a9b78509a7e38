"""Every builder, tiny preset, takes a few fit steps on its real corpus and
its loss goes down. Skipped, with the reason, where a corpus is not
installed (`scripts/install_corpora.sh` installs all three)."""

import keras
import numpy as np
import pytest

import zoo
from keras_seq import text
from keras_seq.data import (
    CorpusNotFoundError,
    load_movie_review_snippets,
    load_shakespeare,
    load_trans_de_en,
)
from keras_seq.losses import MaskedSparseCategoricalCrossentropy

VOCABULARY_SIZE = 400
SAMPLES = 256


def _load(loader):
    try:
        return loader()
    except CorpusNotFoundError as error:
        pytest.skip(str(error))


@pytest.fixture(scope="module")
def translation_batches():
    pairs = _load(load_trans_de_en).train[:SAMPLES]
    source = text.train_wordpiece_vocabulary([s for s, _ in pairs], VOCABULARY_SIZE)
    target = text.train_wordpiece_vocabulary([t for _, t in pairs], VOCABULARY_SIZE)
    dataset = text.make_translation_dataset(
        pairs,
        text.make_tokenizer(source),
        text.make_tokenizer(target),
        max_length=32,
        batch_size=32,
        bucket_boundaries=[32],
    )
    sizes = {"source_vocabulary_size": len(source)}
    sizes["target_vocabulary_size"] = len(target)
    return list(dataset.as_numpy_iterator()), sizes


@pytest.fixture(scope="module")
def sentiment_batches():
    pairs = _load(load_movie_review_snippets).train[:SAMPLES]
    vocabulary = text.train_wordpiece_vocabulary([t for t, _ in pairs], VOCABULARY_SIZE)
    tokenizer = text.make_tokenizer(vocabulary)
    texts = [t for t, _ in pairs]
    labels = [label for _, label in pairs]
    classes = text.make_classification_dataset(texts, labels, tokenizer, 64, 32)
    keras.utils.set_random_seed(0)
    masked = text.make_masked_language_model_dataset(texts, tokenizer, 64, 32)
    return (
        list(classes.as_numpy_iterator()),
        list(masked.as_numpy_iterator()),
        len(vocabulary),
    )


@pytest.fixture(scope="module")
def shakespeare_batches():
    lines = _load(load_shakespeare).train[: SAMPLES * 8]
    vocabulary = text.train_wordpiece_vocabulary(lines, VOCABULARY_SIZE)
    dataset = text.make_language_model_dataset(
        lines, text.make_tokenizer(vocabulary), 32, 32
    )
    return list(dataset.as_numpy_iterator())[:8], len(vocabulary)


def _mean_loss(model, batches):
    return float(np.mean([model.test_on_batch(x, y) for x, y in batches]))


def _loss_falls(model, batches, loss, learning_rate=1e-2, epochs=2):
    keras.utils.set_random_seed(0)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate), loss=loss)
    before = _mean_loss(model, batches)
    for _ in range(epochs):
        for x, y in batches:
            model.train_on_batch(x, y)
    after = _mean_loss(model, batches)
    assert np.isfinite(after)
    assert after < 0.9 * before, (before, after)


@pytest.mark.parametrize(
    "build", [zoo.build_translator, zoo.build_rnn_translator, zoo.build_rnn_seq2seq]
)
def test_translators_learn_german_to_english(build, translation_batches):
    batches, sizes = translation_batches
    keras.utils.set_random_seed(0)
    model = build("tiny", **sizes)
    _loss_falls(model, batches, MaskedSparseCategoricalCrossentropy())


def test_classifier_learns_movie_review_sentiment(sentiment_batches):
    batches, _, vocabulary_size = sentiment_batches
    keras.utils.set_random_seed(0)
    model = zoo.build_classifier("tiny", vocabulary_size=vocabulary_size, max_length=64)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    # Two classes start near ln 2; a few steps on 256 snippets fit them.
    _loss_falls(model, batches, loss, epochs=4)


def test_masked_language_model_learns_movie_reviews(sentiment_batches):
    _, batches, vocabulary_size = sentiment_batches
    keras.utils.set_random_seed(0)
    model = zoo.build_masked_language_model(
        "tiny", vocabulary_size=vocabulary_size, max_length=64
    )
    _loss_falls(model, batches, MaskedSparseCategoricalCrossentropy())


@pytest.mark.parametrize(
    "build", [zoo.build_language_model, zoo.build_rnn_language_model]
)
def test_language_models_learn_shakespeare(build, shakespeare_batches):
    batches, vocabulary_size = shakespeare_batches
    keras.utils.set_random_seed(0)
    model = build("tiny", vocabulary_size=vocabulary_size)
    _loss_falls(model, batches, MaskedSparseCategoricalCrossentropy())
