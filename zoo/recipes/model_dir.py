"""A trained model loaded from its run directory, ready to use.

`load_model_dir` reads a directory written by `keras-seq train` or
`keras-seq demo` (its layout and files are `zoo.recipes.run_dir`'s) and
refuses one whose vocabularies are not the ones the model was trained with
(size, special tokens, and the fingerprint in `run.json`), so a model never
reads ids it was not trained on. It returns a `TrainedModel`, which
translates, classifies or generates through the model's preprocessor
(`keras_seq.text`), the one the run saved: the same ids as in training and
in the exported graph. Loading the model (`load_model`, Keras' safe mode)
is here, not in `zoo.recipes.run_dir`, which knows files only.
"""

import os

import keras

# Importing these registers the classes that a saved model and its compile
# config name.
import keras_seq.losses  # noqa: F401
import keras_seq.metrics  # noqa: F401
import keras_seq.schedules  # noqa: F401
import zoo
from keras_seq import text
from keras_seq.validation import check_int_in  # noqa: F401  (TrainedModel's check)
from zoo.recipes import run_dir
from zoo.recipes.families import FAMILIES
from zoo.recipes.fingerprints import fingerprint
from zoo.recipes.run_dir import RUN_FILE
from zoo.recipes.trained import TrainedModel

# Some inputs were longer than the model's `max_length` and were cut.
TruncationWarning = text.TruncationWarning


def vocabulary_files(family):
    """The vocabulary files of a model directory of `family`."""
    return tuple(map(run_dir.vocabulary_file, FAMILIES[family].vocabularies))


def _vocabulary_sizes(family, config):
    if FAMILIES[family].translates:
        sizes = (config["source_vocabulary_size"], config["target_vocabulary_size"])
    else:
        sizes = (config["vocabulary_size"],)
    return dict(zip(vocabulary_files(family), sizes))


def _check_fingerprints(model_dir, family, config, run):
    """Refuses a vocabulary file whose bytes are not those the model was
    trained with (the fingerprint `run.json` records); its size and
    reserved tokens are checked as the preprocessor reads it."""
    fingerprints = run.get("vocabulary_sha256") or {}
    for name in _vocabulary_sizes(family, config):
        path = os.path.join(model_dir, name)
        if name in fingerprints and fingerprint(path) != fingerprints[name]:
            raise ValueError(
                f"{path} is not the vocabulary this model was trained with: "
                f"its SHA-256 differs from the one {RUN_FILE} records (a "
                "vocabulary of the same size from another run?)."
            )


def load_model_dir(model_dir):
    """Loads a directory written by `keras-seq train` or `keras-seq demo`.

    Args:
        model_dir: str, the directory.

    Returns:
        A `TrainedModel`.

    Raises:
        ValueError: when a file is missing or unreadable, `run.json` names
            an unknown family, or a vocabulary is not the model's.

    Example:

    >>> trained = load_model_dir("runs/demo")  # doctest: +SKIP
    >>> trained.translate(["Guten Morgen."])  # doctest: +SKIP
    ['good morning.']
    """
    directory = run_dir.RunDir(model_dir)
    directory.check_files()
    run = directory.read_run(FAMILIES)
    family = run["family"]
    model_path = os.path.join(model_dir, run_dir.MODEL_FILE)
    model = load_model(directory)
    config = model.get_config()
    sizes = ("source_vocabulary_size",) if FAMILIES[family].translates else ()
    if not all(key in config for key in sizes or ("vocabulary_size",)):
        raise ValueError(
            f"{os.path.join(model_dir, RUN_FILE)} names the family {family!r}, "
            f"but {model_path} holds a {type(model).__name__}, which is not one."
        )
    recipe = FAMILIES[family]
    kind, defaults = recipe.preprocessor(config, run)
    # The vocabularies are read once, by the preprocessor the model holds.
    preprocessor = kind.load(
        model_dir,
        vocabulary_sizes=tuple(_vocabulary_sizes(family, config).values()),
        **defaults,
    )
    _check_fingerprints(model_dir, family, config, run)
    return TrainedModel(
        model_dir, family, model, run, preprocessor=preprocessor, recipe=recipe
    )


def load_model(directory):
    """The model of a run directory's `model.keras`, loaded in Keras' safe
    mode.

    Args:
        directory: a `run_dir.RunDir` (or its path).

    Raises:
        ValueError: naming the file, when it is not a whole `.keras`
            archive or holds what safe mode refuses.
    """
    path = run_dir.RunDir(directory).model_path
    zoo.load_models()
    try:
        return keras.saving.load_model(path, safe_mode=True)
    except ValueError as error:
        message = str(error).strip().splitlines()[0]
        if message.startswith("File not found"):
            # Keras says so of any file that is not a whole zip archive.
            message = "not a whole .keras archive (truncated, or another format)"
        raise ValueError(f"{path}: {message}") from None
