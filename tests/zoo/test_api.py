"""`zoo.train`: the `keras-seq train` command as a Python function, on the
same path (the same run directory, the same model), and the lines `train`
says of what it chose."""

import contextlib
import io
import json
import re

import numpy as np
import pytest

import zoo
from tests.zoo.conftest import run_cli, write_pairs
from zoo.recipes import model_dir

# Files whose bytes depend only on the data and the settings.
SAME_FILES = ("source_vocabulary.txt", "target_vocabulary.txt", "preprocessor.json")
DUPLICATES = 7


def _pairs(path):
    return [tuple(line.split("\t")) for line in path.read_text().splitlines()]


def _run(out):
    run = json.loads((out / "run.json").read_text())
    # Where the data came from, and the time it took, differ by design.
    return {k: v for k, v in run.items() if k not in ("data", "train_minutes")}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """A tiny translator trained on the same pairs (100 unique, the first
    7 twice) from Python and, from a file of them, by `keras-seq train` in
    this process."""
    import keras

    root = tmp_path_factory.mktemp("api")
    data = write_pairs(root / "pairs.tsv")
    lines = data.read_text().splitlines()
    data.write_text("\n".join(lines + lines[:DUPLICATES]) + "\n")
    options = {"preset": "tiny", "epochs": 1, "seed": 0, "beam_width": 1}
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        from_python = zoo.train("translator", _pairs(data), root / "python", **options)
    (root / "python.out").write_text(said.getvalue())
    command = run_cli(
        "train", "translator", "--data", data, "--preset", "tiny", "--epochs", 1,
        "--seed", 0, "--beam-width", 1, "--output-dir", root / "cli",
        in_process=True, backend=keras.backend.backend(),
    )  # fmt: skip
    assert command.returncode == 0, command.stderr[-2000:]
    return root, from_python, command


def test_pairs_from_python_train_the_run_a_file_trains(both):
    root, from_python, _ = both
    assert isinstance(from_python, model_dir.TrainedModel)
    for name in SAME_FILES:
        python, cli = root / "python" / name, root / "cli" / name
        assert python.read_bytes() == cli.read_bytes()
    # The same data by content: the list and its file have one fingerprint.
    assert _run(root / "python") == _run(root / "cli")
    python_run = json.loads((root / "python" / "run.json").read_text())
    assert python_run["data"] is None and python_run["params"] > 0
    from_cli = model_dir.load_model_dir(str(root / "cli"))
    for a, b in zip(from_python.model.get_weights(), from_cli.model.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-5)
    sentences = [s for s, _ in _pairs(root / "pairs.tsv")[:6]]
    assert from_python.translate(sentences, beam_width=1) == from_cli.translate(
        sentences, beam_width=1
    )


def test_train_says_what_it_read_split_learned_and_built(both):
    root, _, command = both
    data = root / "pairs.tsv"
    said = command.stdout.splitlines()
    assert said[:2] == [
        f"--data {data}: {100 + DUPLICATES} pairs read; dropped 0 empty lines, "
        f"0 malformed lines, {DUPLICATES} duplicate pairs",
        f"--data {data}: split into 90 training, 5 validation and 5 test (the 100 "
        "unique pairs numbered in order from 0: n % 20 == 0 test, 1 validation, "
        "else training)",
    ]
    trained = model_dir.load_model_dir(str(root / "cli"))
    config = trained.model.get_config()
    source, target = config["source_vocabulary_size"], config["target_vocabulary_size"]
    assert len((root / "cli" / "source_vocabulary.txt").read_text().split()) == source
    assert (
        f"vocabularies learned: source {source}, target {target} tokens, of at most "
        "8,000 asked, of word pieces seen at least 10 times; the minimum "
        "frequency, not the size asked, decided the size: the training text "
        "holds no more word pieces seen 10 times (a lower --min-frequency "
        "learns more)"
    ) in said
    params = trained.model.count_params()
    assert (
        f"model: {params:,} parameters; preset tiny lists 10,468 at vocabularies "
        "of 100 / 100"
    ) in said
    # From Python, the same lines name the list `data`; a list has no
    # empty or malformed lines to drop.
    python = root / "python.out"
    assert python.read_text().splitlines()[:2] == [
        f"`data`: {100 + DUPLICATES} pairs read; dropped {DUPLICATES} duplicate pairs",
        said[1].replace(f"--data {data}", "`data`"),
    ]


@pytest.mark.parametrize(
    "family, data, options, error, message",
    [
        ("parrot", [], {}, ValueError, "`family` must be one of ("),
        ("translator", [], {"epochs": 0}, ValueError, "`epochs` must be at least 1"),
        ("translator", [], {"preset": "huge"}, ValueError, "`preset` must be one of"),
        ("translator", 5, {}, TypeError, "`data` must be a file path or a list"),
        ("translator", "missing.tsv", {}, ValueError, "missing.tsv: no such file."),
        ("classifier", [("good", "pos")] * 40, {}, ValueError, "two classes or more"),
        ("classifier", [], {"tokenizer": "sentencepiece"}, ValueError,
         "`tokenizer` applies to translators; received 'sentencepiece'"),
        ("translator", [], {"tokenizer": "bpe"}, ValueError,
         "`tokenizer` must be one of ['wordpiece', 'sentencepiece']"),
        ("translator", [], {"subword_sampling": 0.2}, ValueError,
         "`subword_sampling` applies to `tokenizer` sentencepiece"),
        ("translator", [], {"tokenizer": "sentencepiece", "subword_sampling": 1.0},
         ValueError, "`subword_sampling` must be in [0, 1)"),
    ],
)  # fmt: skip
def test_train_refuses_bad_arguments_before_writing(
    tmp_path, family, data, options, error, message
):
    with pytest.raises(error, match=re.escape(message)):
        zoo.train(family, data, tmp_path / "out", **options)
    assert not (tmp_path / "out").exists()


def test_the_tokenizer_arguments_reach_the_settings(tmp_path, monkeypatch):
    from zoo.recipes import workflow

    chosen = {}

    def train(family, data, output_dir, settings, overwrite):
        chosen.update(vars(settings))
        raise ValueError("stopped before training")

    monkeypatch.setattr(workflow, "train", train)
    with pytest.raises(ValueError, match="stopped before training"):
        zoo.train(
            "translator", [("a.", "b.")] * 3, tmp_path / "out",
            tokenizer="sentencepiece", sentencepiece_model="bpe",
            subword_sampling=0.1,
        )  # fmt: skip
    assert (chosen["tokenizer"], chosen["sentencepiece_model"]) == (
        "sentencepiece",
        "bpe",
    )
    assert chosen["subword_sampling"] == 0.1


def test_train_refuses_unknown_builder_arguments_and_half_a_split(tmp_path):
    pairs = [("a.", "b.")] * 3
    with pytest.raises(TypeError, match=r"unknown arguments \['model_width'\]"):
        zoo.train("translator", pairs, tmp_path / "out", model_width=8)
    with pytest.raises(ValueError, match="`validation_data` and `test_data` go"):
        zoo.train("translator", pairs, tmp_path / "out", validation_data=pairs)
    assert not (tmp_path / "out").exists()


def test_train_from_python_ends_with_the_lines_the_command_line_ends_with(both):
    """The test figures, the notes, the parameters and where the run went:
    the same closing lines (the run's own path aside) on both paths."""
    root, _, command = both
    python = (root / "python.out").read_text().splitlines()
    cli = command.stdout.splitlines()
    figures = [line for line in cli if line.startswith("translator: ")]
    assert len(figures) == 1 and "test BLEU" in figures[0], cli
    start = cli.index(figures[0])
    assert cli[-1] == f"saved to {root / 'cli'}"
    assert python[-(len(cli) - start) :] == [
        *cli[start:-1],
        f"saved to {root / 'python'}",
    ]
