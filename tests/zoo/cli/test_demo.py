"""`keras-seq demo`: the translator recipe with the demo's settings."""

import json
import os

import pytest

from tests.zoo.conftest import run_cli

TRANS = "/usr/share/trans/de-en"


def test_missing_corpus_is_one_line_with_the_fix(tmp_path):
    result = run_cli("demo", "--corpus", tmp_path / "nope", in_process=True)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("keras-seq: ")
    assert "apt-get install trans-de-en" in message


def test_demo_train_pairs_below_one_is_refused(tmp_path):
    out = tmp_path / "demo"
    result = run_cli("demo", "--train-pairs", "0", "--output-dir", out, in_process=True)
    assert result.returncode == 1
    message = result.stderr.strip().splitlines()[-1]
    assert message == "keras-seq: --train-pairs must be at least 1; received 0"
    assert not out.exists()  # Refused before anything is written.


@pytest.mark.skipif(not os.path.exists(TRANS), reason="trans-de-en not installed")
def test_demo_writes_model_figures_and_metrics(tmp_path):
    # The dictionary's first eighth: its sentence pairs keep the demo's
    # split rule and give about 50 test sentences to score, not 898.
    lines = open(TRANS, encoding="utf-8").read().splitlines(True)
    corpus = tmp_path / "de-en"
    corpus.write_text("".join(lines[: len(lines) // 8]), encoding="utf-8")
    out = tmp_path / "demo"
    result = run_cli(
        "demo", "--preset", "tiny", "--epochs", "1", "--train-pairs", "400",
        "--corpus", corpus, "--output-dir", out,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    metrics = json.loads((out / "metrics.json").read_text())
    run = json.loads((out / "run.json").read_text())
    # One set of keys: metrics.json holds run.json's figures and the history.
    for key in ("bleu_beam4", "bleu_beam4_lowercase", "bleu_greedy", "train_minutes"):
        assert metrics[key] == pytest.approx(run[key], abs=1e-4)
    assert metrics["params"] == run["params"] and len(metrics["bleu_history"]) == 1
    assert metrics["epochs"] == 1 and metrics["averaged_epochs"] == 1
    assert 0.0 <= metrics["bleu_beam4"] <= 100.0
    settings = json.loads((out / "training.json").read_text())
    assert settings["recipe"] == "demo" and settings["train_pairs"] == 400
    for name in (
        "model.keras",
        "run.json",
        "source_vocabulary.txt",
        "target_vocabulary.txt",
    ):
        assert (out / name).stat().st_size > 0
    for name in ("learning_curves.png", "attention.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG"
    assert (out / "saved_model" / "1" / "saved_model.pb").is_file()
    assert "test BLEU" in result.stdout and "greedy" in result.stdout
    assert "greedy sample translations identical through serving_default" in (
        result.stdout
    )
