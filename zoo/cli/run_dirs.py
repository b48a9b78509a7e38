"""What `train` and `demo` may do with the `--output-dir` they are given.

A directory holds at most one run, and one process at a time: the run in
progress holds an advisory lock on `LOCK_FILE` (`fcntl.flock`), which the
kernel drops when the process ends, however it ends, so a run killed with
SIGKILL never blocks the next (which then resumes). Before anything is
written:

- a directory another live run holds is refused, naming that run;

- a path that is a file, or a directory that cannot be written, is refused;
- a finished run (its `run.json`, no backup) is kept unless `--overwrite`;
- an interrupted run (a `backup/` left by `BackupAndRestore`) of the same
  settings is resumed; one of other settings is kept unless `--overwrite`.

The settings of the run in progress are written to `training.json` first,
so a later command can tell whether a backup is its own.
"""

import atexit
import contextlib
import datetime
import fcntl
import json
import os
import shutil
import socket
import tempfile
import time

from keras_seq.callbacks import finished_epochs
from zoo.cli.errors import UsageError
from zoo.recipes import model_dir

SETTINGS_FILE = "training.json"
LOCK_FILE = ".keras-seq.lock"
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

# The directories this process holds: real path -> the locked file's descriptor.
_HELD = {}


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


def _holder(path):
    """The run holding the lock file `path`, in words, as it wrote them."""
    for _ in range(40):
        try:
            with open(path, encoding="utf-8") as file:
                holder = json.load(file)
            return (
                f"pid {holder['pid']} on {holder['host']}, started {holder['started']}"
            )
        except (OSError, ValueError, KeyError, TypeError):
            # Locked, not yet written: the holder writes right after locking.
            time.sleep(0.05)
    return "a process that did not say which"


def lock(output_dir, flag="--output-dir"):
    """Makes this process the one run using `output_dir`, until `release`.

    The lock is `fcntl.flock`'s, which the kernel drops when the process
    ends, so a run that was killed leaves no lock behind (only a stale
    file, which the next run locks afresh). Locking again a directory
    this process holds is a no-op.

    Args:
        output_dir: str, the directory (created if missing).
        flag: str, the flag that named it.

    Raises:
        UsageError: when another live process holds the directory; the
            message names it (pid, host, start time).
    """
    directory = os.path.realpath(output_dir)
    if directory in _HELD:
        return
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, LOCK_FILE)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UsageError(
                f"{flag} {output_dir} is in use by another run "
                f"({_holder(path)}); wait for it to end, or choose another "
                f"{flag}."
            ) from None
        # The previous holder removes the file before it unlocks: a lock won
        # on a removed file guards nothing, so such a lock is tried again.
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    started = datetime.datetime.now(datetime.timezone.utc)
    holder = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": started.strftime("%Y-%m-%d %H:%M:%S UTC"),
    }
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps(holder).encode())
    _HELD[directory] = fd


def release(output_dir):
    """Ends this process's hold on `output_dir`; a no-op where it holds none."""
    directory = os.path.realpath(output_dir)
    fd = _HELD.pop(directory, None)
    if fd is None:
        return
    # Removed while still locked, so no other process can lock it after.
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(directory, LOCK_FILE))
    os.close(fd)


@atexit.register
def _release_all():
    for directory in list(_HELD):
        release(directory)


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

    The directory stays locked (`lock`) until `release`, or until the
    process ends.

    Returns:
        The number of epochs an interrupted run of the same settings
        finished (training resumes after them), or 0 for a fresh start.

    Raises:
        UsageError: when the directory cannot be written, is in use by
            another run, or holds a run that `overwrite` does not allow to
            replace.
    """
    check_writable(output_dir, flag)
    lock(output_dir, flag)
    try:
        return _claim_locked(output_dir, settings, overwrite, flag)
    except BaseException:
        release(output_dir)
        raise


def _claim_locked(output_dir, settings, overwrite, flag):
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
