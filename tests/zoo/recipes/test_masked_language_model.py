"""`zoo.recipes.masked_language_model`: the masked language model's family,
its AdamW, its result and its evaluation, on one tiny run trained in this
process for the whole module."""

import math
import types

import keras
import numpy as np
import pytest

from keras_seq.losses import MaskedSparseCategoricalCrossentropy
from keras_seq.metrics import MaskedAccuracy
from keras_seq.text import MaskedLanguageModelPreprocessor
from tests.zoo.recipes.test_classifier import (
    BATCH_SIZE,
    EPOCHS,
    TRAIN,
    VALIDATION,
    _assert_full_epochs,
    _sentences,
    _train_quietly,
)
from zoo.recipes import masked_language_model, recipe
from zoo.recipes.trained import TrainedModel

TEXTS = [sentence for sentence, _ in _sentences(TRAIN + VALIDATION, 3)]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """`(result, what it said)` of 2 epochs on 48 short sentences."""
    return _train_quietly(
        masked_language_model.train_masked_language_model,
        (TEXTS[:TRAIN], TEXTS[TRAIN:]), str(tmp_path_factory.mktemp("mlm")),
        preset="tiny", epochs=EPOCHS, vocabulary_size=40,
        batch_size=BATCH_SIZE, verbose=2,
    )  # fmt: skip


def test_masked_language_model_trains_full_epochs_without_running_out_of_data(
    trained,
):
    result, said = trained
    _assert_full_epochs(result, said, TRAIN)


def test_the_recipe_declares_adamw_and_trains_through_the_skeleton(trained):
    family = masked_language_model.RECIPE
    assert type(family).train is recipe.Recipe.train
    assert type(family).fit_model is recipe.Recipe.fit_model
    result, _ = trained
    optimizer = result.model.optimizer
    assert isinstance(optimizer, keras.optimizers.AdamW)
    settings = family.settings()
    np.testing.assert_allclose(float(optimizer.learning_rate), settings.learning_rate)
    np.testing.assert_allclose(optimizer.weight_decay, 0.01)
    assert isinstance(result.model.loss, MaskedSparseCategoricalCrossentropy)
    options = family.compile_options(settings)
    assert [type(m) for m in options["metrics"]] == [MaskedAccuracy]


def test_the_result_holds_its_figures_and_its_preprocessor(trained):
    result, _ = trained
    assert isinstance(result, masked_language_model.MaskedLanguageModelResult)
    assert isinstance(result.preprocessor, MaskedLanguageModelPreprocessor)
    max_length = result.model.get_config()["max_length"]
    assert result.max_length == result.preprocessor.max_length == max_length
    accuracy = result.validation_masked_accuracy
    assert 0.0 <= accuracy <= 1.0
    assert result.record() == {"validation_masked_accuracy": accuracy}
    assert result.summary(None) == f"validation masked-token accuracy {accuracy:.1%}"
    assert result.tokenizers == {"text": result.preprocessor.tokenizer}
    assert len(result.history["val_masked_accuracy"]) == EPOCHS
    # The weights are the best epoch's, and its validation masks are the
    # same as the score's.
    best = int(np.argmin(result.history["val_loss"]))
    assert result.history["val_masked_accuracy"][best] == pytest.approx(accuracy)


def test_evaluate_is_the_masked_loss_of_the_test_texts(trained):
    """The test texts' masks are drawn from the dataset's seed, whatever the
    global one: one figure; the loss is a cross-entropy over the ~40 tokens
    of the vocabulary."""
    result, _ = trained
    loaded = TrainedModel.of("masked-language-model", result.model, result.preprocessor)
    corpus = types.SimpleNamespace(test=TEXTS[TRAIN:])
    chosen = types.SimpleNamespace(batch_size=BATCH_SIZE)
    figures = []
    for global_seed in (7, 8):
        keras.utils.set_random_seed(global_seed)
        figures.append(masked_language_model.RECIPE.evaluate(loaded, corpus, chosen))
    assert figures[0]["test_masked_loss"] == pytest.approx(
        figures[1]["test_masked_loss"], rel=1e-6
    )
    assert set(figures[0]) == {"test_masked_loss"}
    vocabulary = result.preprocessor.tokenizer.vocabulary_size()
    assert 0.0 < figures[0]["test_masked_loss"] < 2 * math.log(vocabulary)


def test_it_has_no_export():
    family = masked_language_model.RECIPE
    assert not family.supports("export") and not family.supports("generate")
    with pytest.raises(NotImplementedError, match="has no serving signature"):
        family.export(None, "/nowhere", 1)
