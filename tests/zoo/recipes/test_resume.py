"""A training run killed mid-epoch and started again ends where an
uninterrupted run ends: same weights, same history (issue: interruption).

The command is run three times in fresh processes: once uninterrupted, once
killed with SIGKILL after its second epoch is backed up (so in the middle of
the third), and once more, the same command, which resumes.
"""

import csv
import hashlib
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
        sys.executable, "-m", "zoo.cli", "train", "translator",
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


def _start(command, log):
    """`command` started in a fresh process, its output into the file `log`
    (a pipe left unread would fill and stop it)."""
    with open(log, "w", encoding="utf-8") as file:
        return subprocess.Popen(command, env=_env(), stdout=file, stderr=file)


def _finish(process, log, timeout=600):
    assert process.wait(timeout=timeout) == 0, log.read_text()[-3000:]


def test_killed_run_resumes_to_identical_weights(tmp_path):
    data = tmp_path / "pairs.tsv"
    _write_pairs(data, count=1500)
    # The uninterrupted run is independent of the other two: it trains
    # beside them. Most of each run's time is its start and the compiling
    # of its first epoch, which the two share no part of.
    straight_log = tmp_path / "straight.log"
    straight_run = _start(_command(data, tmp_path / "straight"), straight_log)

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
    _finish(straight_run, straight_log)
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


# Resuming after the data changed, moved, or is named from elsewhere
# (in this process: an exception after the first epoch's backup stands in
# for the kill).


class _Interrupted(Exception):
    pass


def _interrupt_after_first_epoch(monkeypatch):
    from keras_seq import callbacks
    from keras_seq.callbacks import ShuffleEpoch

    class Interrupting(ShuffleEpoch):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch >= 1:  # Epoch 0 is backed up by now.
                raise _Interrupted
            super().on_epoch_begin(epoch, logs)

    monkeypatch.setattr(callbacks, "ShuffleEpoch", Interrupting)


def _train(data, output_dir, cwd):
    from tests.command_line import run_cli

    return run_cli(
        "train", "translator", "--data", data, "--preset", "tiny", "--epochs", 2,
        "--beam-width", 1, "--output-dir", output_dir, in_process=True, cwd=cwd,
    )  # fmt: skip


def _digests(root):
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_a_resume_keeps_its_vocabularies_and_refuses_changed_data(
    tmp_path, monkeypatch
):
    from tests.zoo.conftest import write_pairs

    data = write_pairs(tmp_path / "pairs.tsv")
    original = data.read_bytes()
    with monkeypatch.context() as patch:
        _interrupt_after_first_epoch(patch)
        with pytest.raises(_Interrupted):
            _train("pairs.tsv", "run", cwd=tmp_path)
    out = tmp_path / "run"
    assert (out / "backup").is_dir() and not (out / "model.keras").exists()
    vocabularies = _digests(out)

    # Other bytes under the same name: refused in one line, nothing written.
    data.write_text(
        data.read_text() + "".join(f"neu{i} wort.\tnew{i} word.\n" for i in range(40))
    )
    refused = _train("pairs.tsv", "run", cwd=tmp_path)
    assert refused.returncode == 1 and refused.stdout.count("\n") <= 3
    message = refused.stderr.strip().splitlines()
    assert len(message) == 1 and message[0].startswith(
        "keras-seq: --data pairs.tsv: its content is not the data of the "
        "interrupted run in run (SHA-256 "
    ), message
    assert "pass --overwrite to start afresh" in message[0]
    assert _digests(out) == vocabularies

    # The same bytes, the directory moved and both named from elsewhere:
    # the run resumes under the vocabularies it began with, never relearned.
    data.write_bytes(original)
    moved, elsewhere = tmp_path / "moved", tmp_path / "elsewhere"
    out.rename(moved)
    elsewhere.mkdir()
    from keras_seq import text

    def relearned(*args, **kwargs):
        raise AssertionError("a resumed run learned its vocabularies again")

    monkeypatch.setattr(text, "train_wordpiece_vocabulary", relearned)
    resumed = _train("../pairs.tsv", "../moved", cwd=elsewhere)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resuming the interrupted run in ../moved after epoch 1" in resumed.stdout
    assert "vocabularies kept from the interrupted run" in resumed.stdout
    for name in ("source_vocabulary.txt", "target_vocabulary.txt"):
        digest = hashlib.sha256((moved / name).read_bytes()).hexdigest()
        assert digest == vocabularies[name]
    run = json.loads((moved / "run.json").read_text())
    assert run["epochs"] == 2 and run["data"] == str(data)
