"""What `train` and `demo` may do with the `--output-dir` they are given.

A directory holds at most one run. Before anything is written:

- a path that is a file, or a directory that cannot be written, is refused;
- a finished run (its `run.json`, no backup) is kept unless `--overwrite`;
- an interrupted run (a `backup/` left by `BackupAndRestore`) of the same
  settings is resumed; one of other settings is kept unless `--overwrite`.

The settings of the run in progress are written to `training.json` first,
so a later command can tell whether a backup is its own.
"""

import json
import os
import shutil
import tempfile

from keras_seq.callbacks import finished_epochs
from zoo.cli.errors import UsageError
from zoo.recipes import model_dir

SETTINGS_FILE = "training.json"
BACKUP_DIR = "backup"
# What a run writes; `--overwrite` removes these and nothing else (a demo's
# exported SavedModel versions stay: the next export adds a version).
RUN_FILES = (
    model_dir.MODEL_FILE,
    model_dir.RUN_FILE,
    SETTINGS_FILE,
    "vocabulary.txt",
    "source_vocabulary.txt",
    "target_vocabulary.txt",
    "history.csv",
    "best.weights.h5",
    "metrics.json",
    "learning_curves.png",
    "attention.png",
)
RUN_DIRS = (BACKUP_DIR, "average")


def check_writable(path, flag):
    """Refuses a path that cannot become a writable directory.

    Writing is tried (a temporary directory, removed at once) rather than
    read off the permission bits, which say nothing for root or for a
    read-only file system.

    Args:
        path: str, the directory (it may not exist yet).
        flag: str, the flag that named it, e.g. `"--output-dir"`.

    Raises:
        UsageError: when `path` is a file, or it (or the nearest existing
            directory above it) cannot be written.
    """
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{flag} {path} is a file; expected a directory.")
    existing = os.path.abspath(path)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UsageError(f"{flag} {path}: {existing} is a file; expected a directory.")
    try:
        os.rmdir(tempfile.mkdtemp(dir=existing))
    except OSError as error:
        raise UsageError(
            f"{flag} {path}: {existing} is not writable ({error.strerror})."
        ) from None


def _read_settings(output_dir):
    try:
        with open(os.path.join(output_dir, SETTINGS_FILE), encoding="utf-8") as file:
            settings = json.load(file)
    except (OSError, ValueError):
        return None
    return settings if isinstance(settings, dict) else None


def _finished_family(output_dir):
    try:
        with open(
            os.path.join(output_dir, model_dir.RUN_FILE), encoding="utf-8"
        ) as file:
            family = json.load(file).get("family")
    except (OSError, ValueError, AttributeError):
        family = None
    return family if isinstance(family, str) else "model"


def _differences(previous, settings):
    if previous is None:
        return f"no readable {SETTINGS_FILE}"
    keys = sorted(set(previous) | set(settings))
    changed = [k for k in keys if previous.get(k) != settings.get(k)]
    return ", ".join(
        f"{k} {previous.get(k)!r} there, {settings.get(k)!r} now" for k in changed
    )


def _remove_run(output_dir):
    for name in RUN_FILES:
        path = os.path.join(output_dir, name)
        if os.path.isfile(path):
            os.remove(path)
    for name in RUN_DIRS:
        shutil.rmtree(os.path.join(output_dir, name), ignore_errors=True)


def claim(output_dir, settings, overwrite, flag="--output-dir"):
    """Checks `output_dir` and makes it the home of the run `settings` describe.

    Args:
        output_dir: str, the directory.
        settings: a JSON-serializable dict of what makes two runs the same
            run (the family, data, preset, seed, vocabulary size, ...; not
            `--epochs` or `--minutes`, which a resumed run may change).
        overwrite: bool, `--overwrite`: replace a finished run or another
            run's backup.
        flag: str, the flag that named `output_dir`.

    Returns:
        The number of epochs an interrupted run of the same settings
        finished (training resumes after them), or 0 for a fresh start.

    Raises:
        UsageError: when the directory cannot be written, or holds a run
            that `overwrite` does not allow to replace.
    """
    check_writable(output_dir, flag)
    backup = os.path.join(output_dir, BACKUP_DIR)
    previous = _read_settings(output_dir)
    if os.path.isdir(backup):
        if previous == settings:
            return finished_epochs(backup)
        if not overwrite:
            raise UsageError(
                f"{flag} {output_dir} holds the backup of an interrupted run "
                f"with other settings ({_differences(previous, settings)}); "
                f"pass --overwrite to discard it, or choose another {flag}."
            )
    elif os.path.isfile(os.path.join(output_dir, model_dir.RUN_FILE)):
        if not overwrite:
            family = _finished_family(output_dir)
            raise UsageError(
                f"{flag} {output_dir} holds a finished {family} run "
                f"({model_dir.RUN_FILE}, {model_dir.MODEL_FILE}); pass "
                f"--overwrite to replace it, or choose another {flag}."
            )
    if overwrite:
        _remove_run(output_dir)
    os.makedirs(output_dir, exist_ok=True)
    with open(os.path.join(output_dir, SETTINGS_FILE), "w", encoding="utf-8") as file:
        json.dump(settings, file, indent=2, ensure_ascii=False)
    return 0
