"""`rnn-language-model`, the family added as one recipe module and one table
line: `keras-seq train` trains it, `evaluate` scores it, `generate` samples
it, through the same commands as every family."""

import json

import pytest

from tests.zoo.conftest import run_cli, write_lines
from zoo.recipes import model_dir
from zoo.recipes.families import FAMILIES, supporting


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("rnn_language_model")
    data = write_lines(root / "lines.txt")
    # Ten times the shared corpus: the validation and test splits then hold
    # a few of the recipe's 64-token windows.
    data.write_text(data.read_text() * 10)
    out = root / "run"
    result = run_cli(
        "train", "rnn-language-model", "--data", data, "--preset", "tiny",
        "--epochs", "2", "--output-dir", out, in_process=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return out, data, result


def test_the_table_offers_it_to_train_evaluate_and_generate():
    recipe = FAMILIES["rnn-language-model"]
    assert recipe.presets["tiny"]["config"]["cell"] == "lstm"
    assert "rnn-language-model" in supporting("generate")
    assert "rnn-language-model" not in supporting("export")


def test_train_writes_a_run_that_evaluates_and_generates(run):
    out, data, result = run
    record = json.loads((out / "run.json").read_text())
    assert record["family"] == "rnn-language-model" and record["epochs"] == 2
    assert 1.0 < record["test_perplexity"] < record["validation_perplexity"] * 2
    assert "sample: " in result.stdout
    scored = run_cli("evaluate", "--model-dir", out, in_process=True)
    assert scored.returncode == 0, scored.stderr[-2000:]
    figures = json.loads(scored.stdout)
    assert figures["test_perplexity"] == pytest.approx(
        record["test_perplexity"], rel=1e-3
    )
    generated = run_cli(
        "generate", "--model-dir", out, "--seed", "3", "--max-new-tokens", "6",
        "you he", in_process=True,
    )  # fmt: skip
    assert generated.returncode == 0, generated.stderr[-2000:]
    (line,) = generated.stdout.splitlines()
    assert line.startswith("you he") and len(line.split()) > 2
    trained = model_dir.load_model_dir(str(out))
    assert trained.preprocessor.max_length == 128
    assert trained.generate("you he", max_new_tokens=6, seed=3) == line


def test_a_rnn_language_model_does_not_export(run, tmp_path):
    result = run_cli(
        "export", "--model-dir", run[0], "--export-dir", tmp_path / "served",
        in_process=True,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("keras-seq: `export`")


def test_the_recipe_declares_a_clipped_adam_and_its_own_lengths():
    from zoo.recipes import recipe, rnn_language_model

    family = rnn_language_model.RECIPE
    assert type(family).train is recipe.Recipe.train
    model = family.builder("tiny", vocabulary_size=30)
    settings = family.settings(learning_rate=5e-3, clipnorm=0.5)
    config = family.optimizer(model, settings).get_config()
    assert config["name"] == "adam"
    assert config["learning_rate"] == pytest.approx(5e-3)
    assert config["clipnorm"] == 0.5
    # A recurrent model has no length of its own: a run written before
    # `preprocessor.json` loads at the recipe's window and bound.
    _, lengths = family.preprocessor(model.get_config(), {})
    assert lengths == {"max_length": 128, "sequence_length": 64}
    assert family.preprocessor({}, {"max_length": 40, "sequence_length": 20})[1] == {
        "max_length": 40,
        "sequence_length": 20,
    }
