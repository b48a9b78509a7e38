import json
import os
import subprocess
import sys

import pytest

TRANS = "/usr/share/trans/de-en"


def _run(*args, timeout=600):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND="tensorflow")
    return subprocess.run(
        [sys.executable, "-m", "keras_seq.cli", *args],
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


def test_unknown_command_exits_nonzero():
    result = _run("fly", timeout=60)
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
    assert 0.0 <= metrics["bleu"] <= 100.0
    for name in ("translator.keras", "source_vocabulary.txt", "target_vocabulary.txt"):
        assert (out / name).stat().st_size > 0
    for name in ("learning_curves.png", "attention.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG"
    assert "test BLEU" in result.stdout
