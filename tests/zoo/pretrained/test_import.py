"""`keras-seq import DIR --output-dir RUN` and `zoo.import_transformers`: a
Marian checkpoint as a finished translator run that every command takes.

A tiny random `MarianMTModel` is saved with SentencePiece models trained on
trans-de-en (`tests/zoo/pretrained/checkpoints.py`) and imported once; its
translations through `TrainedModel`, `keras-seq translate`, the exported
SavedModel and the CTranslate2 export are transformers' `generate` +
`MarianTokenizer.decode` (greedy, and 4 beams at length penalty 0).
Fine-tuning it with `train translator --init-from` lowers the validation
loss from the imported weights' and keeps its tokenizer files; a
checkpoint that is not one, or a missing extra, is refused before the
output directory exists.
"""

import hashlib
import json
import os
import sys

import keras
import numpy as np
import pytest

import zoo
from tests.zoo.conftest import run_cli

# Run directories, the command line and the exports run on TensorFlow, the
# application's backend; the model's parity on every backend is
# test_marian_model.py's.
pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="the application's paths run in the TensorFlow stage",
)

pytest.importorskip("sentencepiece")
pytest.importorskip("transformers")
pytest.importorskip("torch")
from tests.zoo.pretrained import checkpoints  # noqa: E402

TOKENIZER_FILES = ("source.spm", "target.spm", "preprocessor.json")


def _sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return checkpoints.write_checkpoint(tmp_path_factory.mktemp("marian") / "opus")


@pytest.fixture(scope="module")
def sources():
    """Eight German sentences of trans-de-en, of several lengths within the
    checkpoint's `max_length` (transformers refuses a longer one)."""
    short = [de for de, _ in checkpoints.corpus() if 12 <= len(de) <= 40]
    return short[3 : 3 + 8 * 97 : 97]


@pytest.fixture(scope="module")
def expected(checkpoint, sources):
    """transformers' greedy and 4-beam translations."""
    return {
        1: checkpoints.reference_translations(checkpoint, sources),
        4: checkpoints.reference_translations(checkpoint, sources, num_beams=4),
    }


@pytest.fixture(scope="module")
def imported(checkpoint, tmp_path_factory):
    out = tmp_path_factory.mktemp("imported") / "run"
    result = run_cli("import", checkpoint, "--output-dir", out, in_process=True)
    assert result.returncode == 0, result.stderr[-2000:]
    return out, result


def test_import_writes_a_finished_translator_run(checkpoint, imported):
    out, result = imported
    (line,) = result.stdout.splitlines()
    trained = zoo.load_model_dir(out)
    params = trained.model.count_params()
    assert line.startswith(
        f"imported {checkpoint}: a translator of {params:,} parameters "
        "(model_dim 16, 2+2 layers, max_length 48), vocabularies source "
    )
    assert line.endswith(f"(one table), SentencePiece; saved to {out}")
    run = json.loads((out / "run.json").read_text())
    assert run["family"] == "translator" and run["epochs"] == 0
    assert run["imported"] == {
        "path": str(checkpoint.absolute()),
        "config_sha256": _sha256(checkpoint / "config.json"),
        "weights": "model.safetensors",
        "weights_sha256": _sha256(checkpoint / "model.safetensors"),
    }
    for name in ("model.keras", *TOKENIZER_FILES):
        assert (out / name).is_file(), name
    assert not (out / ".keras-seq.lock").exists()


def test_zoo_import_transformers_returns_the_loaded_run(checkpoint, tmp_path):
    trained = zoo.import_transformers(checkpoint, tmp_path / "run")
    assert trained.path == str(tmp_path / "run") and trained.family == "translator"
    with pytest.raises(ValueError, match="holds a finished translator run"):
        zoo.import_transformers(checkpoint, tmp_path / "run")
    again = zoo.import_transformers(checkpoint, tmp_path / "run", overwrite=True)
    assert again.model.count_params() == trained.model.count_params()


def test_the_keras_file_round_trips_the_imported_weights(checkpoint, imported):
    from zoo.pretrained.marian import load_marian

    built = load_marian(checkpoint).model
    loaded = zoo.load_model_dir(imported[0]).model
    rng = np.random.default_rng(0)
    size = built.get_config()["source_vocabulary_size"]
    source = rng.integers(5, size, (3, 9)).astype("int32")
    target = rng.integers(5, size, (3, 7)).astype("int32")
    inputs = {"encoder_token_ids": source, "decoder_token_ids": target}
    np.testing.assert_allclose(
        np.asarray(loaded.predict(inputs, verbose=0)),
        np.asarray(built.predict(inputs, verbose=0)),
        atol=1e-5,
    )


def test_translations_equal_transformers_in_process(imported, sources, expected):
    from zoo.recipes.inference import translate_texts

    trained = zoo.load_model_dir(imported[0])
    assert trained.translate(sources, beam_width=1) == expected[1]
    beams = translate_texts(
        trained.model, trained.preprocessor, sources,
        strategy="beam", beam_width=4, length_penalty=0.0,
    )  # fmt: skip
    assert beams == expected[4]


def test_keras_seq_translate_gives_transformers_strings(imported, sources, expected):
    out, _ = imported
    result = run_cli(
        "translate", "--model-dir", out, "--beam-width", 1, *sources, in_process=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == expected[1]


def test_the_saved_model_gives_transformers_strings(
    imported, sources, expected, tmp_path
):
    import tensorflow as tf

    from keras_seq.export import export_translator

    out, _ = imported
    result = run_cli(
        "export", "--model-dir", out, "--export-dir", tmp_path / "sm", in_process=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    served = tf.saved_model.load(str(tmp_path / "sm" / "1"))
    batch = tf.constant(sources)
    greedy = served.signatures["serving_default"](sentences=batch)["translations"]
    assert [t.decode() for t in greedy.numpy()] == expected[1]
    # The beam signature at length penalty 0, transformers' setting.
    trained = zoo.load_model_dir(out)
    path = export_translator(
        trained.model, trained.preprocessor, str(tmp_path / "beam"),
        beam_width=4, length_penalty=0.0,
    )  # fmt: skip
    beams = tf.saved_model.load(path).signatures["beam_search"](sentences=batch)
    assert [t.decode() for t in beams["translations"].numpy()[:, 0]] == expected[4]


def test_the_ctranslate2_export_gives_transformers_strings(
    imported, sources, expected, tmp_path
):
    from zoo.serving.ctranslate2_model import CTranslate2Model

    out, _ = imported
    for quantization in ("float32", "int8"):
        result = run_cli(
            "export", "--model-dir", out, "--export-dir", tmp_path / quantization,
            "--format", "ctranslate2", "--quantization", quantization,
            in_process=True,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
    exported = CTranslate2Model(tmp_path / "float32")
    assert exported.translate(sources, beam_width=1) == expected[1]
    beams = exported.translate(sources, beam_width=4, length_penalty=0.0)
    assert beams == expected[4]
    int8 = CTranslate2Model(tmp_path / "int8").translate(sources, beam_width=1)
    assert len(int8) == len(sources) and all(isinstance(t, str) for t in int8)
    sizes = [os.path.getsize(tmp_path / q / "model.bin") for q in ("int8", "float32")]
    assert sizes[0] < sizes[1]


def test_evaluate_scores_the_imported_run_on_a_file(imported, tmp_path):
    data = tmp_path / "pairs.tsv"
    data.write_text(
        "".join(f"{de}\t{en}\n" for de, en in checkpoints.corpus()[:60]),
        encoding="utf-8",
    )
    result = run_cli(
        "evaluate", "--model-dir", imported[0], "--data", data, "--beam-width", 1,
        in_process=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads(result.stdout.splitlines()[-1])
    assert 0.0 <= figures["bleu_greedy"] <= 100.0


def _validation_loss(model_dir, data):
    from zoo.recipes import corpora
    from zoo.recipes.recipe import masked_loss

    trained = zoo.load_model_dir(model_dir)
    corpus = corpora.translation_corpus(str(data), False, False, None, 0)
    dataset = trained.preprocessor.dataset(corpus.validation, batch_tokens=4096)
    return masked_loss(trained.model, dataset)


def test_fine_tuning_from_the_import_lowers_the_loss_and_keeps_the_tokenizer(
    imported, tmp_path
):
    out, _ = imported
    data = tmp_path / "pairs.tsv"
    data.write_text(
        "".join(f"{de}\t{en}\n" for de, en in checkpoints.corpus()[:1500]),
        encoding="utf-8",
    )
    tuned = tmp_path / "tuned"
    result = run_cli(
        "train", "translator", "--init-from", out, "--data", data, "--epochs", 2,
        "--beam-width", 1, "--output-dir", tuned, in_process=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"vocabularies and tokenizers kept from {out}" in result.stdout
    for name in TOKENIZER_FILES:
        assert (tuned / name).read_bytes() == (out / name).read_bytes(), name
    before, after = _validation_loss(out, data), _validation_loss(tuned, data)
    assert after < before - 0.1, (before, after)
    run = json.loads((tuned / "run.json").read_text())
    assert run["init_from"] == {
        "path": str(out.absolute()),
        "model_sha256": _sha256(out / "model.keras"),
    }


def _refused(directory, out):
    result = run_cli("import", directory, "--output-dir", out, in_process=True)
    assert result.returncode == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert not out.exists(), "nothing is written before the checkpoint is read"
    return line


def test_a_bad_checkpoint_is_refused_before_the_output_dir_exists(checkpoint, tmp_path):
    import shutil

    out = tmp_path / "out"
    bart = shutil.copytree(checkpoint, tmp_path / "bart")
    config = json.loads((bart / "config.json").read_text())
    (bart / "config.json").write_text(json.dumps({**config, "model_type": "bart"}))
    assert "model_type" in _refused(bart, out)
    truncated = shutil.copytree(checkpoint, tmp_path / "truncated")
    weights = truncated / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    assert "model.safetensors" in _refused(truncated, out)
    missing = shutil.copytree(checkpoint, tmp_path / "missing")
    os.remove(missing / "model.safetensors")
    assert _refused(missing, out).startswith("keras-seq: ")
    prenorm = shutil.copytree(checkpoint, tmp_path / "prenorm")
    (prenorm / "config.json").write_text(
        json.dumps({**config, "normalize_before": True})
    )
    assert "`normalize_before` is True" in _refused(prenorm, out)
    assert "is not a directory" in _refused(tmp_path / "none", out)


@pytest.mark.parametrize("module", ["sentencepiece", "safetensors"])
def test_a_missing_extra_is_refused_naming_it(
    checkpoint, tmp_path, monkeypatch, module
):
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    line = _refused(checkpoint, tmp_path / "out")
    assert line == (
        f"keras-seq: importing {checkpoint} needs {module}, which is not "
        "installed; pip install 'keras-seq[pretrained]'."
    )
