"""Text in and out of an encoder classifier, as one object.

Shape legend:
    B: batch size
    L: max_length

A `ClassificationPreprocessor` tokenizes every text with the one
TensorFlow function `tokenize` (normalised, see `normalize_graph`), cuts
it to `max_length` tokens and pads it to `max_length`: the training
pipeline (`dataset`), in-process classification (`batches`) and the
exported graph (`preprocess`) hand the model the same (B, L) ids. Each path
that cuts a text says so: a `TruncationWarning` in Python, a `truncated`
flag in the exported graph.
"""

import numpy as np
import tensorflow as tf

from keras_seq.text.dataset_ops import map_without_autograph, ordered_slices
from keras_seq.text.pipelines import _check_size
from keras_seq.text.preprocessor import SingleVocabularyPreprocessor
from keras_seq.text.vocabulary import _check_texts


class ClassificationPreprocessor(SingleVocabularyPreprocessor):
    """The tokenizer and `max_length` of a classifier.

    Args:
        tokenizer: a tokenizer of `make_tokenizer`.
        max_length: int >= 1, the tokens a text is cut to (at most the
            model's `max_length`).
        class_names: None (the classes are their ids), or one distinct
            non-empty str per class id, 0 first, kept in
            `preprocessor.json`: the names of text labels.

    Example:

    >>> from keras_seq.text import RESERVED_TOKENS, make_tokenizer
    >>> vocabulary = list(RESERVED_TOKENS) + ["Good", "bad", "!"]
    >>> preprocessor = ClassificationPreprocessor(make_tokenizer(vocabulary), 4)
    >>> preprocessor.preprocess(tf.constant(["Good!"])).numpy()
    array([[5, 7, 0, 0]], dtype=int32)
    """

    def __init__(self, tokenizer, max_length, class_names=None):
        super().__init__(tokenizer, max_length)
        self.class_names = _check_class_names(class_names)

    def label_names(self, num_classes):
        """The name of each class id: its `class_names`, or the id as text."""
        if self.class_names is None:
            return [str(i) for i in range(num_classes)]
        if len(self.class_names) != num_classes:
            raise ValueError(
                f"`class_names` names {len(self.class_names)} classes; the "
                f"model has {num_classes}."
            )
        return list(self.class_names)

    def settings(self):
        settings = super().settings()
        if self.class_names is not None:
            settings["class_names"] = list(self.class_names)
        return settings

    def dataset(
        self,
        texts,
        labels,
        batch_size,
        shuffle=False,
        seed=0,
        epoch=None,
        drop_remainder=False,
    ):
        """Batches of `(token_ids, labels)` for `model.fit`.

        Args:
            texts: a list of strings.
            labels: one label per text: class ids (ints) or scores
                (floats), shape (N,) or (N, K).
            batch_size: int.
            shuffle: bool, shuffle every epoch.
            seed: int, the shuffle seed.
            epoch: optional `tf.Variable` holding the epoch number (see
                `keras_seq.callbacks.ShuffleEpoch`); each epoch's order is
                then a function of `(seed, epoch)`, so a resumed run replays
                it. Without one, the order follows the passes made so far.
            drop_remainder: bool, drop the last, incomplete batch.

        Returns:
            A `tf.data.Dataset` of `(token_ids (B, L) int32, labels)`,
            labels int32 for ints and float32 for floats.
        """
        batch_size = _check_size(batch_size, "batch_size")
        texts = _check_texts(texts)
        labels = _check_labels(labels, len(texts))
        _, token_ids = self._tokenize_all(texts)
        dataset = ordered_slices((token_ids, labels), shuffle, seed, epoch)
        dataset = dataset.ragged_batch(batch_size, drop_remainder=drop_remainder)
        dataset = map_without_autograph(dataset, self._pad)
        return dataset.prefetch(tf.data.AUTOTUNE)


def _check_class_names(class_names):
    if class_names is None:
        return None
    if isinstance(class_names, str) or not isinstance(class_names, (list, tuple)):
        raise TypeError(
            "`class_names` must be None or a list of str; received "
            f"{type(class_names).__name__}."
        )
    names = list(class_names)
    if (
        len(names) < 2
        or not all(isinstance(n, str) and n for n in names)
        or len(set(names)) != len(names)
    ):
        raise ValueError(
            "`class_names` must hold two or more distinct non-empty str, one "
            f"per class id; received {names[:10]!r}."
        )
    return names


def _check_labels(labels, count):
    labels = np.asarray(labels)
    if labels.ndim == 0 or len(labels) != count:
        raise ValueError(
            f"`labels` must hold one label per text ({count}); received "
            f"shape {labels.shape}."
        )
    if labels.dtype.kind in "iub":
        return labels.astype("int32")
    if labels.dtype.kind == "f":
        return labels.astype("float32")
    raise ValueError(
        f"`labels` must be integers or floats; received dtype {labels.dtype}."
    )


def make_classification_dataset(texts, labels, tokenizer, max_length, batch_size,
                                **options):  # fmt: skip
    """`ClassificationPreprocessor(tokenizer, max_length).dataset(...)` in one call.

    Args:
        texts: a list of strings.
        labels: one label per text (see `ClassificationPreprocessor.dataset`).
        tokenizer: a tokenizer of `make_tokenizer`.
        max_length: int; every batch is padded to this length and longer
            texts are cut (one warning says how many).
        batch_size: int.
        **options: `shuffle`, `seed`, `epoch`, `drop_remainder`.

    Returns:
        The `tf.data.Dataset` of `ClassificationPreprocessor.dataset`.
    """
    preprocessor = ClassificationPreprocessor(tokenizer, max_length)
    return preprocessor.dataset(texts, labels, batch_size, **options)
