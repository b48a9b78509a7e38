"""`train translator --init-from RUN` and `zoo.train(..., init_from=RUN)`:
a run that starts from a finished run's model and preprocessor.

A tiny translator is trained once (the start); fine-tuning it on other
pairs lowers the loss of those pairs' validation split from the start's,
keeps its vocabulary files byte for byte, and records where it started.
An interrupted fine-tuning resumes to the epochs of an uninterrupted one.
"""

import csv
import hashlib
import json

import numpy as np
import pytest

import zoo
from tests.zoo.conftest import ENGLISH, run_cli, write_pairs

GERMAN = ["ich", "du", "er", "sie", "wir"]
KEPT_FILES = ("source_vocabulary.txt", "target_vocabulary.txt", "preprocessor.json")


def _write_new_pairs(path):
    """300 pairs of the start's words in other orders and with other
    numbers: what the start has not learned, in its vocabulary."""
    rows = [
        f"{GERMAN[(i + k) % 5].capitalize()} sehe {GERMAN[k]} {i}{k}{i}.\t"
        f"{ENGLISH[(i + k) % 5].capitalize()} see {ENGLISH[k]}."
        for i in range(60)
        for k in range(5)
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def start(tmp_path_factory):
    """A finished tiny translator run (1 epoch, no dropout, so that a
    resumed and an uninterrupted fine-tuning compute the same epochs)."""
    root = tmp_path_factory.mktemp("start")
    data = write_pairs(root / "pairs.tsv")
    out = root / "start"
    result = run_cli(
        "train", "translator", "--data", data, "--preset", "tiny", "--epochs", 1,
        "--beam-width", 1, "--set", "dropout=0", "--output-dir", out,
        in_process=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return out


@pytest.fixture(scope="module")
def new_pairs(tmp_path_factory):
    return _write_new_pairs(tmp_path_factory.mktemp("new") / "new.tsv")


def _fine_tune(start, data, out, *more):
    return run_cli(
        "train", "translator", "--init-from", start, "--data", data,
        "--epochs", 2, "--beam-width", 1, "--deterministic", "--output-dir", out,
        *more, in_process=True,
    )  # fmt: skip


def _validation_loss(model_dir, data):
    """The masked cross-entropy of a run's model on the validation split
    of `data` (as `train` splits it)."""
    from zoo.recipes import corpora
    from zoo.recipes.recipe import masked_loss

    trained = zoo.load_model_dir(model_dir)
    corpus = corpora.translation_corpus(str(data), False, False, None, 0)
    dataset = trained.preprocessor.dataset(corpus.validation, batch_tokens=4096)
    return masked_loss(trained.model, dataset)


@pytest.fixture(scope="module")
def fine_tuned(start, new_pairs, tmp_path_factory):
    out = tmp_path_factory.mktemp("fine") / "fine"
    result = _fine_tune(start, new_pairs, out)
    assert result.returncode == 0, result.stderr[-2000:]
    return out, result


def test_fine_tuning_lowers_the_validation_loss_and_keeps_the_vocabulary(
    start, new_pairs, fine_tuned
):
    out, result = fine_tuned
    assert f"vocabularies and tokenizers kept from {start}" in result.stdout
    assert "training the WordPiece" not in result.stdout
    for name in KEPT_FILES:
        assert (out / name).read_bytes() == (start / name).read_bytes(), name
    before = _validation_loss(start, new_pairs)
    after = _validation_loss(out, new_pairs)
    assert after < before - 0.01, (before, after)
    # The same model, other weights.
    started, tuned = zoo.load_model_dir(start), zoo.load_model_dir(out)
    assert started.model.get_config() == tuned.model.get_config()
    assert not all(
        np.array_equal(a, b)
        for a, b in zip(started.model.get_weights(), tuned.model.get_weights())
    )


def test_the_run_records_where_it_started(start, fine_tuned):
    out, _ = fine_tuned
    record = {
        "path": str(start.absolute()),
        "model_sha256": _sha256(start / "model.keras"),
    }
    run = json.loads((out / "run.json").read_text())
    assert run["init_from"] == record and run["preset"] == "tiny"
    assert run["epochs"] == 2
    assert json.loads((out / "training.json").read_text())["init_from"] == record


class _Interrupted(Exception):
    pass


def _history(out):
    with open(out / "history.csv", encoding="utf-8") as file:
        return list(csv.DictReader(file))


def test_an_interrupted_fine_tuning_resumes_from_its_backup(
    start, new_pairs, fine_tuned, tmp_path, monkeypatch
):
    from keras_seq import callbacks
    from keras_seq.callbacks import ShuffleEpoch

    class Interrupting(ShuffleEpoch):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch >= 1:  # Epoch 0 is backed up by now.
                raise _Interrupted
            super().on_epoch_begin(epoch, logs)

    out = tmp_path / "resumed"
    with monkeypatch.context() as patch:
        patch.setattr(callbacks, "ShuffleEpoch", Interrupting)
        with pytest.raises(_Interrupted):
            _fine_tune(start, new_pairs, out)
    assert (out / "backup").is_dir() and not (out / "model.keras").exists()
    resumed = _fine_tune(start, new_pairs, out)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resuming the interrupted run in {out} after epoch 1" in resumed.stdout
    # Epoch 1 went on from the backed-up weights, not from the start's: it
    # scores as the uninterrupted run's epoch 1.
    straight = _history(fine_tuned[0])
    again = _history(out)
    assert [row["epoch"] for row in again] == ["0", "1"]
    for a, b in zip(straight, again):
        np.testing.assert_allclose(float(a["val_loss"]), float(b["val_loss"]), 1e-4)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--preset", "small"], "--preset contradicts --init-from"),
        (["--vocabulary-size", "500"], "--vocabulary-size contradicts --init-from"),
        (["--set", "dropout=0.2"], "--set contradicts --init-from"),
        (["--recipe", "low-resource"], "--recipe contradicts --init-from"),
        (["--no-lowercase"], "--lowercase contradicts --init-from"),
    ],
)
def test_a_flag_that_contradicts_the_kept_model_is_refused(
    start, new_pairs, tmp_path, flags, message
):
    out = tmp_path / "out"
    result = _fine_tune(start, new_pairs, out, *flags)
    assert result.returncode == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"keras-seq: {message}: a run started from another ")
    assert not out.exists()


def test_a_run_that_cannot_be_started_from_is_refused(start, new_pairs, tmp_path):
    interrupted = tmp_path / "interrupted"
    (interrupted / "backup").mkdir(parents=True)
    classifier = tmp_path / "classifier"
    classifier.mkdir()
    (classifier / "run.json").write_text('{"family": "classifier"}')
    (classifier / "model.keras").write_bytes(b"")
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = {
        tmp_path / "missing": "is not a directory; expected a finished translator",
        empty: "has no run.json; expected a finished translator run",
        interrupted: "holds an interrupted run (its backup/); finish it first",
        classifier: "holds a classifier run; `train translator` starts from a "
        "translator run.",
    }
    out = tmp_path / "out"
    for run, message in cases.items():
        result = _fine_tune(run, new_pairs, out)
        assert result.returncode == 1, result.stdout
        assert result.stderr.startswith(f"keras-seq: --init-from {run} {message}")
        assert result.stderr.count("\n") == 1 and not out.exists()
    result = _fine_tune(start, new_pairs, start)
    assert result.stderr == (
        f"keras-seq: --init-from {start} is the --output-dir; fine-tune into "
        "another directory.\n"
    )


def test_zoo_train_starts_from_a_run_and_refuses_in_the_same_words(start, tmp_path):
    with pytest.raises(ValueError, match=r"^`preset` contradicts `init_from`: "):
        zoo.train("translator", [("a", "b")], tmp_path / "x", preset="tiny",
                  init_from=start)  # fmt: skip
    with pytest.raises(ValueError, match="`init_from` applies to translators"):
        zoo.train("classifier", [("a", 0)], tmp_path / "x", init_from=start)
    with pytest.raises(ValueError, match=r"`init_from` .* is not a directory"):
        zoo.train("translator", [("a", "b")], tmp_path / "x",
                  init_from=tmp_path / "none")  # fmt: skip
    pairs = [line.split("\t") for line in _write_new_pairs(
        tmp_path / "p.tsv").read_text().splitlines()]  # fmt: skip
    trained = zoo.train(
        "translator", pairs, tmp_path / "api", epochs=1, beam_width=1,
        init_from=start,
    )  # fmt: skip
    assert trained.run["init_from"]["path"] == str(start.absolute())
    for name in KEPT_FILES:
        assert (tmp_path / "api" / name).read_bytes() == (start / name).read_bytes()
