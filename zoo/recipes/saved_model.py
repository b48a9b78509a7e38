"""Translating through an exported SavedModel, as TF Serving would."""

import os

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)

from keras_seq.defaults import CONTROL_INPUT_DEFAULTS
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


def serve(path, sentences, beam_width=1, **controls):
    """Translates through an exported translator, as TF Serving would.

    One beam decodes with `serving_default` (greedy); the export's own beam
    width with its `beam_search` signature, whose best translation is the
    one `model.generate(..., strategy="beam")` gives. The graph's beam
    width is fixed when it is exported, so no other width can be decoded.
    With decoding controls, greedily with `translate_with_controls`.

    A sentence longer than the model's `max_length` is cut to it, and a
    `TruncationWarning` says how many were, as `TrainedModel.translate`'s.

    Args:
        path: str, as `latest_version` takes it.
        sentences: list of str.
        beam_width: int, 1 or the export's (`beam_width_of`); None: the
            export's.
        **controls: `target_prefix` (a str for every sentence),
            `min_new_tokens`, `repetition_penalty` (the inputs of
            `translate_with_controls`; with them `beam_width` must be 1).

    Returns:
        A list of str, one translation per sentence.

    Raises:
        UsageError: when the SavedModel does not load, is not an exported
            translator, or cannot decode with `beam_width` beams.
    """
    served = _load(path)
    signature = served.signatures.get("serving_default")
    if signature is None or "translations" not in signature.structured_outputs:
        outputs = sorted(signature.structured_outputs) if signature else []
        raise UsageError(
            f"--saved-model {path}: its serving_default signature maps "
            f"`sentences` to {outputs}; expected `translations` (an exported "
            "translator)."
        )
    exported = beam_width_of(served)
    beam_width = exported if beam_width is None else beam_width
    if controls and beam_width != 1:
        raise UsageError(
            f"--saved-model {path}: the decoding controls decode greedily (its "
            "translate_with_controls signature); add --beam-width 1."
        )
    if beam_width not in (1, exported):
        raise UsageError(_beam_refusal(path, beam_width, exported))
    if beam_width != 1:
        signature = served.signatures["beam_search"]
    batch = tf.constant(sentences, tf.string) if sentences else tf.zeros([0], tf.string)
    if controls:
        translations = _with_controls(path, served, batch, **controls)
    else:
        translations = signature(sentences=batch)["translations"].numpy()
    if sentences and "tokenize" in served.signatures:
        _report_cut(served.signatures["tokenize"](sentences=batch))
    if beam_width != 1:
        translations = translations[:, 0]  # (B, n) best first -> (B,)
    return [t.decode("utf-8") for t in translations]


def _with_controls(
    path, served, batch, target_prefix=None, min_new_tokens=None,
    repetition_penalty=None,
):  # fmt: skip
    """`translate_with_controls` on `batch`, every sentence under the same
    controls; a value out of range is the graph's one-line refusal."""
    signature = served.signatures.get("translate_with_controls")
    if signature is None:
        raise UsageError(
            f"--saved-model {path}: it has no translate_with_controls signature "
            "(exported before the decoding controls); export it again, or "
            "translate with --model-dir."
        )
    values = {
        "target_prefix": target_prefix,
        "min_new_tokens": min_new_tokens,
        "repetition_penalty": repetition_penalty,
    }
    dtypes = {"target_prefix": tf.string, "min_new_tokens": tf.int32}
    inputs = {
        name: tf.fill(
            [int(batch.shape[0])],
            tf.constant(
                CONTROL_INPUT_DEFAULTS[name] if value is None else value,
                dtypes.get(name, tf.float32),
            ),
        )
        for name, value in values.items()
    }
    try:
        return signature(sentences=batch, **inputs)["translations"].numpy()
    except tf.errors.InvalidArgumentError as error:
        from zoo.serving.batching import first_error_line

        line = first_error_line(error)
        if line.startswith("assertion failed: [") and line.endswith("]"):
            line = line[len("assertion failed: [") : -1]
        raise UsageError(line) from None


def _load(path):
    """The loaded newest version of `path`; a failure is one line."""
    version = latest_version(path)
    try:
        return tf.saved_model.load(version)
    except (OSError, ValueError, tf.errors.OpError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error) else ""
        raise UsageError(
            f"--saved-model {path}: cannot load {version}/saved_model.pb "
            f"({type(error).__name__}: {first_line})"
        ) from None


def beam_width_of(served):
    """The beams of a loaded translator export's `beam_search` signature.

    Its `translations` are (B, n): every beam, best first, as
    `keras_seq.export.export_translator` writes them unless told to return
    fewer; 1 when the export has no beam signature.
    """
    signature = served.signatures.get("beam_search")
    if signature is None or "translations" not in signature.structured_outputs:
        return 1
    width = signature.structured_outputs["translations"].shape[-1]
    return int(width) if width else 1


def _beam_refusal(path, beam_width, exported):
    """The one line that refuses a beam width the export cannot decode."""
    if exported == 1:
        return (
            f"--beam-width {beam_width}: the SavedModel {path} has no "
            "beam_search signature and decodes greedily (--beam-width 1)."
        )
    if beam_width > exported:
        how = f"was exported with {exported} beams, the most it decodes with"
    else:
        how = (
            f"decodes with its exported {exported} beams or greedily, no width between"
        )
    return (
        f"--beam-width {beam_width}: the SavedModel {path} {how}; give "
        f"--beam-width {exported} or 1, or translate with --model-dir."
    )


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
