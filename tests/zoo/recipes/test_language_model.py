"""`zoo.recipes.language_model`: the language model's family, its warm-up
Adam, its result, its evaluation and its export, on the tiny run that
tests/zoo/conftest.py trains once per session (`language_model_run`)."""

import json
import math
import pathlib
import types

import keras
import numpy as np
import pytest

import zoo
from keras_seq import text
from keras_seq.losses import MaskedSparseCategoricalCrossentropy
from keras_seq.metrics import MaskedAccuracy
from keras_seq.schedules import InverseSquareRootWarmup
from keras_seq.text import LanguageModelPreprocessor
from zoo.recipes import language_model, model_dir, recipe
from zoo.recipes.settings import LanguageModelSettings


@pytest.fixture(scope="module")
def trained(language_model_run):
    out, data, _ = language_model_run
    return model_dir.load_model_dir(str(out)), data


def _corpus(data):
    from zoo.recipes import corpora

    return corpora.text_corpus(str(data))


def test_the_recipe_declares_adam_on_the_warm_up_of_eq_3():
    family = language_model.RECIPE
    assert type(family).train is recipe.Recipe.train
    model = zoo.build_language_model("tiny", vocabulary_size=40)
    settings = LanguageModelSettings(warmup_steps=10, learning_rate_scale=2.0)
    optimizer = family.optimizer(model, settings)
    assert isinstance(optimizer, keras.optimizers.Adam)
    assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.9, 0.98, 1e-9)
    width = model.get_config()["model_dim"]
    schedule = optimizer.get_config()["learning_rate"]
    assert schedule["config"] == {"model_dim": width, "warmup_steps": 10, "scale": 2.0}
    schedule = InverseSquareRootWarmup(**schedule["config"])
    # Keras' step s is the paper's s + 1: linear up to step 10, then 1/sqrt.
    for step in (0, 4, 9, 39):
        paper = step + 1
        expected = 2.0 * width**-0.5 * min(paper**-0.5, paper * 10**-1.5)
        np.testing.assert_allclose(float(schedule(step)), expected, rtol=1e-6)
    np.testing.assert_allclose(
        float(schedule(9)), schedule.peak_learning_rate, rtol=1e-6
    )
    # The optimizer's rate at its step 0 is the schedule's.
    np.testing.assert_allclose(float(optimizer.learning_rate), float(schedule(0)))
    options = family.compile_options(settings)
    assert isinstance(options["loss"], MaskedSparseCategoricalCrossentropy)
    assert [type(m) for m in options["metrics"]] == [MaskedAccuracy]


def test_the_preprocessor_takes_the_shorter_of_the_window_and_the_model():
    family = language_model.RECIPE
    model = zoo.build_language_model("tiny", vocabulary_size=40)
    max_length = model.get_config()["max_length"]
    tokenizer = text.make_tokenizer(text.train_wordpiece_vocabulary(["you he"], 40))
    for asked, kept in ((max_length * 2, max_length), (3, 3)):
        settings = LanguageModelSettings(sequence_length=asked)
        made = family.make_preprocessor(model, (tokenizer,), None, settings)
        assert isinstance(made, LanguageModelPreprocessor)
        assert (made.max_length, made.sequence_length) == (max_length, kept)


def test_the_run_trained_through_the_skeleton_with_the_declared_optimizer(trained):
    loaded, _ = trained
    optimizer = loaded.model.optimizer
    assert isinstance(optimizer, keras.optimizers.Adam)
    assert (optimizer.beta_2, optimizer.epsilon) == (0.98, 1e-9)
    config = optimizer.get_config()["learning_rate"]["config"]
    width = loaded.model.get_config()["model_dim"]
    warmup = LanguageModelSettings.warmup_steps
    assert config == {"model_dim": width, "warmup_steps": warmup, "scale": 1.0}
    # One epoch of 1-based steps s, all within the warm-up: the rate after
    # the last is the schedule's at the optimizer's count of steps.
    steps = int(optimizer.iterations.numpy())
    assert 1 <= steps < warmup
    expected = width**-0.5 * (steps + 1) * warmup**-1.5
    np.testing.assert_allclose(float(optimizer.learning_rate), expected, rtol=1e-5)
    assert isinstance(loaded.preprocessor, LanguageModelPreprocessor)


def test_the_result_is_what_run_json_and_the_summary_say(language_model_run):
    out, _, (winner, _) = language_model_run
    record = json.loads((out / "run.json").read_text())
    assert record["family"] == "language-model"
    fields = {"validation_perplexity", "test_perplexity", "sequence_length"}
    assert fields <= set(record)
    assert 1.0 < record["test_perplexity"] < 1e4
    # The result prints its summary and its sample, as the type writes them.
    result = language_model.LanguageModelResult(
        None, None, {}, record["validation_perplexity"], record["test_perplexity"],
        record["sequence_length"], "you he ...",
    )  # fmt: skip
    assert result.record() == {k: record[k] for k in sorted(fields)}
    assert result.summary(None) in winner.out
    assert result.notes == ("sample: you he ...",)
    assert "sample: " in winner.out


def test_evaluate_is_the_exp_of_the_masked_loss_of_the_test_windows(trained):
    loaded, data = trained
    corpus = _corpus(data)
    chosen = types.SimpleNamespace(batch_size=8)
    figures = language_model.RECIPE.evaluate(loaded, corpus, chosen)
    assert set(figures) == {"test_perplexity"}
    # The reference: every target token of the test windows, weighted alike.
    total, count = 0.0, 0
    for x, y in loaded.preprocessor.dataset(corpus.test, 8):
        logits = np.asarray(loaded.model(x), "float64")
        y = np.asarray(y)
        log_probabilities = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        picked = np.take_along_axis(log_probabilities, y[..., None], -1)[..., 0]
        kept = y != 0
        total -= picked[kept].sum()
        count += int(kept.sum())
    record = json.loads((pathlib.Path(loaded.path) / "run.json").read_text())
    np.testing.assert_allclose(
        figures["test_perplexity"], math.exp(total / count), rtol=2e-3
    )
    np.testing.assert_allclose(
        figures["test_perplexity"], record["test_perplexity"], rtol=1e-3
    )


def test_the_export_serves_the_runs_ids_and_logits(trained, tmp_path):
    if keras.backend.backend() != "tensorflow":
        pytest.skip("the SavedModel export is TensorFlow's")
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    loaded, _ = trained
    path = language_model.RECIPE.export(loaded, str(tmp_path / "served"), 2)
    assert path == str(tmp_path / "served" / "2")
    served = tf.saved_model.load(path)
    prompts = ["you he", "we"]
    tokenized = served.signatures["tokenize"](prompts=tf.constant(prompts))
    ids = tokenized["token_ids"].numpy()
    # The tiny model's 32 tokens: 16 for the continuation, 16 for the prompt.
    assert loaded.preprocessor.max_length == 32
    np.testing.assert_array_equal(ids, loaded.preprocessor.prompt_ids(prompts, 16))
    assert (
        ids[0, -2:].tolist()
        == np.asarray(loaded.preprocessor.tokenizer("you he")).tolist()
    )
    logits = served.signatures["logits"](token_ids=tf.constant(ids, tf.int32))
    np.testing.assert_allclose(
        logits["logits"].numpy(), np.asarray(loaded.model(ids)), atol=1e-4
    )
