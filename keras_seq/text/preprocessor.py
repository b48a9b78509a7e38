"""What every text preprocessor shares: its files, its config and its notes.

A preprocessor is the one object that turns a model's text into ids and
back (DESIGN.md "Text in and out"). Each is saved into a directory as its
vocabulary files, one token per line, and `preprocessor.json`, its
settings:

    <dir>/vocabulary.txt        one vocabulary (classifier, language models)
    <dir>/preprocessor.json     max_length and the family's settings

A SentencePiece tokenizer adds its model files (`source.spm`, `target.spm`
for a translator) and `"tokenizer": "sentencepiece"` in
`preprocessor.json`; without that field a directory is WordPiece's.

The translator's preprocessor names its two vocabulary files itself. A
directory written before `preprocessor.json` existed loads with the
settings its caller reads from the model (`load`'s `defaults`).

`Preprocessor` holds the files and the config; `SingleVocabularyPreprocessor`
adds the one tokenizer, the `max_length` cut and padding that the
classifier and the masked language model feed their models with.
"""

import json
import os
import warnings

import numpy as np
import tensorflow as tf

from keras_seq.text.dataset_ops import TruncationWarning, strings_graph, tokenize_all
from keras_seq.text.pipelines import _check_size
from keras_seq.text.tokenizers import (
    detokenize,
    detokenize_graph,
    make_tokenizer,
    tokenize_graph,
)
from keras_seq.text.vocabulary import (
    PAD_ID,
    _check_texts,
    load_vocabulary,
    save_vocabulary,
)

VOCABULARY_FILE = "vocabulary.txt"
SETTINGS_FILE = "preprocessor.json"


def check_tokenizer(tokenizer, name):
    """Refuses anything but a tokenizer of `make_tokenizer` (or a
    `SentencePieceTokenizer`)."""
    if not hasattr(tokenizer, "get_vocabulary"):
        raise TypeError(
            f"`{name}` must be a tokenizer of `keras_seq.text.make_tokenizer`; "
            f"received {type(tokenizer).__name__}."
        )


def warn_cut(count, total, what, limit, how="each was cut to it"):
    """The one truncation note of every preprocessor (`TruncationWarning`).

    Args:
        count: int, how many items were cut (no note when 0).
        total: int, how many items there were.
        what: their name in the note, e.g. `"texts"`.
        limit: the phrase naming the length they were cut to.
        how: how they were cut.
    """
    if count:
        warnings.warn(
            f"{count} of {total} {what} are longer than the {limit}; {how}.",
            TruncationWarning,
            stacklevel=3,
        )


class Preprocessor:
    """The files and config of a preprocessor; subclasses hold the text rules.

    A subclass names its vocabulary files (`vocabulary_files`, config key
    -> file name), and gives its vocabularies (`vocabularies`) and settings
    (`settings`); `get_config`, `save` and `load` follow from them.
    """

    vocabulary_files = {"vocabulary": VOCABULARY_FILE}

    def vocabularies(self):
        """The token lists, by config key (every key of `vocabulary_files`)."""
        raise NotImplementedError

    def settings(self):
        """The JSON-able settings `preprocessor.json` holds."""
        raise NotImplementedError

    def get_config(self):
        """The vocabularies and settings; `from_config` rebuilds the object."""
        return {**self.vocabularies(), **self.settings()}

    def save(self, directory):
        """Writes the vocabulary files and `preprocessor.json` into `directory`."""
        directory = os.fspath(directory)
        vocabularies = self.vocabularies()
        for key, name in self.vocabulary_files.items():
            save_vocabulary(vocabularies[key], os.path.join(directory, name))
        with open(os.path.join(directory, SETTINGS_FILE), "w", encoding="utf-8") as f:
            json.dump(self.settings(), f, indent=2)

    @classmethod
    def load(cls, directory, vocabulary_sizes=None, **defaults):
        """Reads what `save` wrote, or a directory from before `preprocessor.json`.

        Args:
            directory: the directory.
            vocabulary_sizes: the sizes the model was built with, one per
                vocabulary file in the order of `vocabulary_files` (`None`
                entries, or `None` for all: no check).
            **defaults: the settings of a directory without
                `preprocessor.json` (e.g. the model's `max_length`).

        Raises:
            ValueError: for a missing or bad vocabulary file (see
                `load_vocabulary`) or a `preprocessor.json` that is not a
                JSON object.
        """
        directory = os.fspath(directory)
        settings = defaults
        path = os.path.join(directory, SETTINGS_FILE)
        if os.path.isfile(path):
            with open(path, "rb") as file:
                data = file.read()
            try:  # Decoding errors are ValueErrors too.
                settings = json.loads(data.decode("utf-8"))
                if not isinstance(settings, dict):
                    raise ValueError(f"found a {type(settings).__name__}")
            except ValueError as error:
                raise ValueError(
                    f"{path} must hold a JSON object of settings: {error}"
                ) from None
        sizes = vocabulary_sizes or (None,) * len(cls.vocabulary_files)
        vocabularies = {
            key: load_vocabulary(os.path.join(directory, name), expected_size=size)
            for (key, name), size in zip(cls.vocabulary_files.items(), sizes)
        }
        models = cls.read_models(directory, settings)
        return cls.from_config({**vocabularies, **models, **settings})

    @classmethod
    def read_models(cls, directory, settings):
        """The tokenizer model files `settings` name, by config key (none
        for WordPiece, whose vocabulary is its model)."""
        return {}

    @classmethod
    def from_config(cls, config):
        """The preprocessor of `get_config()`."""
        raise NotImplementedError


class SingleVocabularyPreprocessor(Preprocessor):
    """One tokenizer and a `max_length`: texts cut to it and padded to it.

    Args:
        tokenizer: a tokenizer of `make_tokenizer`.
        max_length: int, the longest sequence the model reads.
    """

    minimum_length = 1

    def __init__(self, tokenizer, max_length):
        check_tokenizer(tokenizer, "tokenizer")
        self.tokenizer = tokenizer
        self.max_length = _check_size(
            max_length, "max_length", minimum=self.minimum_length
        )
        # Traced once: eagerly, keras-hub tokenizes on a slower Python path.
        self._tokenize_texts = strings_graph(self.tokenize)

    @property
    def vocabulary_size(self):
        return int(self.tokenizer.vocabulary_size())

    def tokenize(self, texts):
        """(B,) `tf.string` -> ragged (B, None) int32 ids, nothing cut.

        TensorFlow ops only: the one tokenization of every path (the
        pipeline, in-process use and the exported graph).
        """
        return tokenize_graph(self.tokenizer, texts)

    def preprocess(self, texts):
        """(B,) `tf.string` -> (B, max_length) int32 ids, cut and 0-padded.

        In graph; a text without tokens gives a row of padding.
        """
        ids = self.tokenize(texts)[:, : self.max_length]
        return ids.to_tensor(PAD_ID, shape=[None, self.max_length])

    def truncated(self, texts):
        """(B,) `tf.string` -> (B,) bool: which texts `preprocess` cuts."""
        return self.tokenize(texts).row_lengths() > self.max_length

    def _tokenize_all(self, texts, what="texts"):
        """Python strings -> `(lengths, ragged ids cut to max_length)`.

        One `TruncationWarning` says how many texts were cut.
        """
        texts = _check_texts(texts)
        lengths, ids = tokenize_all(texts, self.tokenize, self.max_length)
        warn_cut(
            int(np.sum(lengths > self.max_length)),
            len(texts),
            what,
            f"model's max_length ({self.max_length} tokens)",
        )
        return lengths, ids

    def batches(self, texts, batch_size):
        """A `tf.data.Dataset` of (B, max_length) int32 id batches of `texts`.

        The ids `preprocess` gives, in the order of `texts`, for
        `model.predict`; one `TruncationWarning` says how many were cut.
        """
        batch_size = _check_size(batch_size, "batch_size")
        _, ids = self._tokenize_all(texts)
        dataset = tf.data.Dataset.from_tensor_slices(ids).ragged_batch(batch_size)
        return dataset.map(self._pad)

    def _pad(self, ids, *rest):
        """Ragged (B, None) ids cut to `max_length` -> (B, max_length)."""
        padded = ids.to_tensor(PAD_ID, shape=[None, self.max_length])
        return (padded, *rest) if rest else padded

    def detokenize(self, ids):
        """Ids (B, T) -> a list of B `str`s (see `detokenize`)."""
        return detokenize(self.tokenizer, ids)

    def detokenize_graph(self, ids):
        """Ids (B, T) -> (B,) `tf.string`, TensorFlow ops only."""
        return detokenize_graph(self.tokenizer, ids)

    def vocabularies(self):
        return {"vocabulary": list(self.tokenizer.get_vocabulary())}

    def settings(self):
        return {
            "max_length": self.max_length,
            "lowercase": bool(self.tokenizer.lowercase),
            "strip_accents": bool(self.tokenizer.strip_accents),
        }

    @classmethod
    def from_config(cls, config):
        """The preprocessor of `get_config()`."""
        config = dict(config)
        tokenizer = make_tokenizer(
            config.pop("vocabulary"),
            # Files written before the setting existed lowercased.
            lowercase=config.pop("lowercase", True),
            strip_accents=config.pop("strip_accents", False),
        )
        return cls(tokenizer, **config)
