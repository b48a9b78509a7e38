"""`rnn-seq2seq`, the context-vector encoder-decoder (Fig. 7.9) added as one
recipe module and one table line: `keras-seq train` trains it, `evaluate`
scores it by BLEU, `translate` translates with it."""

import json

import pytest

from tests.zoo.conftest import run_cli, write_pairs
from zoo.recipes import model_dir
from zoo.recipes.families import FAMILIES, supporting


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("rnn_seq2seq")
    data = write_pairs(root / "pairs.tsv")
    out = root / "run"
    result = run_cli(
        "train", "rnn-seq2seq", "--data", data, "--preset", "tiny",
        "--epochs", "1", "--output-dir", out, in_process=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return out, result


def test_the_table_offers_it_to_train_evaluate_and_translate():
    recipe = FAMILIES["rnn-seq2seq"]
    assert recipe.builder_name == "build_rnn_seq2seq"
    assert recipe.presets["tiny"]["config"]["cell"] == "gru"
    assert "rnn-seq2seq" in supporting("translate")
    assert "rnn-seq2seq" not in supporting("export")


def test_train_writes_a_run_that_evaluates_and_translates(run):
    out, _ = run
    record = json.loads((out / "run.json").read_text())
    assert record["family"] == "rnn-seq2seq" and record["epochs"] == 1
    for name in ("model.keras", "preprocessor.json"):
        assert (out / name).is_file(), name
    scored = run_cli("evaluate", "--model-dir", out, in_process=True)
    assert scored.returncode == 0, scored.stderr[-2000:]
    figures = json.loads(scored.stdout.strip().splitlines()[-1])
    assert 0.0 <= figures["bleu_beam4"] <= 100.0
    assert figures["bleu_beam4"] == pytest.approx(record["bleu_beam4"], abs=1e-3)
    sentences = ["Ich sehe du 000.", "Er mag sie 213."]
    translated = run_cli(
        "translate", "--model-dir", out, *sentences, in_process=True
    )  # fmt: skip
    assert translated.returncode == 0, translated.stderr[-2000:]
    lines = translated.stdout.splitlines()
    assert len(lines) == 2
    assert lines == model_dir.load_model_dir(str(out)).translate(sentences)


def test_a_rnn_seq2seq_run_does_not_export(run, tmp_path):
    result = run_cli(
        "export", "--model-dir", run[0], "--export-dir", tmp_path / "served",
        in_process=True,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("keras-seq: `export`")


def test_the_recipe_declares_the_rnn_translators_clipped_adam():
    import keras

    from zoo.recipes import recipe, rnn_translator
    from zoo.recipes.settings import TranslatorSettings

    family = FAMILIES["rnn-seq2seq"]
    assert type(family).train is recipe.Recipe.train
    assert type(family).optimizer is rnn_translator.RNNTranslatorRecipe.optimizer
    model = family.builder("tiny", source_vocabulary_size=30, target_vocabulary_size=30)
    optimizer = family.optimizer(model, TranslatorSettings(learning_rate_scale=2.0))
    assert isinstance(optimizer, keras.optimizers.Adam)
    config = optimizer.get_config()
    assert config["learning_rate"] == pytest.approx(2e-3)
    assert config["clipnorm"] == 1.0
