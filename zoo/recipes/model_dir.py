"""A trained model's directory: the model, its vocabularies and `run.json`.

    <dir>/model.keras               the model (Keras format, safe to load)
    <dir>/vocabulary.txt            one vocabulary (encoder-only, decoder-only)
    <dir>/source_vocabulary.txt     or source and target vocabularies
    <dir>/target_vocabulary.txt     (translators)
    <dir>/run.json                  family, data, settings and test figures

`load_model_dir` refuses a directory whose vocabularies do not match the
model (size or special tokens), so a model never reads ids it was not
trained on.
"""

import json
import os

import keras

# Importing these registers the classes that a saved model and its compile
# config name.
import keras_seq.losses  # noqa: F401
import keras_seq.metrics  # noqa: F401
import keras_seq.schedules  # noqa: F401
import zoo  # noqa: F401
from keras_seq import text

MODEL_FILE = "model.keras"
RUN_FILE = "run.json"
FAMILIES = (
    "translator",
    "rnn-translator",
    "classifier",
    "masked-language-model",
    "language-model",
)
TRANSLATORS = ("translator", "rnn-translator")


def save_model_dir(output_dir, family, model, run):
    """Writes the model and `run.json` into a model directory.

    The vocabularies are written by the recipe before training.

    Args:
        output_dir: str, an existing directory.
        family: str, one of `FAMILIES`.
        model: the trained `keras.Model`.
        run: a JSON-serializable dict (data, settings, test figures).
    """
    model.save(os.path.join(output_dir, MODEL_FILE))
    with open(os.path.join(output_dir, RUN_FILE), "w", encoding="utf-8") as file:
        json.dump({"family": family, **run}, file, indent=2, ensure_ascii=False)


def _vocabulary_keys(family):
    if family in TRANSLATORS:
        return ("source_vocabulary_size", "target_vocabulary_size")
    return ("vocabulary_size",)


def _vocabulary_sizes(family, config):
    if family in TRANSLATORS:
        return {
            "source_vocabulary.txt": config["source_vocabulary_size"],
            "target_vocabulary.txt": config["target_vocabulary_size"],
        }
    return {"vocabulary.txt": config["vocabulary_size"]}


def load_model_dir(model_dir):
    """Loads a directory written by `keras-seq train` or `keras-seq demo`.

    Args:
        model_dir: str, the directory.

    Returns:
        A dict with `family`, `model`, `run` (the `run.json` contents) and
        `tokenizers` (`{"source": ..., "target": ...}` for translators,
        `{"text": ...}` otherwise).

    Raises:
        ValueError: when a file is missing, `run.json` names an unknown
            family, or a vocabulary does not match the model.
    """
    run_path = os.path.join(model_dir, RUN_FILE)
    model_path = os.path.join(model_dir, MODEL_FILE)
    for path in (run_path, model_path):
        if not os.path.isfile(path):
            raise ValueError(
                f"`--model-dir` {model_dir} has no {os.path.basename(path)}; "
                "expected a directory written by `keras-seq train` or "
                "`keras-seq demo`."
            )
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
    family = run.get("family")
    if family not in FAMILIES:
        raise ValueError(
            f"{run_path}: `family` must be one of {FAMILIES}; received {family!r}."
        )
    try:
        model = keras.saving.load_model(model_path, safe_mode=True)
    except ValueError as error:
        raise ValueError(f"{model_path}: {error}") from None
    config = model.get_config()
    needed = _vocabulary_keys(family)
    if not all(key in config for key in needed):
        raise ValueError(
            f"{run_path} names the family {family!r}, but {model_path} holds a "
            f"{type(model).__name__}, which is not one."
        )
    tokenizers = {}
    for name, size in _vocabulary_sizes(family, config).items():
        vocabulary = text.load_vocabulary(
            os.path.join(model_dir, name), expected_size=size
        )
        key = name.split("_")[0] if family in TRANSLATORS else "text"
        tokenizers[key] = text.make_tokenizer(vocabulary)
    return {"family": family, "model": model, "run": run, "tokenizers": tokenizers}
