"""`zoo.recipes.rnn_translator`: the RNN translator's family, its clipped
Adam, its evaluation and its export, on the tiny run that
tests/zoo/conftest.py trains once per session (`tiny_runs`)."""

import json

import keras
import numpy as np
import pytest

import zoo
from zoo.recipes import model_dir, recipe, rnn_translator, translator
from zoo.recipes.settings import TranslatorSettings


@pytest.fixture(scope="module")
def run(tiny_runs):
    out, _ = tiny_runs("rnn-translator")
    return out, model_dir.load_model_dir(str(out))


def test_the_recipe_declares_a_clipped_adam_at_a_constant_rate():
    family = rnn_translator.RECIPE
    assert type(family).train is recipe.Recipe.train
    assert type(family).optimizer is not translator.TranslatorRecipe.optimizer
    model = zoo.build_rnn_translator(
        "tiny", source_vocabulary_size=30, target_vocabulary_size=30
    )
    settings = TranslatorSettings(learning_rate_scale=0.5, ema_momentum=0.99)
    optimizer = family.optimizer(model, settings)
    assert isinstance(optimizer, keras.optimizers.Adam)
    config = optimizer.get_config()
    assert config["learning_rate"] == pytest.approx(5e-4)
    assert (config["clipnorm"], config["use_ema"]) == (1.0, True)
    assert config["ema_momentum"] == pytest.approx(0.99)
    # The recurrent model has no CTranslate2 specification.
    assert family.supports("export") and not family.supports("ctranslate2")


def test_the_run_trained_with_the_declared_optimizer(run):
    out, loaded = run
    config = loaded.model.optimizer.get_config()
    scale = rnn_translator.RECIPE.default_settings().learning_rate_scale
    assert config["learning_rate"] == pytest.approx(1e-3 * scale)
    assert config["clipnorm"] == 1.0
    record = json.loads((out / "run.json").read_text())
    assert record["family"] == "rnn-translator"
    assert 0.0 <= record["bleu_beam4"] <= 100.0


def test_evaluate_scores_the_test_split_as_training_did(run):
    out, loaded = run
    from zoo.recipes import corpora

    record = json.loads((out / "run.json").read_text())
    chosen = rnn_translator.RECIPE.default_settings()
    corpus = rnn_translator.RECIPE.read_corpus(
        corpora.recorded_data(loaded.run, loaded.path), chosen
    )
    figures = rnn_translator.RECIPE.evaluate(loaded, corpus, chosen)
    assert figures["bleu_beam4"] == pytest.approx(record["bleu_beam4"], abs=1e-3)


def test_the_export_translates_as_the_loaded_run(run, tmp_path):
    if keras.backend.backend() != "tensorflow":
        pytest.skip("the SavedModel export is TensorFlow's")
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    _, loaded = run
    path = rnn_translator.RECIPE.export(loaded, str(tmp_path / "served"), 1)
    served = tf.saved_model.load(path)
    sentences = ["Ich sehe du 000.", "Er mag sie 213."]
    greedy = served.signatures["serving_default"](sentences=tf.constant(sentences))
    assert [t.decode() for t in greedy["translations"].numpy()] == (
        loaded.translate(sentences, beam_width=1)
    )
    # The score signature of the RNN translator: `TrainedModel.score`'s.
    targets = ["I see you 000.", ""]
    scored = served.signatures["score"](
        sentences=tf.constant(sentences), targets=tf.constant(targets)
    )
    expected = [s.log_prob for s in loaded.score(sentences, targets)]
    np.testing.assert_allclose(scored["log_prob"].numpy(), expected, atol=1e-4)
