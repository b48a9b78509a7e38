"""`keras-seq export`: a run directory as a TF Serving version."""

import pytest

from tests.zoo.conftest import run_cli


def test_export_then_translate_through_the_saved_model(translator_run, tmp_path):
    out = translator_run[0]
    exported = run_cli("export", "--model-dir", out, "--export-dir", tmp_path)
    assert exported.returncode == 0, exported.stderr[-2000:]
    assert (tmp_path / "1" / "saved_model.pb").is_file()
    long = " ".join(["du"] * 80) + "."  # Past the tiny max_length of 32.
    sentences = ("ich sehe du.", long, "er mag sie.")
    # Translated in this process (a fresh one translates in test_translate.py).
    direct = run_cli(
        "translate", "--model-dir", out, "--beam-width", "1", *sentences,
        in_process=True,
    )  # fmt: skip
    served = run_cli(
        "translate", "--saved-model", tmp_path, *sentences, in_process=True
    )
    assert served.returncode == 0, served.stderr[-2000:]
    assert served.stdout == direct.stdout
    # The cut is reported on both paths, in the same words.
    note = (
        "keras-seq: note: 1 of 3 sentences are longer than the model's "
        "max_length (32 tokens); each was cut to it."
    )
    assert direct.stderr.splitlines()[-1] == note
    assert served.stderr.splitlines() == [note]
    again = run_cli(
        "export", "--model-dir", out, "--export-dir", tmp_path, in_process=True
    )
    assert again.returncode == 1 and "already holds version 1" in again.stderr


def test_export_ctranslate2_then_translate_without_tensorflow(translator_run, tmp_path):
    pytest.importorskip("ctranslate2")
    out = translator_run[0]
    export_dir = tmp_path / "ct2"
    exported = run_cli(
        "export", "--model-dir", out, "--export-dir", export_dir,
        "--format", "ctranslate2", in_process=True,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr[-2000:]
    assert (export_dir / "model.bin").is_file()
    sentences = ("ich sehe du.", "er mag sie.", "")
    direct = run_cli(
        "translate", "--model-dir", out, "--beam-width", "1", *sentences,
        in_process=True,
    )  # fmt: skip
    # A fresh process: the CTranslate2 path loads neither TensorFlow nor Keras.
    ct2 = run_cli("translate", "--ctranslate2", export_dir, *sentences)
    assert ct2.returncode == 0, ct2.stderr[-2000:]
    assert ct2.stdout == direct.stdout
    refused = run_cli(
        "export", "--model-dir", out, "--export-dir", export_dir,
        "--format", "ctranslate2", in_process=True,
    )  # fmt: skip
    assert refused.returncode == 1 and "choose a new directory" in refused.stderr
