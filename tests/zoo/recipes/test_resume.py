"""A training run killed mid-epoch and started again ends where an
uninterrupted run ends: same weights, same history (issue: interruption).

The command is run three times in fresh processes: once uninterrupted, once
killed with SIGKILL after its second epoch is backed up (so in the middle of
the third), and once more, the same command, which resumes.
"""

import csv
import json
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(
    not hasattr(signal, "SIGKILL"), reason="needs POSIX signals"
)

EPOCHS = 4


def _write_pairs(path, count=3000, seed=0):
    """A toy translation task: reverse the words and rename them."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as file:
        for _ in range(count):
            ids = [rng.randrange(60) for _ in range(rng.randint(3, 9))]
            source = " ".join(f"wort{i}" for i in ids)
            target = " ".join(f"word{i}" for i in reversed(ids))
            file.write(f"{source}.\t{target}.\n")


def _command(data, output_dir):
    return [
        sys.executable, "-m", "keras_seq_cli", "train", "translator",
        "--data", str(data), "--preset", "tiny", "--epochs", str(EPOCHS),
        "--seed", "0", "--vocabulary-size", "300", "--deterministic",
        # The mean of the last 3 epochs: epoch 2's copy must survive the kill.
        "--average-epochs", "3",
        "--beam-width", "1",  # greedy test scores: the resume is the point here
        "--output-dir", str(output_dir),
    ]  # fmt: skip


def _env():
    return {**os.environ, "KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "3"}


def _run(command, timeout=600):
    result = subprocess.run(
        command, env=_env(), capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _backed_up_epochs(output_dir):
    path = output_dir / "backup" / "training_metadata.json"
    try:
        return json.loads(path.read_text())["epoch"]
    except (OSError, ValueError):
        return 0


def _weights(path):
    import keras

    import zoo  # noqa: F401  (registers the builders' classes)

    model = keras.saving.load_model(path)
    return model.get_weights()


def _history(output_dir):
    with open(output_dir / "history.csv", encoding="utf-8") as file:
        return list(csv.DictReader(file))


def test_killed_run_resumes_to_identical_weights(tmp_path):
    data = tmp_path / "pairs.tsv"
    _write_pairs(data)
    _run(_command(data, tmp_path / "straight"))

    resumed = tmp_path / "resumed"
    process = subprocess.Popen(
        _command(data, resumed),
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 600
        while _backed_up_epochs(resumed) < 2 and process.poll() is None:
            assert time.time() < deadline, "no epoch was backed up in 10 minutes"
            time.sleep(0.05)
        time.sleep(0.3)  # into the third epoch's batches
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL, "the run ended before the kill"
    interrupted_at = _backed_up_epochs(resumed)
    assert 2 <= interrupted_at < EPOCHS
    assert not (resumed / "model.keras").exists()

    again = _run(_command(data, resumed))  # the same command again
    assert (
        f"resuming the interrupted run in {resumed} after epoch {interrupted_at} "
        f"(of at most {EPOCHS})"
    ) in again.stdout
    assert not (resumed / "backup").exists(), "a finished run removes its backup"
    assert not (resumed / "average").exists(), "and its epochs' copies"

    straight_weights = _weights(tmp_path / "straight" / "model.keras")
    resumed_weights = _weights(resumed / "model.keras")
    assert len(straight_weights) == len(resumed_weights)
    for a, b in zip(straight_weights, resumed_weights):
        np.testing.assert_array_equal(a, b)
    # The history reads as one run: one row per epoch, the same losses.
    straight, again = _history(tmp_path / "straight"), _history(resumed)
    assert [row["epoch"] for row in again] == [str(e) for e in range(EPOCHS)]
    assert [row["loss"] for row in again] == [row["loss"] for row in straight]
