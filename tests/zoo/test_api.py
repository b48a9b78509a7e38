"""`zoo.train`: the `keras-seq train` command as a Python function, on the
same path (the same run directory, the same model)."""

import json

import numpy as np
import pytest

import zoo
from tests.zoo.conftest import run_cli, write_pairs
from zoo.recipes import model_dir

# Files whose bytes depend only on the data and the settings.
SAME_FILES = ("source_vocabulary.txt", "target_vocabulary.txt", "preprocessor.json")


def _pairs(path):
    return [tuple(line.split("\t")) for line in path.read_text().splitlines()]


def _run(out):
    run = json.loads((out / "run.json").read_text())
    # Where the data came from, and the time it took, differ by design.
    return {k: v for k, v in run.items() if k not in ("data", "train_minutes")}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """A tiny translator trained on the same pairs from Python and, from a
    file of them, by `keras-seq train` in this process."""
    import keras

    root = tmp_path_factory.mktemp("api")
    data = write_pairs(root / "pairs.tsv")
    options = {"preset": "tiny", "epochs": 1, "seed": 0, "beam_width": 1}
    from_python = zoo.train("translator", _pairs(data), root / "python", **options)
    command = run_cli(
        "train", "translator", "--data", data, "--preset", "tiny", "--epochs", 1,
        "--seed", 0, "--beam-width", 1, "--output-dir", root / "cli",
        in_process=True, backend=keras.backend.backend(),
    )  # fmt: skip
    assert command.returncode == 0, command.stderr[-2000:]
    return root, from_python, command


def test_pairs_from_python_train_the_run_a_file_trains(both):
    root, from_python, command = both
    assert isinstance(from_python, model_dir.TrainedModel)
    for name in SAME_FILES:
        assert (root / "python" / name).read_bytes() == (root / "cli" / name).read_bytes()
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


def test_python_data_says_what_was_chosen(both, capsys):
    _, _, command = both
    # The command's lines (captured by `run_cli`) are those `zoo.train` prints.
    assert "--data " in command.stdout and "100 pairs read" in command.stdout
