"""`zoo.recipes.classifier`: the label checks and full epochs.

A classifier's logits are the ids 0..K-1 of its classes, so labels that skip
an id (say {0, 5}) are refused before anything is written. And every epoch
of a recipe runs the whole training split, with no "Your input ran out of
data" warning: the shuffled pipelines state their number of batches.
"""

import io
import logging
import math
import random
import types
import warnings
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest

from keras_seq import text
from zoo.recipes import classifier

WORDS = ["good", "fine", "great", "nice", "bad", "poor", "awful", "dull"]
TRAIN, VALIDATION, TEST = 48, 16, 16
BATCH_SIZE = 16
EPOCHS = 2


def _sentences(count, seed):
    """Short sentences and their labels: 1 when most words are positive."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(3, 7))]
        positive = sum(WORDS.index(word) < 4 for word in words)
        pairs.append((" ".join(words) + ".", int(2 * positive > len(words))))
    return pairs


def _corpus(train=None, validation=None, test=None):
    return types.SimpleNamespace(
        train=train if train is not None else _sentences(TRAIN, 0),
        validation=validation if validation is not None else _sentences(VALIDATION, 1),
        test=test if test is not None else _sentences(TEST, 2),
    )


def _relabel(pairs, mapping):
    return [(sentence, mapping[label]) for sentence, label in pairs]


# -- Labels -----------------------------------------------------------------


@pytest.mark.parametrize(
    "corpus, message",
    [
        (
            _corpus(train=_relabel(_sentences(TRAIN, 0), {0: 0, 1: 5})),
            "The labels of `corpus.train` must be 0..K-1 with every class "
            "present (here 0..1 for its 2 distinct labels); received {0, 5}.",
        ),
        (
            _corpus(train=_relabel(_sentences(TRAIN, 0), {0: 1, 1: 2})),
            "The labels of `corpus.train` must be 0..K-1 with every class "
            "present (here 0..1 for its 2 distinct labels); received {1, 2}.",
        ),
        (
            _corpus(train=_relabel(_sentences(TRAIN, 0), {0: 0, 1: 0})),
            "The labels of `corpus.train` must hold at least two classes, 0 "
            "and 1; received {0}.",
        ),
        (
            _corpus(test=_relabel(_sentences(TEST, 2), {0: 0, 1: 3})),
            "The labels of `corpus.test` must lie in 0..1, the classes of "
            "`corpus.train`; received {0, 3}.",
        ),
        (
            _corpus(validation=[("good.", 1.0)] + _sentences(VALIDATION, 1)),
            "The labels of `corpus.validation` must be integer class ids "
            "0..K-1; received 1.0 (float).",
        ),
        (
            _corpus(train=[("good.", "positive")] + _sentences(TRAIN, 0)),
            "The labels of `corpus.train` must be integer class ids 0..K-1; "
            "received 'positive' (str).",
        ),
    ],
    ids=["gap", "from_one", "one_class", "test_unseen", "float", "string"],
)
def test_train_classifier_refuses_labels_that_are_not_class_ids(
    tmp_path, corpus, message
):
    output_dir = tmp_path / "run"
    with pytest.raises(ValueError) as info:
        classifier.train_classifier(corpus, str(output_dir), preset="tiny", verbose=0)
    assert str(info.value) == message
    # Refused before the vocabulary is written.
    assert not output_dir.exists()


def test_check_class_labels_counts_the_classes():
    three = _relabel(_sentences(TRAIN, 0), {0: 0, 1: 2})
    three[0] = (three[0][0], 1)
    assert classifier.check_class_labels(_corpus(train=three)) == 3
    # NumPy integers are class ids too; validation may lack a class.
    numpy_labels = [(s, np.int64(label)) for s, label in _sentences(TRAIN, 0)]
    corpus = _corpus(train=numpy_labels, validation=[("good.", 1)])
    assert classifier.check_class_labels(corpus) == 2


# -- Full epochs ------------------------------------------------------------


def _train_quietly(recipe, *args, **kwargs):
    """Runs a recipe; its result and all it warned, logged and printed."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with redirect_stdout(stream), redirect_stderr(stream):
                result = recipe(*args, **kwargs)
    finally:
        root.removeHandler(handler)
    said = stream.getvalue() + "\n".join(str(w.message) for w in caught)
    return result, said


def _assert_full_epochs(result, said, examples):
    assert "ran out of data" not in said, said
    assert len(result.history["loss"]) == EPOCHS
    # The optimizer stepped once per batch of every epoch (the weights were
    # reloaded from the best epoch; the optimizer's counter was not).
    steps = int(result.model.optimizer.iterations.numpy())
    assert steps == EPOCHS * math.ceil(examples / BATCH_SIZE)


def test_classifier_trains_full_epochs_without_running_out_of_data(tmp_path):
    result, said = _train_quietly(
        classifier.train_classifier, _corpus(), str(tmp_path), preset="tiny",
        epochs=EPOCHS, vocabulary_size=40, batch_size=BATCH_SIZE,
        max_length=16, verbose=2,
    )  # fmt: skip
    _assert_full_epochs(result, said, TRAIN)
    assert 0.0 <= result.test_accuracy <= 1.0


def test_shuffled_pipelines_state_their_number_of_batches():
    """Keras reads an epoch's length from `cardinality()`; unknown (-2), it
    learns it by running out of data, and warns."""
    texts = [sentence for sentence, _ in _sentences(TRAIN + 1, 0)]
    tokenizer = text.make_tokenizer(text.train_wordpiece_vocabulary(texts, 40))
    batches = math.ceil((TRAIN + 1) / BATCH_SIZE)  # The last one is partial.
    classification = text.make_classification_dataset(
        texts, np.zeros(len(texts), "int32"), tokenizer, 16, BATCH_SIZE,
        shuffle=True,
    )  # fmt: skip
    assert int(classification.cardinality()) == batches
    assert sum(1 for _ in classification) == batches
    masked = text.make_masked_language_model_dataset(
        texts, tokenizer, 16, BATCH_SIZE, shuffle=True
    )
    assert int(masked.cardinality()) == batches


# -- The recipe on the shared tiny run ----------------------------------------


@pytest.fixture(scope="module")
def run(tiny_runs):
    from zoo.recipes import model_dir

    out, result = tiny_runs("classifier")
    return out, result, model_dir.load_model_dir(str(out))


def test_the_recipe_declares_adamw_and_keeps_the_best_validation_accuracy(run):
    import json

    import keras

    from zoo.recipes import recipe

    family = classifier.RECIPE
    assert type(family).train is recipe.Recipe.train
    assert family.monitor == "val_accuracy"
    out, result, loaded = run
    optimizer = loaded.model.optimizer
    assert isinstance(optimizer, keras.optimizers.AdamW)
    assert float(optimizer.learning_rate) == pytest.approx(
        family.settings().learning_rate
    )
    assert optimizer.weight_decay == pytest.approx(0.01)
    record = json.loads((out / "run.json").read_text())
    figures = classifier.ClassifierResult(
        None, None, {}, record["test_accuracy"], record["max_length"]
    )
    assert figures.record() == {
        "test_accuracy": record["test_accuracy"],
        "max_length": record["max_length"],
    }
    assert record["max_length"] == loaded.preprocessor.max_length
    assert figures.summary(None) in result.stdout


def test_evaluate_is_the_accuracy_of_the_classified_test_texts(run):
    import json

    out, _, loaded = run
    from zoo.recipes import corpora

    corpus = classifier.RECIPE.read_corpus(
        corpora.recorded_data(loaded.run, loaded.path), None
    )
    figures = classifier.RECIPE.evaluate(loaded, corpus, None)
    labels = [int(label) for label in loaded.label([t for t, _ in corpus.test])]
    expected = np.mean([a == b for a, (_, b) in zip(labels, corpus.test)])
    assert figures == {"test_accuracy": pytest.approx(float(expected))}
    record = json.loads((out / "run.json").read_text())
    assert figures["test_accuracy"] == pytest.approx(record["test_accuracy"], abs=1e-6)


def test_the_export_serves_the_runs_probabilities(run, tmp_path):
    import keras

    if keras.backend.backend() != "tensorflow":
        pytest.skip("the SavedModel export is TensorFlow's")
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    _, _, loaded = run
    path = classifier.RECIPE.export(loaded, str(tmp_path / "served"), 1)
    served = tf.saved_model.load(path)
    texts = ["ich is good", "du is bad", "wir is"]
    outputs = served.signatures["serving_default"](texts=tf.constant(texts))
    np.testing.assert_allclose(
        outputs["probabilities"].numpy(), loaded.probabilities(texts), atol=1e-5
    )
    assert [t.decode() for t in outputs["label"].numpy()] == loaded.label(texts)
