"""A trained model loaded from its run directory, ready to use.

`load_model_dir` reads a directory written by `keras-seq train` or
`keras-seq demo` (its layout and files are `zoo.recipes.run_dir`'s) and
refuses one whose vocabularies are not the ones the model was trained with
(size, special tokens, and the fingerprint in `run.json`), so a model never
reads ids it was not trained on. It returns a `TrainedModel`, which
translates, classifies or generates through the model's preprocessor
(`keras_seq.text`), the one the run saved: the same ids as in training and
in the exported graph.
"""

import dataclasses
import os

import keras

from keras_seq import text
from keras_seq.validation import check_int_in
from zoo.recipes import run_dir, tasks, translation
from zoo.recipes.families import FAMILIES, supporting
from zoo.recipes.inputs import check_text_list
from zoo.recipes.run_dir import RUN_FILE, fingerprint
from zoo.recipes.settings import TranslatorSettings

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


def _check_vocabularies(model_dir, family, config, run):
    """Refuses a vocabulary file the model was not trained with (its size,
    reserved tokens, or the fingerprint `run.json` records)."""
    fingerprints = run.get("vocabulary_sha256") or {}
    for name, size in _vocabulary_sizes(family, config).items():
        path = os.path.join(model_dir, name)
        text.load_vocabulary(path, expected_size=size)
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
    model = directory.load_model()
    config = model.get_config()
    sizes = ("source_vocabulary_size",) if FAMILIES[family].translates else ()
    if not all(key in config for key in sizes or ("vocabulary_size",)):
        raise ValueError(
            f"{os.path.join(model_dir, RUN_FILE)} names the family {family!r}, "
            f"but {model_path} holds a {type(model).__name__}, which is not one."
        )
    _check_vocabularies(model_dir, family, config, run)
    kind, defaults = FAMILIES[family].preprocessor(config, run)
    preprocessor = kind.load(
        model_dir,
        vocabulary_sizes=tuple(_vocabulary_sizes(family, config).values()),
        **defaults,
    )
    return TrainedModel(
        model_dir, family, model, run, _tokenizers_of(preprocessor), preprocessor
    )


def _tokenizers_of(preprocessor):
    if isinstance(preprocessor, text.TranslationPreprocessor):
        return {
            "source": preprocessor.source_tokenizer,
            "target": preprocessor.target_tokenizer,
        }
    return {"text": preprocessor.tokenizer}


@dataclasses.dataclass
class TrainedModel:
    """A trained model with its vocabularies, as a model directory holds it.

    Attributes:
        path: str, the directory.
        family: str, one of `FAMILIES`.
        model: the `keras.Model`.
        run: dict, the contents of `run.json`.
        tokenizers: dict of keras-hub tokenizers: `source` and `target`
            for translators, `text` otherwise (the preprocessor's).
        preprocessor: the model's `keras_seq.text` preprocessor; by
            default, one of its `tokenizers` at the model's `max_length`.
    """

    path: str
    family: str
    model: keras.Model
    run: dict
    tokenizers: dict
    preprocessor: object = None

    def __post_init__(self):
        if self.preprocessor is not None or self.model is None or not self.tokenizers:
            return
        config = self.model.get_config()
        if FAMILIES[self.family].translates:
            self.preprocessor = text.TranslationPreprocessor(
                self.tokenizers["source"],
                self.tokenizers["target"],
                max_length=config.get("max_length"),
            )
            return
        kind, settings = FAMILIES[self.family].preprocessor(config, self.run)
        self.preprocessor = kind(self.tokenizers["text"], **settings)

    def _require(self, command):
        if not FAMILIES[self.family].supports(command):
            raise ValueError(
                f"{self.path} holds a {self.family}; {command} needs a "
                f"{' or '.join(supporting(command))}."
            )

    @property
    def output_vocabulary_size(self):
        """The number of tokens the model chooses from (the target side)."""
        config = self.model.get_config()
        return config.get("target_vocabulary_size", config.get("vocabulary_size"))

    def check_translate_options(
        self, beam_width=TranslatorSettings.beam_width, max_new_tokens=None
    ):
        """Refuses options of `translate` this model cannot honour.

        Called by `translate` before any text is tokenized; the command
        line calls it before it reads its input.

        Raises:
            ValueError: naming the argument, its bound and the value.
        """
        self._require("translate")
        check_int_in(
            beam_width, "beam_width", 1, self.output_vocabulary_size,
            "the target vocabulary size",
        )  # fmt: skip
        limit = getattr(self.model, "max_length", None)
        check_int_in(
            max_new_tokens, "max_new_tokens", 1, limit and limit - 1,
            "the model's max_length - 1",
        )  # fmt: skip

    def translate(
        self, texts, beam_width=TranslatorSettings.beam_width, max_new_tokens=None
    ):
        """Translates sentences, one output per input (blank in, "" out).

        A sentence longer than the model's `max_length` tokens is cut to
        it; a `TruncationWarning` says how many were (the preprocessor's
        `decode_batches`).

        Args:
            texts: a list of str, or one str (one sentence).
            beam_width: int in [1, target vocabulary size], beams of the
                search; 1 decodes greedily.
            max_new_tokens: int in [1, max_length - 1], or None (as many
                as the model allows).

        Returns:
            A list of str, or one str for one str.

        Raises:
            ValueError: for an option out of its bounds, before any work.
            TypeError: when `texts` is not a str or a list of str.
        """
        self.check_translate_options(beam_width, max_new_tokens)
        if isinstance(texts, str):
            return self.translate([texts], beam_width, max_new_tokens)[0]
        texts = check_text_list(texts, "texts")
        options = (
            {} if beam_width == 1 else {"strategy": "beam", "beam_width": beam_width}
        )
        return translation.translate_texts(
            self.model,
            self.preprocessor,
            texts,
            max_new_tokens=max_new_tokens,
            **options,
        )

    def classify(self, texts):
        """Class probabilities of texts, in the order of `class_names`.

        Args:
            texts: a list of str, or one str (one text).

        Returns:
            A float array (N, classes), or (classes,) for one str.
        """
        self._require("classify")
        if isinstance(texts, str):
            return self.classify([texts])[0]
        texts = check_text_list(texts, "texts")
        return tasks.classify_texts(self.model, self.preprocessor, texts)

    @property
    def class_names(self):
        """A classifier's class names, by id: the labels of its training
        file (`["neg", "pos"]`), or the ids as text (`["0", "1"]`)."""
        self._require("classify")
        return self.preprocessor.label_names(self.model.get_config()["num_classes"])

    def label(self, texts):
        """The name of the most likely class of each text (see `classify`).

        Returns:
            A list of str, or one str for one str.
        """
        probabilities = self.classify(texts)
        names = self.class_names
        if isinstance(texts, str):
            return names[int(probabilities.argmax())]
        return [names[i] for i in probabilities.argmax(-1).tolist()]

    def check_generate_options(
        self, max_new_tokens=None, top_k=tasks.SAMPLE_TOP_K, top_p=None, seed=0
    ):
        """Refuses options of `generate` this model cannot honour.

        Raises:
            ValueError: naming the argument, its bound and the value.
        """
        self._require("generate")
        limit = self.preprocessor.max_length
        check_int_in(
            max_new_tokens, "max_new_tokens", 1, limit - 1,
            "the model's max_length - 1",
        )  # fmt: skip
        check_int_in(
            top_k, "top_k", 1, self.output_vocabulary_size, "the vocabulary size"
        )
        if top_p is not None and not (
            isinstance(top_p, (int, float)) and 0.0 < top_p <= 1.0
        ):
            raise ValueError(f"`top_p` must be in (0, 1]; received {top_p!r}.")
        check_int_in(seed, "seed", 0, 2**31 - 1, "the largest int32 seed")

    def generate(
        self, prompt, max_new_tokens=None, top_k=tasks.SAMPLE_TOP_K, top_p=None, seed=0
    ):
        """Samples a continuation of `prompt` (top-k, or top-p) from a language model.

        Training lines end with [END]; sampling runs past it, so the text
        may span several lines, joined by " / ".

        A seed fixes the draw: the same prompt and `seed` give the same
        text on every call, whatever was generated before, and each prompt
        of a list draws as it would alone; `seed=None` draws afresh.

        Args:
            prompt: str, the start of the text, or a list of str (each
                continued on its own).
            max_new_tokens: int in [1, max_length - 1], the new tokens (a
                longer prompt keeps its last `max_length - max_new_tokens`
                tokens, as the exported model's do), or None: as many as
                the model's `max_length` leaves beside the prompt.
            top_k: int in [1, vocabulary size], the sampler's k.
            top_p: float in (0, 1] or None, the nucleus of the sampler
                (within the `top_k` most likely tokens).
            seed: int in [0, 2**31) or None, of the sampler.

        Returns:
            str, the prompt and its continuation; a list of str for a list.

        Raises:
            ValueError: for an option out of its bounds, before any work.
            TypeError: when `prompt` is not a str or a list of str.
        """
        self.check_generate_options(max_new_tokens, top_k, top_p, seed)
        if not isinstance(prompt, str):
            prompts = check_text_list(prompt, "prompt")
            return [
                self.generate(p, max_new_tokens, top_k, top_p, seed) for p in prompts
            ]
        return tasks.generate_text(
            self.model, self.preprocessor, prompt, max_new_tokens, top_k, top_p,
            seed,
        )  # fmt: skip
