"""`keras-seq train`: one run per output directory, in real processes."""

import argparse
import json
import re
import zipfile

import pytest

import zoo
from tests.zoo.conftest import ENGLISH, run_cli, write_pairs
from zoo.cli import train
from zoo.cli.errors import UsageError


def test_two_runs_started_together_into_one_directory(language_model_run):
    out, _, (winner, loser) = language_model_run
    assert winner.returncode == 0, winner.err[-2000:]
    assert f"saved to {out}" in winner.out
    # The second is refused at once, in one line naming the first.
    assert loser.returncode == 1, loser.err[-2000:]
    assert "saved to" not in loser.out and "Traceback" not in loser.err
    message = loser.err.strip().splitlines()[-1]
    assert re.fullmatch(
        rf"keras-seq: --output-dir {out} is in use by another run \(pid "
        rf"{winner.pid} on \S+, started \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC\); "
        r"wait for it to end, or choose another --output-dir\.",
        message,
    ), message
    # The finished run is the winner's alone, and holds no lock.
    run = json.loads((out / "run.json").read_text())
    assert run["family"] == "language-model" and run["epochs"] == 1
    assert not (out / ".keras-seq.lock").exists()
    sample = winner.out.split("sample: ")[1].splitlines()[0]
    # The prompt is the start of the first validation line (line 1); the
    # continuation may begin with a suffix piece glued to its last word.
    assert sample.startswith(" ".join((ENGLISH[1:] + ENGLISH[:1])[:4]))
    assert len(sample.split()) > 4


# Every preset trains from the command line; its structure at tiny width.

TINY_WIDTH = [
    "--set", "model_dim=16", "--set", "num_heads=2", "--set", "ff_dim=32",
    "--set", "num_encoder_layers=1", "--set", "num_decoder_layers=1",
]  # fmt: skip


@pytest.mark.parametrize("preset", ["book", "base"])  # `big` is `base`'s structure
def test_a_tied_preset_learns_one_vocabulary(tmp_path, preset):
    data = write_pairs(tmp_path / "pairs.tsv")
    out = tmp_path / preset
    result = run_cli(
        "train", "translator", "--data", data, "--preset", preset,
        "--epochs", "1", "--beam-width", "1", *TINY_WIDTH,
        "--set", "max_length=24", "--output-dir", out, in_process=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    source = (out / "source_vocabulary.txt").read_text()
    assert source == (out / "target_vocabulary.txt").read_text()
    config = json.loads(zipfile.ZipFile(out / "model.keras").read("config.json"))
    config = config["config"]
    assert config["tie_embeddings"] is True and config["max_length"] == 24
    assert config["source_vocabulary_size"] == len(source.splitlines())
    assert config["attention_bias"] is (preset != "book")
    run = json.loads((out / "run.json").read_text())
    assert run["overrides"]["model_dim"] == 16 and run["preset"] == preset


def _args(preset, *pairs, family="translator"):
    return argparse.Namespace(
        family=family, preset=preset, overrides=list(pairs), strategy="none",
        average_epochs=None, epochs=1, seed=0, minutes=None, vocabulary_size=100,
        beam_width=None, recipe="default", variants=False, data=None,
        bleu_every=None,
    )  # fmt: skip


@pytest.mark.parametrize(
    "pairs, message",
    [
        (["num_heads=3"], "--preset base with --set num_heads=3: `num_heads` must "
                          "divide the model width"),
        (["foo=1"], "--set takes KEY=VALUE with KEY one of ['attention_dropout', "
                    "'dropout', 'ff_dim', "
                    "'max_length', 'model_dim', 'num_decoder_layers', "
                    "'num_encoder_layers', 'num_heads', 'tie_embeddings']; "
                    "received 'foo=1'"),
        (["source_vocabulary_size=9"], "--set takes KEY=VALUE with KEY one of"),
        (["model_dim"], "--set takes KEY=VALUE with KEY one of"),
        (["dropout=NaN"], "--set dropout must be a finite number; received NaN"),
        (["dropout=-Infinity"], "--set dropout must be a finite number; received "
                                "-Infinity"),
    ],
)  # fmt: skip
def test_a_setting_that_cannot_work_is_refused_before_any_write(pairs, message):
    with pytest.raises(UsageError) as error:
        train._check(_args("base", *pairs))
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


def test_set_values_are_read_as_json():
    config = zoo.TRANSLATOR_PRESETS["base"]["config"]
    assert train.parse_overrides(
        ["model_dim=64", "dropout=0.25", "tie_embeddings=false"], config
    ) == {"model_dim": 64, "dropout": 0.25, "tie_embeddings": False}
    rnn = zoo.RNN_TRANSLATOR_PRESETS["tiny"]["config"]
    assert train.parse_overrides(["cell=lstm"], rnn) == {"cell": "lstm"}


# Flags a family cannot use are refused in one line, before anything is written.


def test_average_epochs_is_refused_for_a_classifier(tmp_path):
    result = run_cli(
        "train", "classifier", "--average-epochs", "3", "--output-dir", tmp_path,
        in_process=True,
    )  # fmt: skip
    assert result.returncode == 1
    message = result.stderr.strip().splitlines()[-1]
    assert message == (
        "keras-seq: --average-epochs applies to translator, rnn-translator and "
        "rnn-seq2seq; received 3 for classifier"
    )


@pytest.mark.parametrize(
    "flags, message",
    [
        (["classifier", "--bleu-every", "2"],
         "--bleu-every applies to translator, rnn-translator and rnn-seq2seq; "
         "received 2 for classifier"),
        (["translator", "--bleu-every", "0"],
         "--bleu-every must be at least 1; received 0"),
    ],
)  # fmt: skip
def test_bleu_every_is_refused_where_it_cannot_apply(tmp_path, flags, message):
    result = run_cli(
        "train", *flags, "--output-dir", tmp_path, in_process=True
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == f"keras-seq: {message}"
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("command", [["demo"], ["train", "translator"]])
def test_average_epochs_below_one_is_refused(tmp_path, command):
    result = run_cli(
        *command, "--average-epochs", "0", "--output-dir", tmp_path, in_process=True
    )
    assert result.returncode == 1
    message = result.stderr.strip().splitlines()[-1]
    assert message == "keras-seq: --average-epochs must be at least 1; received 0"


@pytest.mark.parametrize(
    "family, data",
    [("classifier", "movie-reviews"), ("translator", "pairs.tsv")],
)
def test_train_variants_outside_the_dictionary_is_refused(tmp_path, family, data):
    result = run_cli(
        "train", family, "--data", data, "--variants",
        "--output-dir", tmp_path / "run", in_process=True,
    )  # fmt: skip
    assert result.returncode == 1
    message = result.stderr.strip().splitlines()[-1]
    assert message == (
        "keras-seq: --variants applies to translators on the trans-de-en "
        f"dictionary; received {family} on {data}"
    )


# What a finished run holds.


def test_train_translator_writes_a_loadable_directory(translator_run):
    out, _, result = translator_run
    assert "test BLEU" in result.stdout and "(lowercased " in result.stdout
    run = json.loads((out / "run.json").read_text())
    assert run["family"] == "translator"
    assert 0.0 <= run["bleu_beam4"] <= 100.0 and run["params"] > 1000
    # Cased BLEU (sacreBLEU's default) first; lowercasing only adds matches.
    assert list(run).index("bleu_beam4") < list(run).index("bleu_beam4_lowercase")
    assert run["bleu_beam4"] <= run["bleu_beam4_lowercase"]
    # The mean of the 2 epochs is kept only if it scores as well as the last.
    averaging = run["averaging"]
    assert run["epochs"] == 2 and averaging["epochs"] == 2
    kept = averaging["kept"]
    assert (averaging["bleu_average"] >= averaging["bleu_last"]) == (kept == "average")
    assert run["averaged_epochs"] == (2 if kept == "average" else 1)
    line = "kept the mean of the last 2" if kept == "average" else "kept the last"
    assert sum(line in row for row in result.stdout.splitlines()) == 1
    assert (out / "history.csv").read_text().count("\n") == 3  # header + 2
    # The preset's max_length (tiny: 32) holds without --set max_length.
    config = json.loads(zipfile.ZipFile(out / "model.keras").read("config.json"))
    assert config["config"]["max_length"] == 32


def test_train_applies_the_named_recipe(translator_run):
    out, _, _ = translator_run
    settings = json.loads((out / "training.json").read_text())
    assert settings["recipe"] == "low-resource"
    assert settings["average_last_epochs"] == 2  # the flag's, over the recipe's 5
    # Its values too, so a backup made under other values is not resumed.
    assert settings["token_dropout"] == 0.1 and settings["label_smoothing"] == 0.2
    assert settings["lowercase"] is False  # case kept unless --lowercase
    config = json.loads(zipfile.ZipFile(out / "model.keras").read("config.json"))
    assert config["config"]["dropout"] == 0.2  # the recipe's, over the preset's 0.0
    header = (out / "history.csv").read_text().splitlines()[0].split(",")
    assert "val_bleu" in header and (out / "learning_curves.png").stat().st_size > 1000
    for flag in (("--recipe", "low-resource"), ("--lowercase",)):
        refused = run_cli("train", "classifier", *flag, in_process=True)
        assert refused.returncode == 1
        applies = f"{flag[0]} applies to translator, rnn-translator and rnn-seq2seq"
        assert applies in refused.stderr


@pytest.mark.parametrize(
    "family, expect",
    [
        ("rnn-translator", "test BLEU"),
        ("classifier", "test accuracy"),
        ("masked-language-model", "masked-token accuracy"),
    ],
)
def test_train_every_family(tiny_runs, family, expect):
    out, result = tiny_runs(family)
    assert expect in result.stdout
    run = json.loads((out / "run.json").read_text())
    assert run["family"] == family and run["epochs"] == 1


def test_train_translator_on_jax_with_mixed_bfloat16(tmp_path):
    """The GPU path (tf.data on the host feeding JAX, bfloat16), on the CPU."""
    data = write_pairs(tmp_path / "pairs.tsv")
    out = tmp_path / "jax"
    result = run_cli(
        "train", "translator", "--data", data, "--preset", "tiny", "--epochs",
        "1", "--beam-width", "1", "--precision", "mixed_bfloat16",
        "--output-dir", out, backend="jax",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    run = json.loads((out / "run.json").read_text())
    assert run["epochs"] == 1 and 0.0 <= run["bleu_greedy"] <= 100.0
    assert "test BLEU" in result.stdout and "greedy" in result.stdout


@pytest.mark.parametrize("family", ["translator", "language-model"])
def test_a_max_length_below_two_is_refused_before_anything_is_written(family, tmp_path):
    data = write_pairs(tmp_path / "pairs.tsv")
    out = tmp_path / "run"
    result = run_cli(
        "train", family, "--data", data, "--preset", "tiny", "--set",
        "max_length=1", "--output-dir", out, in_process=True,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "keras-seq: --preset tiny with --set max_length=1: `max_length` must be "
        "at least 2; received 1."
    )
    assert not out.exists()


@pytest.mark.parametrize(
    "argument, flag, value, message",
    [
        ("epochs", "--epochs", 0, "{} must be at least 1; received 0"),
        ("seed", "--seed", -1, "{} must be at least 0; received -1"),
        ("seed", "--seed", 2**31, "{} must be at most 2147483647 (the largest "
                                  "int32 seed); received 2147483648"),
        ("minutes", "--minutes", -1.0, "{} must be a finite number above 0; "
                                       "received -1.0"),
        ("minutes", "--minutes", float("nan"), "{} must be a finite number "
                                               "above 0; received nan"),
        ("vocabulary_size", "--vocabulary-size", 5, "{} must be at least 6; "
                                                    "received 5"),
        ("beam_width", "--beam-width", 0, "{} must be at least 1; received 0"),
        ("min_frequency", "--min-frequency", 0, "{} must be at least 1; "
                                                "received 0"),
    ],
)  # fmt: skip
def test_train_and_zoo_train_refuse_a_bad_setting_in_the_same_words(
    tmp_path, argument, flag, value, message
):
    """One check (`settings.check_training`) serves both: the same bound
    and words, the command line naming its flag, Python its argument."""
    done = run_cli(
        "train", "translator", flag, value, "--output-dir", tmp_path / "cli",
        in_process=True,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip() == "keras-seq: " + message.format(flag)
    with pytest.raises(ValueError) as refused:
        zoo.train("translator", [("a", "b")], tmp_path / "api", **{argument: value})
    assert str(refused.value) == message.format(f"`{argument}`")
    assert not (tmp_path / "cli").exists() and not (tmp_path / "api").exists()


def test_an_output_dir_that_is_a_file_is_refused_before_the_data_is_read(tmp_path):
    """The refusal comes first: no line about the data before it."""
    data = tmp_path / "pairs.tsv"
    write_pairs(data)
    taken = tmp_path / "taken"
    taken.write_text("not a directory", encoding="utf-8")
    result = run_cli(
        "train", "translator", "--data", data, "--output-dir", taken,
        "--preset", "tiny", "--epochs", "1", in_process=True,
    )  # fmt: skip
    assert (result.returncode, result.stdout, result.stderr) == (
        1,
        "",
        f"keras-seq: --output-dir {taken} is a file; expected a directory.\n",
    )
    assert taken.read_text(encoding="utf-8") == "not a directory"
