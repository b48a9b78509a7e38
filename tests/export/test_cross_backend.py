"""Train anywhere, serve with TensorFlow.

`keras-seq train translator` runs end to end on PyTorch and on JAX (tf.data
feeding either backend); the run directory it writes loads under
TensorFlow, exports the string-in/string-out SavedModel, and the exported
`serving_default` signature gives exactly the greedy translations that
`generate` gives in the training backend's own process. Export and
`--strategy`, which are TensorFlow's, refuse other backends in one line.
"""

import json

import keras
import pytest

from tests.command_line import run_cli
from tests.zoo.conftest import write_pairs

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="serving is TensorFlow's: this test exports here and trains on "
    "PyTorch and JAX in subprocesses",
)

# Sentences of the training pairs, one unseen and one blank.
SENTENCES = ("Ich sehe du 010.", "Er mag sie 231.", "Wir kennen ich.", "")


def _cli(backend, *args):
    """`keras-seq ARGS` in a fresh process on `backend`."""
    return run_cli(*args, backend=backend)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_pairs(tmp_path_factory.mktemp("cross_backend") / "pairs.tsv")


# One training step leaves the weights near their initial values; with these
# seeds each backend's tiny translator gives different, non-empty greedy
# translations of `SENTENCES`, so that equal outputs say something.
SEEDS = {"torch": 0, "jax": 3}


@pytest.fixture(scope="module", params=sorted(SEEDS))
def trained(request, data):
    """A tiny translator trained for one epoch by `keras-seq train` on the
    backend `request.param`: `(backend, run directory, the process)`."""
    backend = request.param
    out = data.parent / backend
    result = _cli(
        backend, "train", "translator", "--data", data, "--preset", "tiny",
        "--epochs", "1", "--vocabulary-size", "100", "--beam-width", "1",
        "--seed", SEEDS[backend], "--output-dir", out,
    )  # fmt: skip
    return backend, out, result


def test_train_translator_runs_end_to_end(trained):
    backend, out, result = trained
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"saved to {out}" in result.stdout and "Traceback" not in result.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["family"] == "translator" and run["epochs"] == 1
    assert 0.0 <= run["bleu_greedy"] <= 100.0
    assert (out / "model.keras").is_file() and not (out / "backup").exists(), backend


def test_greedy_translations_survive_the_export_under_tensorflow(
    trained, tmp_path, capsys
):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)

    from zoo.cli.main import main

    backend, out, result = trained
    assert result.returncode == 0, result.stderr[-3000:]
    # `generate` in the training backend's process, detokenized.
    direct = _cli(backend, "translate", "--model-dir", out, "--beam-width", "1",
                  *SENTENCES)  # fmt: skip
    assert direct.returncode == 0, direct.stderr[-3000:]
    expected = direct.stdout.splitlines()[-len(SENTENCES) :]
    assert expected[-1] == "" and len(set(expected[:-1])) > 1, expected
    # Here, under TensorFlow: load the run directory and export it.
    assert keras.backend.backend() == "tensorflow"
    export_dir = tmp_path / "exported"
    arguments = ["export", "--model-dir", str(out), "--export-dir", str(export_dir)]
    assert main(arguments) == 0
    capsys.readouterr()
    served = tf.saved_model.load(str(export_dir / "1")).signatures["serving_default"]
    outputs = served(sentences=tf.constant(SENTENCES))
    (translations,) = outputs.values()
    assert [t.decode("utf-8") for t in translations.numpy()] == expected, backend


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_export_refuses_another_backend_before_loading(backend, tmp_path):
    result = _cli(backend, "export", "--model-dir", tmp_path / "absent",
                  "--export-dir", tmp_path / "exported")  # fmt: skip
    assert result.returncode == 1, result.stderr[-3000:]
    assert result.stderr.strip().splitlines() == [
        "keras-seq: SavedModel export needs the TensorFlow backend "
        f"(KERAS_BACKEND=tensorflow); the current backend is '{backend}'."
    ]
    assert not (tmp_path / "exported").exists()


def test_strategy_refuses_torch_in_one_line(data, tmp_path):
    out = tmp_path / "run"
    result = _cli("torch", "train", "translator", "--data", data, "--preset",
                  "tiny", "--strategy", "mirrored", "--output-dir", out)  # fmt: skip
    assert result.returncode == 1, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("keras-seq: "), lines
    assert "`strategy='mirrored'` needs the TensorFlow backend" in lines[0]
    assert "received backend 'torch'" in lines[0]
    assert not (out / "model.keras").exists()
