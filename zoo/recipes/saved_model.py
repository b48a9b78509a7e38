"""Translating through an exported SavedModel, as TF Serving would."""

import os

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)

from keras_seq.text.preprocessor import warn_cut
from keras_seq.text.vocabulary import PAD_ID
from zoo.recipes.inputs import UsageError


def latest_version(path):
    """The SavedModel directory that `--saved-model path` means.

    Args:
        path: str, a SavedModel directory or the base of numbered versions
            (the TF Serving layout `<base>/<version>/`).

    Returns:
        `path` itself if it holds `saved_model.pb`, else its newest version.

    Raises:
        UsageError: when neither holds a `saved_model.pb`.
    """
    if os.path.isfile(os.path.join(path, "saved_model.pb")):
        return path
    versions = sorted(
        int(name)
        for name in (os.listdir(path) if os.path.isdir(path) else [])
        if name.isdigit() and os.path.isfile(os.path.join(path, name, "saved_model.pb"))
    )
    if not versions:
        raise UsageError(
            f"--saved-model {path}: no saved_model.pb in it or in a numbered "
            "version directory under it."
        )
    return os.path.join(path, str(versions[-1]))


def serve(path, sentences):
    """Translates through an exported translator's `serving_default`.

    A sentence longer than the model's `max_length` is cut to it, and a
    `TruncationWarning` says how many were, as `TrainedModel.translate`'s.

    Args:
        path: str, as `latest_version` takes it.
        sentences: list of str.

    Returns:
        A list of str, one translation per sentence.

    Raises:
        UsageError: when the SavedModel does not load or is not an exported
            translator.
    """
    version = latest_version(path)
    try:
        served = tf.saved_model.load(version)
    except (OSError, ValueError, tf.errors.OpError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error) else ""
        raise UsageError(
            f"--saved-model {path}: cannot load {version}/saved_model.pb "
            f"({type(error).__name__}: {first_line})"
        ) from None
    signature = served.signatures.get("serving_default")
    if signature is None or "translations" not in signature.structured_outputs:
        outputs = sorted(signature.structured_outputs) if signature else []
        raise UsageError(
            f"--saved-model {path}: its serving_default signature maps "
            f"`sentences` to {outputs}; expected `translations` (an exported "
            "translator)."
        )
    batch = tf.constant(sentences, tf.string) if sentences else tf.zeros([0], tf.string)
    result = signature(sentences=batch)
    if sentences and "tokenize" in served.signatures:
        _report_cut(served.signatures["tokenize"](sentences=batch))
    return [t.decode("utf-8") for t in result["translations"].numpy()]


def _report_cut(tokenized):
    """The preprocessor's `TruncationWarning`, from the `tokenize` signature
    (a cut source keeps the model's longest length, which it names)."""
    truncated = tokenized["truncated"].numpy()
    if truncated.any():
        ids = tokenized["token_ids"].numpy()[truncated]
        limit = int(np.max(np.sum(ids != PAD_ID, axis=1)))
        warn_cut(
            int(truncated.sum()),
            len(truncated),
            "sentences",
            f"model's max_length ({limit} tokens)",
        )
