"""Runs that begin from weights made elsewhere: `--init-from RUN` and
`import_transformers`.

`train translator --init-from RUN` fine-tunes a finished translator run
(trained by the zoo, or imported): the new run keeps RUN's model (its
weights and builder config) and its preprocessor (tokenizers,
vocabularies, `max_length`, buckets), learns no vocabulary, and compiles
and fits as every translator run does (`Recipe.fit_model`, through
`StartedFrom`'s hooks, which `workflow.train` mixes into the family's
recipe: this module is above the family table, as it loads run
directories, so no recipe imports it). What RUN is, its absolute path and the SHA-256 of
its model file (`starting_point`), is a setting of the run
(`TranslatorSettings.init_from`): `training.json` keeps it, so an
interrupted fine-tuning resumes only from the same start, and `run.json`
records it. A resumed run's weights are those of its backup, which Keras'
`BackupAndRestore` restores over the start's when training begins.

`import_transformers` writes a Marian checkpoint (the directory
`save_pretrained` writes) as a finished translator run, through the same
`RunDir` every run is written by, so that every command takes it.

Keras and TensorFlow are imported inside the functions that use them.
"""

import importlib
import os

from zoo.recipes import run_dir
from zoo.recipes.fingerprints import fingerprint
from zoo.recipes.inputs import UsageError, reported_as_usage

INIT_FLAG = "--init-from"

# The settings a started run takes from the run it starts from, and the
# flag of each: giving one contradicts the kept model (`refuse_kept`).
KEPT_FLAGS = {
    "preset": "--preset",
    "vocabulary_size": "--vocabulary-size",
    "min_frequency": "--min-frequency",
    "overrides": "--set",
    "lowercase": "--lowercase",
    "recipe": "--recipe",
    "tokenizer": "--tokenizer",
    "sentencepiece_model": "--sentencepiece-model",
}

# The extra that brings what reading a Marian checkpoint needs.
EXTRA = "keras-seq[pretrained]"
# The weights files of a checkpoint, in the order they are looked for.
WEIGHTS_FILES = ("model.safetensors", "pytorch_model.bin")


def refuse_kept(given, names=None):
    """Refuses settings that contradict the model a started run keeps.

    Args:
        given: dict of setting -> the value given (None, or an empty dict
            of overrides: not given).
        names: dict of setting -> how to name it (`KEPT_FLAGS` for the
            command line); None names each as the argument (`` `preset` ``).

    Raises:
        UsageError: naming the first setting given.
    """
    for name, value in given.items():
        if value is None or (isinstance(value, (list, dict)) and not value):
            continue
        label = (names or {}).get(name, f"`{name}`")
        start = INIT_FLAG if names else "`init_from`"
        raise UsageError(
            f"{label} contradicts {start}: a run started from another keeps "
            "that run's model (preset, builder config), vocabularies and "
            f"tokenizer; leave {label} out."
        )


def starting_point(path, family, output_dir, flag=INIT_FLAG):
    """Checks that `path` is a finished run of `family` to start from.

    Args:
        path: str or `os.PathLike`, what `--init-from` names.
        family: str, the family being trained.
        output_dir: str, the new run's directory (which must be another).
        flag: str, what named `path`, for the messages.

    Returns:
        `(record, run)`: the record `TranslatorSettings.init_from` keeps
        (`{"path": absolute path, "model_sha256": SHA-256 of its model
        file}`) and the start's `run.json`.

    Raises:
        UsageError: for a path that is not a directory, is the output
            directory, holds an interrupted or no run, or a run of
            another family.
    """
    from zoo.recipes.families import FAMILIES

    path = os.fspath(path)
    start = run_dir.RunDir(path)
    expected = f"expected a finished {family} run (`keras-seq train` or `import`)"
    if not os.path.isdir(path):
        raise UsageError(f"{flag} {path} is not a directory; {expected}.")
    if os.path.realpath(path) == os.path.realpath(output_dir):
        raise UsageError(
            f"{flag} {path} is the --output-dir; fine-tune into another directory."
        )
    if os.path.isdir(start.backup_dir):
        raise UsageError(
            f"{flag} {path} holds an interrupted run (its {run_dir.BACKUP_DIR}/); "
            f"finish it first, or start from another; {expected}."
        )
    for name, file in ((run_dir.RUN_FILE, start.run_path),
                       (run_dir.MODEL_FILE, start.model_path)):  # fmt: skip
        if not os.path.isfile(file):
            raise UsageError(f"{flag} {path} has no {name}; {expected}.")
    with reported_as_usage(ValueError):
        try:
            run = start.read_run(FAMILIES)
        except ValueError as error:
            raise ValueError(f"{flag} {error}") from None
    if run["family"] != family:
        raise UsageError(
            f"{flag} {path} holds a {run['family']} run; `train {family}` starts "
            f"from a {family} run."
        )
    record = {
        "path": os.path.abspath(path),
        "model_sha256": fingerprint(start.model_path),
    }
    return record, run


_STARTED = {}


def started_from(recipe, init_from):
    """`recipe` with `StartedFrom`'s hooks, starting from the run
    `init_from` records (`starting_point`)."""
    kind = type(recipe)
    if kind not in _STARTED:
        _STARTED[kind] = type(f"Started{kind.__name__}", (StartedFrom, kind), {})
    started = _STARTED[kind]()
    started.init_from = init_from
    return started


class StartedFrom:
    """The hooks of a recipe whose run starts from a finished run: its
    vocabularies, tokenizers, model and preprocessor are the start's.

    Mixed in before the family's recipe class (`started_from`); the start
    is loaded once, inside the strategy's scope, so its variables are the
    strategy's.
    """

    init_from = None
    start = None
    runtime = None

    def fit_model(self, corpus, run, settings, runtime=None):
        from zoo.recipes.recipe import Execution

        self.runtime = runtime or Execution()
        return super().fit_model(corpus, run, settings, self.runtime)

    def run_vocabularies(self, corpus, run, settings, verbose):
        from zoo.recipes import model_dir
        from zoo.recipes import runtime as runtimes

        # Loaded after the skeleton seeds the run: TensorFlow's seeding
        # resets the names of the resources made after it, and a
        # tokenizer's made before would share its name with a later one.
        path = self.init_from["path"]
        with reported_as_usage(ValueError), runtimes.scope(self.runtime.strategy):
            try:
                self.start = model_dir.load_model_dir(path)
            except ValueError as error:
                raise ValueError(f"{INIT_FLAG} {error}") from None
        preprocessor = self.start.preprocessor
        tokenizers = (preprocessor.source_tokenizer, preprocessor.target_tokenizer)
        if verbose:
            config = self.start.model.get_config()
            print(
                f"vocabularies and tokenizers kept from {path}: source "
                f"{config['source_vocabulary_size']:,}, target "
                f"{config['target_vocabulary_size']:,} tokens",
                flush=True,
            )
        return tokenizers

    def tokenizers(self, vocabularies, settings):
        return vocabularies

    def build_model(self, vocabularies, corpus, settings):
        return self.start.model

    def make_preprocessor(self, model, tokenizers, corpus, settings):
        return self.start.preprocessor


# Importing a Marian checkpoint.


def require_extras(directory):
    """Refuses, in one line naming the extra, a process that lacks a
    module reading the checkpoint `directory` needs: sentencepiece always,
    safetensors for a `model.safetensors`.

    Raises:
        UsageError: naming the module and `EXTRA`.
    """
    needed = ["sentencepiece"]
    if os.path.isfile(os.path.join(directory, WEIGHTS_FILES[0])):
        needed.append("safetensors")
    for module in needed:
        try:
            importlib.import_module(module)
        except ImportError:
            raise UsageError(
                f"importing {directory} needs {module}, which is not installed; "
                f"pip install '{EXTRA}'."
            ) from None


def source_record(directory):
    """What `run.json` keeps of an imported checkpoint: its absolute path
    and the SHA-256 of its `config.json` and of its weights file."""
    record = {
        "path": os.path.abspath(directory),
        "config_sha256": fingerprint(os.path.join(directory, "config.json")),
    }
    for name in WEIGHTS_FILES:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            record["weights"] = name
            record["weights_sha256"] = fingerprint(path)
            break
    return record


def import_transformers(directory, output_dir, overwrite=False, flag="--output-dir"):
    """Writes a Marian (OPUS-MT) checkpoint as a finished translator run.

    The checkpoint is read and checked (`zoo.pretrained.marian.load_marian`:
    a wrong `model_type`, missing or truncated weights, or a config field
    the zoo's layers cannot mirror are refused in one line) before
    `output_dir` is created or claimed. The run directory holds the model,
    the SentencePiece preprocessor (`zoo.pretrained.tokenizer`) and
    `run.json` (family "translator", the checkpoint's `source_record`), so
    `translate`, `evaluate`, `export` (SavedModel and CTranslate2), `serve`
    and `train translator --init-from` take it.

    Args:
        directory: str or `os.PathLike`, what `save_pretrained` wrote
            (`config.json`, `model.safetensors` or `pytorch_model.bin`,
            `source.spm`, `target.spm`, `vocab.json`, ...).
        output_dir: str or `os.PathLike`, the run directory to write.
        overwrite: bool, replace a finished run in `output_dir`.
        flag: str, what named `output_dir`, for the messages.

    Returns:
        The `TrainedModel` that `zoo.load_model_dir(output_dir)` gives.

    Raises:
        UsageError: for a directory that is not a checkpoint the zoo can
            mirror, a missing extra (`EXTRA`), or an `output_dir` that
            cannot take the run; nothing is written then.
    """
    directory, output_dir = os.fspath(directory), os.fspath(output_dir)
    if not os.path.isdir(directory):
        raise UsageError(
            f"{directory} is not a directory; expected what a Marian model's "
            "`save_pretrained` writes."
        )
    run_dir.check_writable(output_dir, flag)
    require_extras(directory)
    from zoo.pretrained import marian, tokenizer
    from zoo.recipes import model_dir
    from zoo.recipes.translator import RECIPE

    with reported_as_usage(ValueError):
        imported = marian.load_marian(directory)
        preprocessor = tokenizer.marian_preprocessor(
            directory,
            imported.source_vocabulary,
            imported.target_vocabulary,
            imported.model.max_length,
        )
    source = source_record(directory)
    run = run_dir.RunDir(output_dir)
    run.claim({"family": RECIPE.name, "imported": source}, overwrite, flag)
    try:
        run.save_preprocessor(preprocessor)
        record = {
            "imported": source,
            "preset": None,
            "params": int(imported.model.count_params()),
            "epochs": 0,
        }
        run.save(RECIPE.name, imported.model, record, RECIPE.vocabularies)
    finally:
        run.release()
    return model_dir.load_model_dir(output_dir)
