"""A run directory: its layout, and `RunDir`, the one object that names,
claims, writes and reads it.

    <dir>/model.keras               the model (Keras format, safe to load)
    <dir>/run.json                  family, data (its absolute path and the
                                    SHA-256 of its bytes), settings, test
                                    figures and a fingerprint of each
                                    vocabulary
    <dir>/vocabulary.txt            one vocabulary (encoder-only, decoder-only)
    <dir>/source_vocabulary.txt     or source and target vocabularies
    <dir>/target_vocabulary.txt     (translators)
    <dir>/preprocessor.json         a translator's `max_length` and buckets
    <dir>/training.json             the settings of the run in progress
    <dir>/.keras-seq.lock           held while a run uses the directory
    <dir>/history.csv               per-epoch figures (`checkpoint_callbacks`)
    <dir>/best.weights.h5           the best epoch's weights (idem)
    <dir>/backup/                   `BackupAndRestore`'s, while interrupted
    <dir>/average/                  the epochs `AverageLastEpochs` keeps
    <dir>/learning_curves.png       loss and validation BLEU
    <dir>/attention.png, metrics.json, saved_model/<version>/   the demo's

A directory holds at most one run, and one process at a time: the run in
progress holds an advisory lock on `LOCK_FILE` (`fcntl.flock`), which the
kernel drops when the process ends, however it ends, so a run killed with
SIGKILL never blocks the next (which then resumes). Before anything is
written (`claim`):

- a directory another live run holds is refused, naming that run;
- a path that is a file, or a directory that cannot be written, is refused;
- a finished run (its `run.json`, no backup) is kept unless `overwrite`;
- an interrupted run (a `backup/` left by `BackupAndRestore`) of the same
  settings is resumed; one of other settings is kept unless `overwrite`
  (data whose bytes changed since the run began are other settings, and
  said so: a resumed run keeps the vocabularies it began with, which new
  data would no longer fit).

The settings of the run in progress are written to `training.json` first,
so a later command can tell whether a backup is its own; they name the
data by content (`DATA_SHA256`), so a run resumes from any working
directory and after its directory moved. `run.json` keeps the data's
absolute path beside it, so `evaluate` finds the data from anywhere and
knows when the file changed (`data_record`); a `run.json` written before
keeps its path as typed. Loading
(`zoo.recipes.model_dir.load_model_dir`) refuses a directory whose
vocabularies are not the ones the model was trained with (the fingerprints
`RunDir.save` records).
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

from keras_seq.text import vocabulary as vocabularies_io
from zoo.recipes.fingerprints import fingerprint, items_fingerprint  # noqa: F401
from zoo.recipes.inputs import UsageError, reported_as_usage

MODEL_FILE = "model.keras"
RUN_FILE = "run.json"
SETTINGS_FILE = "training.json"
LOCK_FILE = ".keras-seq.lock"
CURVES_FILE = "learning_curves.png"
ATTENTION_FILE = "attention.png"
METRICS_FILE = "metrics.json"
EXPORT_DIR = "saved_model"
BACKUP_DIR = "backup"
AVERAGE_DIR = "average"
HISTORY_FILE = "history.csv"
BEST_WEIGHTS_FILE = "best.weights.h5"
CHECKPOINT_FILES = (HISTORY_FILE, BEST_WEIGHTS_FILE)

# The keys of `run.json` and `training.json` that name the data: a file's
# absolute path (None for data given from Python) and its bytes' SHA-256.
DATA = "data"
DATA_SHA256 = "data_sha256"


# The vocabularies and `preprocessor.json` are the files the preprocessors
# of `keras_seq.text` save (`RunDir.save_preprocessor`); their names are
# restated here so that this module loads no TensorFlow, and
# tests/zoo/recipes/test_run_dir.py holds them equal to the preprocessors'.
PREPROCESSOR_FILE = "preprocessor.json"
VOCABULARY_FILES = {
    "text": "vocabulary.txt",
    "source": "source_vocabulary.txt",
    "target": "target_vocabulary.txt",
}


def vocabulary_file(key):
    """The file of vocabulary `key`: "text" (the one vocabulary of an
    encoder- or decoder-only model), "source" or "target"."""
    return VOCABULARY_FILES[key]


# What a run writes; `overwrite` removes these and nothing else (a demo's
# exported SavedModel versions stay: the next export adds a version).
RUN_FILES = (
    MODEL_FILE, RUN_FILE, SETTINGS_FILE,
    *VOCABULARY_FILES.values(), PREPROCESSOR_FILE,
    *CHECKPOINT_FILES, METRICS_FILE, CURVES_FILE, ATTENTION_FILE,
)  # fmt: skip
RUN_DIRS = (BACKUP_DIR, AVERAGE_DIR)

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


def _read_json_object(path):
    try:
        with open(path, encoding="utf-8") as file:
            value = json.load(file)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _differences(previous, settings):
    if previous is None:
        return f"no readable {SETTINGS_FILE}"
    keys = sorted(set(previous) | set(settings))
    changed = [k for k in keys if previous.get(k) != settings.get(k)]
    return ", ".join(
        f"{k} {previous.get(k)!r} there, {settings.get(k)!r} now" for k in changed
    )


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


class RunDir:
    """A run directory: the one object that names, claims, writes and reads it.

    Every file and folder of a run is a property here (`model_path`,
    `history_path`, `backup_dir`, ...); the library's writers
    (`keras_seq.callbacks.checkpoint_callbacks`, the preprocessors' `save`,
    the plots) take the paths it gives them, and `run.json` is written
    once, by `save`. It knows files only: it imports no Keras or
    TensorFlow (loading the model is `zoo.recipes.model_dir`'s).

    Args:
        path: str or `os.PathLike`, the directory (it need not exist yet).

    Example:

    >>> run = RunDir("runs/demo")
    >>> run.model_path
    'runs/demo/model.keras'
    """

    def __init__(self, path):
        if isinstance(path, RunDir):
            path = path.path
        self.path = os.fspath(path)

    def __repr__(self):
        return f"RunDir({self.path!r})"

    def __fspath__(self):
        return self.path

    def _join(self, name):
        return os.path.join(self.path, name)

    model_path = property(lambda self: self._join(MODEL_FILE))
    run_path = property(lambda self: self._join(RUN_FILE))
    settings_path = property(lambda self: self._join(SETTINGS_FILE))
    lock_path = property(lambda self: self._join(LOCK_FILE))
    history_path = property(lambda self: self._join(HISTORY_FILE))
    best_weights_path = property(lambda self: self._join(BEST_WEIGHTS_FILE))
    backup_dir = property(lambda self: self._join(BACKUP_DIR))
    average_dir = property(lambda self: self._join(AVERAGE_DIR))
    curves_path = property(lambda self: self._join(CURVES_FILE))
    attention_path = property(lambda self: self._join(ATTENTION_FILE))
    metrics_path = property(lambda self: self._join(METRICS_FILE))
    exports_dir = property(lambda self: self._join(EXPORT_DIR))
    preprocessor_path = property(lambda self: self._join(PREPROCESSOR_FILE))

    def vocabulary_path(self, key):
        """The file of vocabulary `key` (`vocabulary_file`)."""
        return self._join(vocabulary_file(key))

    # Claiming.

    def lock(self, flag="--output-dir"):
        """Makes this process the one run using the directory, until `release`.

        The lock is `fcntl.flock`'s, which the kernel drops when the process
        ends, so a run that was killed leaves no lock behind (only a stale
        file, which the next run locks afresh). Locking again a directory
        this process holds is a no-op.

        Args:
            flag: str, the flag that named the directory.

        Raises:
            UsageError: when another live process holds the directory; the
                message names it (pid, host, start time).
        """
        directory = os.path.realpath(self.path)
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
                    f"{flag} {self.path} is in use by another run "
                    f"({_holder(path)}); wait for it to end, or choose another "
                    f"{flag}."
                ) from None
            # The previous holder removes the file before it unlocks: a lock
            # won on a removed file guards nothing, so such a lock is tried
            # again.
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

    def release(self):
        """Ends this process's hold on the directory; a no-op where it holds
        none."""
        _release(os.path.realpath(self.path))

    def claim(
        self, settings, overwrite, flag="--output-dir", data="--data", legacy=None
    ):
        """Checks the directory and makes it the home of the run `settings`
        describe.

        Args:
            settings: a JSON-serializable dict of what makes two runs the
                same run (the family, data, preset, seed, vocabulary size,
                ...; not `--epochs` or `--minutes`, which a resumed run may
                change).
            overwrite: bool, `--overwrite`: replace a finished run or another
                run's backup.
            flag: str, the flag that named the directory.
            data: str, what named the data (`"--data pairs.tsv"`), for the
                refusal of an interrupted run on other data.
            legacy: dict or None, the value of each setting for a run whose
                settings file was written before that setting existed (the
                settings file of an interrupted run lacks it).

        The directory stays locked (`lock`) until `release`, or until the
        process ends.

        Returns:
            True when an interrupted run of the same settings resumes here
            (its epochs are `keras_seq.callbacks.finished_epochs` of
            `backup_dir`), False for a fresh start.

        Raises:
            UsageError: when the directory cannot be written, is in use by
                another run, or holds a run that `overwrite` does not allow
                to replace.
        """
        check_writable(self.path, flag)
        self.lock(flag)
        try:
            return self._claim_locked(settings, overwrite, flag, data, legacy)
        except BaseException:
            self.release()
            raise

    def _claim_locked(self, settings, overwrite, flag, data, legacy):
        previous = _read_json_object(self.settings_path)
        if previous is not None and legacy:
            missing = {k: v for k, v in legacy.items() if k in settings}
            previous = {**missing, **previous}
        if os.path.isdir(self.backup_dir):
            if previous == settings:
                return True
            then, now = (previous or {}).get(DATA_SHA256), settings.get(DATA_SHA256)
            if not overwrite and then and now and then != now:
                raise UsageError(
                    f"{data}: its content is not the data of the interrupted run "
                    f"in {self.path} (SHA-256 {then[:12]}... there, {now[:12]}... "
                    "now), whose vocabularies it would not fit; resume with that "
                    "data, or pass --overwrite to start afresh."
                )
            if not overwrite:
                raise UsageError(
                    f"{flag} {self.path} holds the backup of an interrupted run "
                    f"with other settings ({_differences(previous, settings)}); "
                    f"pass --overwrite to discard it, or choose another {flag}."
                )
        elif os.path.isfile(self.run_path):
            if not overwrite:
                family = (_read_json_object(self.run_path) or {}).get("family")
                family = family if isinstance(family, str) else "model"
                raise UsageError(
                    f"{flag} {self.path} holds a finished {family} run "
                    f"({RUN_FILE}, {MODEL_FILE}); pass "
                    f"--overwrite to replace it, or choose another {flag}."
                )
        if overwrite:
            self._remove_run()
        os.makedirs(self.path, exist_ok=True)
        write_json(self.settings_path, settings)
        return False

    def _remove_run(self):
        for name in RUN_FILES:
            if os.path.isfile(self._join(name)):
                os.remove(self._join(name))
        for name in RUN_DIRS:
            shutil.rmtree(self._join(name), ignore_errors=True)

    # Writing.

    def make(self):
        """Creates the directory (and those above it) if missing."""
        os.makedirs(self.path, exist_ok=True)

    def write_vocabularies(self, vocabularies):
        """Writes each vocabulary (a list of tokens) to its file.

        Args:
            vocabularies: dict of key (`vocabulary_file`'s) -> list of str.
        """
        os.makedirs(self.path, exist_ok=True)
        for key, tokens in vocabularies.items():
            vocabularies_io.save_vocabulary(tokens, self.vocabulary_path(key))

    def save_preprocessor(self, preprocessor):
        """Writes a `keras_seq.text` preprocessor: its vocabularies and
        `preprocessor.json` (the names `VOCABULARY_FILES` and
        `PREPROCESSOR_FILE` give)."""
        os.makedirs(self.path, exist_ok=True)
        preprocessor.save(self.path)

    def resumed_vocabularies(self, keys):
        """The vocabularies of the interrupted run this directory resumes.

        A claimed directory holds a `backup/` only when it resumes a run of
        the same settings (`claim`), whose model rows belong to the tokens
        of the vocabularies it wrote before its first epoch: those are
        read back, never learned again.

        Args:
            keys: the vocabulary keys (`vocabulary_file`'s) of the family.

        Returns:
            A tuple of token lists, one per key, or None when no run is
            resumed here.
        """
        if not os.path.isdir(self.backup_dir):
            return None
        from keras_seq.text.sentencepiece_tokenizer import MODEL_FILES, with_model

        with reported_as_usage(ValueError):
            # A SentencePiece run's models come back with their vocabularies.
            return tuple(
                with_model(
                    vocabularies_io.load_vocabulary(self.vocabulary_path(k)),
                    os.path.join(self.path, MODEL_FILES.get(k, f"{k}.spm")),
                )
                for k in keys
            )

    def save(self, family, model, run, vocabularies):
        """Writes the model and `run.json`, the run's one record.

        The vocabularies are written by the recipe before training
        (`write_vocabularies`); `run.json` records their fingerprints, so
        that a vocabulary of the same size from another run is refused when
        the directory loads.

        Args:
            family: str, the family's name.
            model: the trained `keras.Model`.
            run: a JSON-serializable dict (data, settings, test figures).
            vocabularies: tuple of the family's vocabulary keys.

        Returns:
            The dict written to `run.json`.
        """
        paths = (self.vocabulary_path(key) for key in vocabularies)
        fingerprints = {
            os.path.basename(path): fingerprint(path)
            for path in paths
            if os.path.isfile(path)
        }
        model.save(self.model_path)
        run = {"family": family, **run, "vocabulary_sha256": fingerprints}
        write_json(self.run_path, run)
        return run

    def write_metrics(self, metrics):
        """Writes the demo's `metrics.json`."""
        write_json(self.metrics_path, metrics)

    def next_export_version(self):
        """The base of the exported versions, and the next version number
        (1 + the largest there)."""
        root = self.exports_dir
        existing = os.listdir(root) if os.path.isdir(root) else []
        return root, 1 + max([int(v) for v in existing if v.isdigit()], default=0)

    # Reading.

    def check_files(self):
        """Refuses a directory without `run.json` or `model.keras`.

        Raises:
            ValueError: naming the missing file.
        """
        for name in (RUN_FILE, MODEL_FILE):
            if not os.path.isfile(self._join(name)):
                raise ValueError(
                    f"{self.path} has no {name}; expected a model directory "
                    "written by `keras-seq train` or `keras-seq demo`."
                )

    def read_run(self, families):
        """The contents of `run.json`.

        Args:
            families: the family names a `run.json` may hold (the
                table's keys; passed in, since the table is above this
                module).

        Raises:
            ValueError: when it is not a JSON object naming one of
                `families`.
        """
        run_path = self.run_path
        try:
            with open(run_path, encoding="utf-8") as file:
                run = json.load(file)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ValueError(f"{run_path} is not a JSON file: {error}") from None
        if not isinstance(run, dict):
            raise ValueError(
                f"{run_path} must hold a JSON object with a `family`; received "
                f"a {type(run).__name__}."
            )
        if run.get("family") not in families:
            raise ValueError(
                f"{run_path}: `family` must be one of {tuple(families)}; "
                f"received {run.get('family')!r}."
            )
        return run


def _release(directory):
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
        _release(directory)


def write_json(path, value):
    """Writes `value` as indented UTF-8 JSON (`run.json`, `metrics.json`,
    `training.json`)."""
    with open(path, "w", encoding="utf-8") as file:
        json.dump(value, file, indent=2, ensure_ascii=False)
