"""A trained model's directory: the model, its vocabularies and `run.json`.

    <dir>/model.keras               the model (Keras format, safe to load)
    <dir>/vocabulary.txt            one vocabulary (encoder-only, decoder-only)
    <dir>/source_vocabulary.txt     or source and target vocabularies
    <dir>/target_vocabulary.txt     (translators)
    <dir>/run.json                  family, data, settings, test figures and
                                    a fingerprint of each vocabulary

`load_model_dir` refuses a directory whose vocabularies are not the ones
the model was trained with (size, special tokens, and the fingerprint in
`run.json`), so a model never reads ids it was not trained on. It returns
a `TrainedModel`, which translates, classifies or generates with them.
"""

import dataclasses
import hashlib
import json
import os
import warnings

import keras
import numpy as np

# Importing these registers the classes that a saved model and its compile
# config name.
import keras_seq.losses  # noqa: F401
import keras_seq.metrics  # noqa: F401
import keras_seq.schedules  # noqa: F401
import zoo  # noqa: F401
from keras_seq import text
from zoo.recipes import tasks, translation

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


class TruncationWarning(UserWarning):
    """Some inputs were longer than the model's `max_length` and were cut."""


# The beam width of the headline BLEU (the demo's and `train`'s).
BEAM_WIDTH = 4


def vocabulary_files(family):
    """The vocabulary files of a model directory of `family`."""
    if family in TRANSLATORS:
        return ("source_vocabulary.txt", "target_vocabulary.txt")
    return ("vocabulary.txt",)


def fingerprint(path):
    """The SHA-256 of a vocabulary file's bytes (its tokens, in order)."""
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


def save_model_dir(output_dir, family, model, run):
    """Writes the model and `run.json` into a model directory.

    The vocabularies are written by the recipe before training; `run.json`
    records their fingerprints, so that a vocabulary of the same size from
    another run is refused when the directory loads.

    Args:
        output_dir: str, an existing directory.
        family: str, one of `FAMILIES`.
        model: the trained `keras.Model`.
        run: a JSON-serializable dict (data, settings, test figures).
    """
    fingerprints = {
        name: fingerprint(os.path.join(output_dir, name))
        for name in vocabulary_files(family)
        if os.path.isfile(os.path.join(output_dir, name))
    }
    model.save(os.path.join(output_dir, MODEL_FILE))
    run = {"family": family, **run, "vocabulary_sha256": fingerprints}
    with open(os.path.join(output_dir, RUN_FILE), "w", encoding="utf-8") as file:
        json.dump(run, file, indent=2, ensure_ascii=False)


def _vocabulary_sizes(family, config):
    if family in TRANSLATORS:
        sizes = (config["source_vocabulary_size"], config["target_vocabulary_size"])
    else:
        sizes = (config["vocabulary_size"],)
    return dict(zip(vocabulary_files(family), sizes))


def _read_run(model_dir):
    run_path = os.path.join(model_dir, RUN_FILE)
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
    if run.get("family") not in FAMILIES:
        raise ValueError(
            f"{run_path}: `family` must be one of {FAMILIES}; received "
            f"{run.get('family')!r}."
        )
    return run


def _load_model(model_path):
    try:
        return keras.saving.load_model(model_path, safe_mode=True)
    except ValueError as error:
        message = str(error).strip().splitlines()[0]
        if message.startswith("File not found"):
            # Keras says so of any file that is not a whole zip archive.
            message = "not a whole .keras archive (truncated, or another format)"
        raise ValueError(f"{model_path}: {message}") from None


def _tokenizers(model_dir, family, config, run):
    fingerprints = run.get("vocabulary_sha256") or {}
    tokenizers = {}
    for name, size in _vocabulary_sizes(family, config).items():
        path = os.path.join(model_dir, name)
        vocabulary = text.load_vocabulary(path, expected_size=size)
        if name in fingerprints and fingerprint(path) != fingerprints[name]:
            raise ValueError(
                f"{path} is not the vocabulary this model was trained with: "
                f"its SHA-256 differs from the one {RUN_FILE} records (a "
                "vocabulary of the same size from another run?)."
            )
        key = name.split("_")[0] if family in TRANSLATORS else "text"
        tokenizers[key] = text.make_tokenizer(vocabulary)
    return tokenizers


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
    for name in (RUN_FILE, MODEL_FILE):
        if not os.path.isfile(os.path.join(model_dir, name)):
            raise ValueError(
                f"{model_dir} has no {name}; expected a model directory "
                "written by `keras-seq train` or `keras-seq demo`."
            )
    run = _read_run(model_dir)
    family = run["family"]
    model_path = os.path.join(model_dir, MODEL_FILE)
    model = _load_model(model_path)
    config = model.get_config()
    sizes = ("source_vocabulary_size",) if family in TRANSLATORS else ()
    if not all(key in config for key in sizes or ("vocabulary_size",)):
        raise ValueError(
            f"{os.path.join(model_dir, RUN_FILE)} names the family {family!r}, "
            f"but {model_path} holds a {type(model).__name__}, which is not one."
        )
    tokenizers = _tokenizers(model_dir, family, config, run)
    return TrainedModel(model_dir, family, model, run, tokenizers)


@dataclasses.dataclass
class TrainedModel:
    """A trained model with its vocabularies, as a model directory holds it.

    Attributes:
        path: str, the directory.
        family: str, one of `FAMILIES`.
        model: the `keras.Model`.
        run: dict, the contents of `run.json`.
        tokenizers: dict of keras-hub tokenizers: `source` and `target`
            for translators, `text` otherwise.
    """

    path: str
    family: str
    model: keras.Model
    run: dict
    tokenizers: dict

    def _require(self, families, use):
        if self.family not in families:
            raise ValueError(
                f"{self.path} holds a {self.family}; {use} needs a "
                f"{' or '.join(families)}."
            )

    def translate(self, texts, beam_width=BEAM_WIDTH, max_new_tokens=None):
        """Translates sentences, one output per input (blank in, "" out).

        A sentence longer than the model's `max_length` tokens is cut to
        it; a `TruncationWarning` says how many were.

        Args:
            texts: list of str.
            beam_width: int, beams of the search; 1 decodes greedily.
            max_new_tokens: int or None (as many as the model allows).

        Returns:
            A list of str.
        """
        self._require(TRANSLATORS, "translate")
        texts = list(texts)
        limit = getattr(self.model, "max_length", None)
        if limit:
            lengths = [len(r) for r in translation.tokenize_to_lists(
                self.tokenizers["source"], texts)]  # fmt: skip
            cut = sum(length > limit for length in lengths)
            if cut:
                warnings.warn(
                    f"{cut} of {len(texts)} sentences are longer than the "
                    f"model's max_length ({limit} tokens); each was cut to it.",
                    TruncationWarning,
                    stacklevel=2,
                )
        options = (
            {} if beam_width == 1 else {"strategy": "beam", "beam_width": beam_width}
        )
        return translation.translate_texts(
            self.model,
            self.tokenizers["source"],
            self.tokenizers["target"],
            texts,
            max_new_tokens=max_new_tokens,
            **options,
        )

    def classify(self, texts):
        """Class probabilities of texts, a float array (N, classes)."""
        self._require(("classifier",), "classify")
        max_length = self.run.get("max_length", self.model.get_config()["max_length"])
        return tasks.classify_texts(
            self.model, self.tokenizers["text"], list(texts), max_length
        )

    def generate(self, prompt, max_new_tokens=80, top_k=20, seed=0):
        """Samples a continuation of `prompt` (top-k) from a language model.

        Training lines end with [END]; sampling runs past it, so the text
        may span several lines, joined by " / ".

        Args:
            prompt: str, the start of the text.
            max_new_tokens: int, the most new tokens (bounded by the
                model's `max_length`).
            top_k: int, the sampler's k.
            seed: int, of the sampler.

        Returns:
            str, the prompt and its continuation.
        """
        self._require(("language-model",), "generate")
        tokenizer = self.tokenizers["text"]
        ids = translation.tokenize_to_lists(tokenizer, [prompt])[0] or [text.START_ID]
        limit = self.model.get_config()["max_length"]
        ids = ids[-(limit - 1) :]  # Room for at least one new token.
        new = self.model.generate(
            np.asarray([ids], "int32"),
            max_new_tokens=min(max_new_tokens, limit - len(ids)),
            strategy="sample",
            top_k=top_k,
            seed=seed,
            end_token_id=None,
        )
        stream = ids + np.asarray(new)[0].tolist()
        lines, line = [], []
        for token in stream + [text.END_ID]:
            if token == text.END_ID:
                lines.append(line)
                line = []
            elif token != text.START_ID:
                line.append(token)
        decoded = text.detokenize(tokenizer, [row or [0] for row in lines])
        return " / ".join(line for line in decoded if line)
