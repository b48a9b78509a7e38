import json
import os
import subprocess
import sys
import zipfile

import pytest

TRANS = "/usr/share/trans/de-en"


def _run(*args, timeout=600):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND="tensorflow")
    return subprocess.run(
        [sys.executable, "-m", "keras_seq_cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_missing_corpus_is_one_line_with_the_fix(tmp_path):
    result = _run("demo", "--corpus", str(tmp_path / "nope"), timeout=120)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("keras-seq: ")
    assert "apt-get install trans-de-en" in message


def test_average_epochs_is_refused_for_a_classifier(tmp_path):
    result = _run(
        "train", "classifier", "--average-epochs", "3", "--output-dir", str(tmp_path),
        timeout=120,
    )  # fmt: skip
    assert result.returncode == 1
    message = result.stderr.strip().splitlines()[-1]
    assert message == (
        "keras-seq: --average-epochs applies to translator and rnn-translator; "
        "received 3 for classifier"
    )


@pytest.mark.parametrize("command", [["demo"], ["train", "translator"]])
def test_average_epochs_below_one_is_refused(tmp_path, command):
    result = _run(
        *command, "--average-epochs", "0", "--output-dir", str(tmp_path), timeout=120
    )
    assert result.returncode == 1
    message = result.stderr.strip().splitlines()[-1]
    assert message == "keras-seq: --average-epochs must be at least 1; received 0"


def test_demo_train_pairs_below_one_is_refused(tmp_path):
    out = tmp_path / "demo"
    result = _run("demo", "--train-pairs", "0", "--output-dir", str(out), timeout=120)
    assert result.returncode == 1
    message = result.stderr.strip().splitlines()[-1]
    assert message == "keras-seq: --train-pairs must be at least 1; received 0"
    assert not out.exists()  # Refused before anything is written.


@pytest.mark.parametrize(
    "family, data",
    [("classifier", "movie-reviews"), ("translator", "pairs.tsv")],
)
def test_train_variants_outside_the_dictionary_is_refused(tmp_path, family, data):
    result = _run(
        "train", family, "--data", data, "--variants",
        "--output-dir", str(tmp_path / "run"), timeout=120,
    )  # fmt: skip
    assert result.returncode == 1
    message = result.stderr.strip().splitlines()[-1]
    assert message == (
        "keras-seq: --variants applies to translators on the trans-de-en "
        f"dictionary; received {family} on {data}"
    )


def test_unknown_command_exits_nonzero():
    result = _run("fly", timeout=240)
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


@pytest.mark.skipif(not os.path.exists(TRANS), reason="trans-de-en not installed")
def test_demo_writes_model_figures_and_metrics(tmp_path):
    out = tmp_path / "demo"
    result = _run(
        "demo",
        "--preset",
        "tiny",
        "--epochs",
        "1",
        "--train-pairs",
        "400",
        "--output-dir",
        str(out),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    metrics = json.loads((out / "metrics.json").read_text())
    for key in ("bleu", "bleu_cased", "train_minutes", "params"):
        assert key in metrics
    assert metrics["epochs"] == 1 and metrics["averaged_epochs"] == 1
    assert 0.0 <= metrics["bleu"] <= 100.0
    for name in (
        "model.keras",
        "run.json",
        "source_vocabulary.txt",
        "target_vocabulary.txt",
    ):
        assert (out / name).stat().st_size > 0
    for name in ("learning_curves.png", "attention.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG"
    assert "test BLEU" in result.stdout


# `keras-seq train`, `translate` and `evaluate` on small files.

_GERMAN = ["ich", "du", "er", "sie", "wir"]
_ENGLISH = ["i", "you", "he", "she", "we"]
_VERBS = [("sehe", "see"), ("rufe", "call"), ("kenne", "know"), ("mag", "like")]


def _write_pairs(path):
    rows = []
    for i, (de_s, en_s) in enumerate(zip(_GERMAN, _ENGLISH)):
        for j, (de_v, en_v) in enumerate(_VERBS):
            for k, (de_o, en_o) in enumerate(zip(_GERMAN, _ENGLISH)):
                rows.append(f"{de_s} {de_v} {de_o} {i}{j}{k}.\t{en_s} {en_v} {en_o}.")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def translator_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    data = _write_pairs(root / "pairs.tsv")
    out = root / "translator"
    result = _run(
        "train", "translator", "--data", str(data), "--preset", "tiny",
        "--epochs", "2", "--average-epochs", "2", "--output-dir", str(out),
        "--recipe", "low-resource",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "test BLEU" in result.stdout
    return out, data


def test_train_translator_writes_a_loadable_directory(translator_dir):
    out, _ = translator_dir
    run = json.loads((out / "run.json").read_text())
    assert run["family"] == "translator"
    assert 0.0 <= run["bleu_beam4"] <= 100.0 and run["params"] > 1000
    assert (out / "history.csv").read_text().count("\n") == 3  # header + 2
    # The preset's max_length (tiny: 32) holds without --set max_length.
    config = json.loads(zipfile.ZipFile(out / "model.keras").read("config.json"))
    assert config["config"]["max_length"] == 32


def test_train_applies_the_named_recipe(translator_dir):
    out, _ = translator_dir
    settings = json.loads((out / "training.json").read_text())
    assert settings["recipe"] == "low-resource" and settings["average_epochs"] == 2
    # Its values too, so a backup made under other values is not resumed.
    assert settings["recipe_arguments"]["token_dropout"] == 0.1
    config = json.loads(zipfile.ZipFile(out / "model.keras").read("config.json"))
    assert config["config"]["dropout"] == 0.2  # the recipe's, over the preset's 0.0
    header = (out / "history.csv").read_text().splitlines()[0].split(",")
    assert "val_bleu" in header and (out / "learning_curves.png").stat().st_size > 1000
    refused = _run("train", "classifier", "--recipe", "low-resource")
    assert refused.returncode == 1
    assert "--recipe applies to translator and rnn-translator" in refused.stderr


def test_translate_reads_arguments_and_stdin(translator_dir):
    out, _ = translator_dir
    by_args = _run("translate", "--model-dir", str(out), "ich sehe du.", "er mag sie.")
    assert by_args.returncode == 0, by_args.stderr[-2000:]
    lines = by_args.stdout.splitlines()
    assert len(lines) == 2
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    by_stdin = subprocess.run(
        [sys.executable, "-m", "keras_seq_cli", "translate", "--model-dir", str(out)],
        input="ich sehe du.\ner mag sie.\n",
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert by_stdin.stdout.splitlines() == lines


def test_evaluate_reports_the_training_bleu(translator_dir):
    out, _ = translator_dir
    result = _run("evaluate", "--model-dir", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    scores = json.loads(result.stdout.strip().splitlines()[-1])
    run = json.loads((out / "run.json").read_text())
    assert scores["bleu_beam4"] == pytest.approx(run["bleu_beam4"], abs=1e-3)


def test_a_mismatched_vocabulary_is_refused(translator_dir, tmp_path):
    import shutil

    out, _ = translator_dir
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    vocabulary = (copy / "target_vocabulary.txt").read_text().splitlines()
    (copy / "target_vocabulary.txt").write_text("\n".join(vocabulary[:-3]) + "\n")
    result = _run("translate", "--model-dir", str(copy), "ich sehe du.")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    message = result.stderr.strip().splitlines()[-1]
    assert "target_vocabulary.txt" in message and str(len(vocabulary)) in message


def test_translate_refuses_a_missing_or_wrong_directory(translator_dir, tmp_path):
    result = _run("translate", "--model-dir", str(tmp_path), "hallo.")
    assert result.returncode == 1
    assert "has no run.json" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "family, data_kind, expect",
    [
        ("rnn-translator", "pairs", "test BLEU"),
        ("classifier", "labels", "test accuracy"),
        ("masked-language-model", "lines", "masked-token accuracy"),
    ],
)
def test_train_every_family(tmp_path, family, data_kind, expect):
    if data_kind == "pairs":
        data = _write_pairs(tmp_path / "pairs.tsv")
    elif data_kind == "labels":
        data = tmp_path / "labels.tsv"
        rows = [f"{w} is {'good' if i % 2 else 'bad'}\t{i % 2}" for i, w in
                enumerate(_GERMAN * 20)]  # fmt: skip
        data.write_text("\n".join(rows) + "\n")
    else:
        data = tmp_path / "lines.txt"
        lines = [" ".join(_ENGLISH[i:] + _ENGLISH[:i]) for i in range(5)] * 40
        data.write_text("\n".join(lines) + "\n")
    out = tmp_path / family
    result = _run(
        "train", family, "--data", str(data), "--preset", "tiny", "--epochs", "1",
        "--output-dir", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert expect in result.stdout
    run = json.loads((out / "run.json").read_text())
    assert run["family"] == family
    evaluated = _run("evaluate", "--model-dir", str(out))
    assert evaluated.returncode == 0, evaluated.stderr[-2000:]
    assert json.loads(evaluated.stdout.strip().splitlines()[-1])
    if family == "classifier":
        classified = _run("classify", "--model-dir", str(out), "du is good", "")
        assert classified.returncode == 0, classified.stderr[-2000:]
        rows = [line.split("\t") for line in classified.stdout.splitlines()]
        assert len(rows) == 2  # one line per input, the blank one too
        assert all(label in ("0", "1") and 0.5 <= float(p) <= 1 for label, p in rows)


def test_a_language_model_run_evaluates(language_model_run):
    """The run of `tests/zoo/cli/test_train.py`'s two-process test, shared."""
    out = language_model_run[0]
    evaluated = _run("evaluate", "--model-dir", str(out))
    assert evaluated.returncode == 0, evaluated.stderr[-2000:]
    assert json.loads(evaluated.stdout.strip().splitlines()[-1])["test_perplexity"] > 1
    # `generate` is tested on the same run in tests/zoo/cli/test_generate.py.


def test_export_then_translate_through_the_saved_model(translator_dir, tmp_path):
    out, _ = translator_dir
    exported = _run("export", "--model-dir", str(out), "--export-dir", str(tmp_path))
    assert exported.returncode == 0, exported.stderr[-2000:]
    assert (tmp_path / "1" / "saved_model.pb").is_file()
    sentences = ("ich sehe du.", "er mag sie.", "")
    direct = _run(
        "translate", "--model-dir", str(out), "--beam-width", "1", *sentences[:2]
    )
    served = _run("translate", "--saved-model", str(tmp_path), *sentences[:2])
    assert served.returncode == 0, served.stderr[-2000:]
    assert served.stdout == direct.stdout
    again = _run("export", "--model-dir", str(out), "--export-dir", str(tmp_path))
    assert again.returncode == 1 and "already holds version 1" in again.stderr


def test_train_translator_on_jax_with_mixed_bfloat16(tmp_path):
    """The GPU path (tf.data on the host feeding JAX, bfloat16), on the CPU."""
    data = _write_pairs(tmp_path / "pairs.tsv")
    out = tmp_path / "jax"
    command = [
        sys.executable, "-m", "keras_seq_cli", "train", "translator", "--data",
        str(data), "--preset", "tiny", "--epochs", "1", "--beam-width", "1",
        "--precision", "mixed_bfloat16", "--output-dir", str(out),
    ]  # fmt: skip
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, KERAS_BACKEND="jax"),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    run = json.loads((out / "run.json").read_text())
    assert run["epochs"] == 1 and 0.0 <= run["bleu_greedy"] <= 100.0
    assert "test BLEU" in result.stdout and "greedy" in result.stdout
