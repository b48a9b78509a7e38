"""`zoo.recipes.run_dir`: what `train` and `demo` may do with an output directory."""

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys

import h5py
import pytest

from keras_seq.callbacks import finished_epochs
from zoo.recipes import run_dir
from zoo.recipes.inputs import UsageError

SETTINGS = {"command": "train", "family": "translator", "seed": 0}


@pytest.fixture(autouse=True)
def _release_claims():
    """Each test's claims end with it, as the process of a run would end."""
    yield
    for directory in list(run_dir._HELD):
        run_dir.RunDir(directory).release()


def _finished_run(root):
    root.mkdir(parents=True, exist_ok=True)
    for name in ("model.keras", "source_vocabulary.txt", "history.csv"):
        (root / name).write_text(name)
    (root / "run.json").write_text(json.dumps({"family": "translator"}))
    (root / "notes.txt").write_text("the user's own file")
    return root


def _interrupted_run(root, settings, epochs):
    (root / "backup").mkdir(parents=True)
    # BackupAndRestore writes the weights, then the metadata naming their epoch.
    h5py.File(root / "backup" / "latest.weights.h5", "w").close()
    (root / "backup" / "training_metadata.json").write_text(
        json.dumps({"epoch": epochs, "batch": -1})
    )
    (root / run_dir.SETTINGS_FILE).write_text(json.dumps(settings))
    return root


def _contents(root):
    return {
        str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()
    }


def test_a_fresh_directory_is_created_and_claimed(tmp_path):
    out = tmp_path / "a" / "b"
    assert run_dir.RunDir(str(out)).claim(SETTINGS, overwrite=False) is False
    assert json.loads((out / run_dir.SETTINGS_FILE).read_text()) == SETTINGS


def test_a_finished_run_is_kept_without_overwrite(tmp_path):
    out = _finished_run(tmp_path / "run")
    before = _contents(out)
    with pytest.raises(UsageError) as error:
        run_dir.RunDir(str(out)).claim(SETTINGS, overwrite=False)
    assert str(error.value) == (
        f"--output-dir {out} holds a finished translator run (run.json, "
        "model.keras); pass --overwrite to replace it, or choose another "
        "--output-dir."
    )
    assert _contents(out) == before


def test_overwrite_removes_the_run_and_nothing_else(tmp_path):
    out = _finished_run(tmp_path / "run")
    assert run_dir.RunDir(str(out)).claim(SETTINGS, overwrite=True) is False
    assert sorted(os.listdir(out)) == [
        run_dir.LOCK_FILE,  # Until the run ends.
        "notes.txt",
        run_dir.SETTINGS_FILE,
    ]


def test_an_interrupted_run_of_the_same_settings_resumes(tmp_path):
    out = _interrupted_run(tmp_path / "run", SETTINGS, epochs=3)
    for overwrite in (False, True):
        assert run_dir.RunDir(str(out)).claim(SETTINGS, overwrite=overwrite) is True
        assert finished_epochs(out / "backup") == 3
    assert (out / "backup" / "training_metadata.json").is_file()


def test_another_runs_backup_is_refused_in_one_line_naming_the_difference(tmp_path):
    out = _interrupted_run(tmp_path / "run", {**SETTINGS, "seed": 1}, epochs=2)
    with pytest.raises(UsageError) as error:
        run_dir.RunDir(str(out)).claim(SETTINGS, overwrite=False)
    message = str(error.value)
    assert "\n" not in message
    assert message == (
        f"--output-dir {out} holds the backup of an interrupted run with "
        "other settings (seed 1 there, 0 now); pass --overwrite to discard "
        "it, or choose another --output-dir."
    )
    assert run_dir.RunDir(str(out)).claim(SETTINGS, overwrite=True) is False
    assert not (out / "backup").exists()


def test_a_backup_without_settings_is_another_runs(tmp_path):
    out = _interrupted_run(tmp_path / "run", SETTINGS, epochs=2)
    (out / run_dir.SETTINGS_FILE).unlink()
    with pytest.raises(UsageError, match=r"other settings \(no readable training"):
        run_dir.RunDir(str(out)).claim(SETTINGS, overwrite=False)


def test_a_file_or_an_unwritable_place_is_refused(tmp_path):
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(UsageError, match=r"^--export-dir .*file is a file; expected"):
        run_dir.check_writable(str(file), "--export-dir")
    with pytest.raises(UsageError, match=r"file is a file; expected a directory"):
        run_dir.check_writable(str(file / "below"), "--output-dir")
    # /proc/sys takes no new entries, whoever asks (root included).
    with pytest.raises(UsageError, match=r"^--output-dir /proc/sys/x: /proc/sys is"):
        run_dir.check_writable("/proc/sys/x", "--output-dir")


# One run per directory: a lock the kernel holds for the process.

_HOLD = """
import fcntl, json, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, json.dumps({"pid": os.getpid(), "host": "elsewhere",
                         "started": "2026-01-02 03:04:05 UTC"}).encode())
print("locked", flush=True)
time.sleep(600)
"""


@pytest.fixture
def holder(tmp_path):
    """A process that holds `tmp_path/run`'s lock file, as a run would."""
    out = tmp_path / "run"
    out.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(out / run_dir.LOCK_FILE)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline() == "locked\n"
    yield out, process
    process.kill()
    process.wait()


def test_a_directory_in_use_is_refused_naming_the_other_run(holder):
    out, process = holder
    before = _contents(out)
    with pytest.raises(UsageError) as error:
        run_dir.RunDir(str(out)).claim(SETTINGS, overwrite=True)
    assert str(error.value) == (
        f"--output-dir {out} is in use by another run (pid {process.pid} on "
        "elsewhere, started 2026-01-02 03:04:05 UTC); wait for it to end, or "
        "choose another --output-dir."
    )
    assert _contents(out) == before  # Not even training.json.


def test_the_lock_of_a_killed_run_does_not_block_the_next(holder):
    out, process = holder
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert (out / run_dir.LOCK_FILE).is_file()  # Stale, but no one holds it.
    assert run_dir.RunDir(str(out)).claim(SETTINGS, overwrite=False) is False
    holder = json.loads((out / run_dir.LOCK_FILE).read_text())
    assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
    run_dir.RunDir(str(out)).release()
    assert not (out / run_dir.LOCK_FILE).exists()


def test_the_holder_may_claim_again_and_a_refusal_releases(tmp_path):
    out = _finished_run(tmp_path / "run")
    with pytest.raises(UsageError, match="holds a finished translator run"):
        run_dir.RunDir(str(out)).claim(SETTINGS, overwrite=False)
    assert not (out / run_dir.LOCK_FILE).exists()  # Refused: released.
    assert run_dir.RunDir(str(out)).claim(SETTINGS, overwrite=True) is False
    assert run_dir.RunDir(str(out)).claim(SETTINGS, overwrite=False) is False  # Ours.
    run_dir.RunDir(str(out)).release()
    run_dir.RunDir(str(out)).release()  # Releasing twice is harmless.


def test_only_the_run_directory_names_its_files():
    """No other module of the application spells a run file's name: they
    take `RunDir`'s paths."""
    # (`EXPORT_DIR`, "saved_model", is also the name of an export format.)
    names = (*run_dir.RUN_FILES, *run_dir.RUN_DIRS, run_dir.LOCK_FILE)
    root = pathlib.Path(__file__).resolve().parents[3] / "zoo"
    spelled = [
        f"{path.relative_to(root)}:{number}"
        for path in sorted(root.rglob("*.py"))
        if path.name != "run_dir.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        for name in names
        if f'"{name}"' in line
    ]
    assert spelled == []


def test_a_run_directory_names_every_path_in_it(tmp_path):
    run = run_dir.RunDir(tmp_path / "run")
    assert run_dir.RunDir(run).path == run.path == str(tmp_path / "run")
    paths = {
        run.model_path: run_dir.MODEL_FILE, run.run_path: run_dir.RUN_FILE,
        run.settings_path: run_dir.SETTINGS_FILE, run.lock_path: run_dir.LOCK_FILE,
        run.history_path: "history.csv", run.best_weights_path: "best.weights.h5",
        run.backup_dir: "backup", run.average_dir: "average",
        run.curves_path: run_dir.CURVES_FILE, run.metrics_path: "metrics.json",
        run.attention_path: "attention.png", run.exports_dir: "saved_model",
        run.preprocessor_path: "preprocessor.json",
        run.vocabulary_path("text"): "vocabulary.txt",
        run.vocabulary_path("source"): "source_vocabulary.txt",
    }  # fmt: skip
    for path, name in paths.items():
        assert path == os.path.join(run.path, name)


def test_a_run_interrupted_before_a_setting_existed_resumes_as_it_was(tmp_path):
    # Its settings file lacks `lowercase` (its text was lowercased then) and
    # `bleu_every` (scored every epoch, the default): it resumes when asked
    # for what it was, and is refused in one line naming the setting otherwise.
    from zoo.recipes.settings import TranslatorSettings

    now = {"family": "translator", "data": "trans-de-en", "data_sha256": None}
    lowercased = {**now, **TranslatorSettings(lowercase=True).identity()}
    old = {k: v for k, v in lowercased.items() if k not in ("lowercase", "bleu_every")}
    old.pop("data_sha256")
    out = _interrupted_run(tmp_path / "run", old, epochs=4)
    legacy = {"data_sha256": None, **TranslatorSettings().legacy_identity()}
    claim = run_dir.RunDir(str(out)).claim
    assert claim(lowercased, overwrite=False, legacy=legacy) is True
    assert finished_epochs(out / "backup") == 4
    run_dir.RunDir(str(out)).release()
    cased = {**lowercased, "lowercase": False}
    with pytest.raises(UsageError, match=r"\(lowercase True there, False now\)"):
        claim(cased, overwrite=False, legacy=legacy)
    # Without what the settings were then, nothing matches.
    with pytest.raises(UsageError, match="bleu_every None there, 1 now"):
        claim(lowercased, overwrite=False)


def test_the_vocabulary_files_are_the_preprocessors():
    from keras_seq.text import preprocessor, translation_preprocessor

    assert run_dir.PREPROCESSOR_FILE == preprocessor.SETTINGS_FILE
    assert run_dir.VOCABULARY_FILES == {
        "text": preprocessor.VOCABULARY_FILE,
        "source": translation_preprocessor.SOURCE_VOCABULARY_FILE,
        "target": translation_preprocessor.TARGET_VOCABULARY_FILE,
    }


def test_the_run_directory_and_corpora_load_no_keras():
    """Hashing a data file or reading a run's files starts no Keras."""
    code = (
        "import sys, zoo.recipes.run_dir, zoo.recipes.corpora; "
        "print(sorted({'keras', 'tensorflow'} & set(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
