"""SavedModels that take strings and return strings, for TF Serving.

Each export writes `<export_dir>/<version>/` with `keras.export.ExportArchive`
(the model, its tokenizers and their vocabulary tables are tracked, so the
artifact is self-contained). Inside every signature the graph cleans the
input (invalid UTF-8 becomes U+FFFD), tokenizes it with the keras-hub
WordPiece tokenizer (TensorFlow Text ops), truncates it to the model's
`max_length` (a translator's `TranslationPreprocessor` does all three, as
it does in process), decodes with the same cached loops as `model.generate` and
detokenizes with TensorFlow string ops. No Python runs at serving time, and
no input crashes it: an empty batch gives an empty batch, an empty (or
blank: no token at all) sentence gives an empty string, an over-long one
is truncated.

Loading needs only TensorFlow and TensorFlow Text:

    import tensorflow as tf, tensorflow_text  # registers the WordPiece ops
    served = tf.saved_model.load("exported/1")
    served.signatures["serving_default"](sentences=tf.constant(["Hallo!"]))
"""

import os

import keras
import numpy as np
import tensorflow as tf

from keras_seq.generation import GenerativeModel
from keras_seq.text import (
    END_ID,
    PAD_ID,
    RESERVED_TOKENS,
    START_ID,
    TranslationPreprocessor,
    detokenize_graph,
    tokenize_graph,
)

DEFAULT_VERSION = 1


def require_tensorflow():
    """Refuse to export on another backend, before any model is loaded.

    A model trained on JAX or PyTorch is saved as `.keras`, loaded under
    TensorFlow and exported there.

    Raises:
        ValueError: naming the backend export needs and the current one.
    """
    if keras.backend.backend() != "tensorflow":
        raise ValueError(
            "SavedModel export needs the TensorFlow backend "
            "(KERAS_BACKEND=tensorflow); the current backend is "
            f"{keras.backend.backend()!r}."
        )


def _check_model(model, builder, attributes):
    """Refuse a model of another family before any graph is traced.

    Args:
        model: the model to export.
        builder: the `zoo` builder whose models the export takes.
        attributes: the hyperparameters that tell its family apart (the
            translators and the language model all generate).
    """
    missing = [name for name in attributes if not hasattr(model, name)]
    if not isinstance(model, GenerativeModel):
        missing.insert(0, "generate")
    if missing:
        raise TypeError(
            f"`model` must be a model of `zoo.{builder}`; received a "
            f"{type(model).__name__} without {missing}."
        )


def _check_tokenizer(tokenizer, name, vocabulary_size):
    """The tokenizer must give exactly the ids the model was built for.

    A larger vocabulary would hand the served graph ids past the embedding
    table, which fails at serving time, and a vocabulary without the
    reserved tokens at ids 0..4 would pad, start and stop with wrong ids.
    """
    if not hasattr(tokenizer, "get_vocabulary"):
        raise TypeError(
            f"`{name}` must be a tokenizer of `keras_seq.text.make_tokenizer`; "
            f"received {type(tokenizer).__name__}."
        )
    vocabulary = list(tokenizer.get_vocabulary())
    if len(vocabulary) != vocabulary_size:
        raise ValueError(
            f"`{name}` has a vocabulary of {len(vocabulary)} tokens; the model "
            f"expects {vocabulary_size}."
        )
    head = tuple(vocabulary[: len(RESERVED_TOKENS)])
    if head != RESERVED_TOKENS:
        raise ValueError(
            f"`{name}` must start with the reserved tokens {list(RESERVED_TOKENS)} "
            f"at ids 0..{len(RESERVED_TOKENS) - 1}; found {list(head)}."
        )


def _check_preprocessor(preprocessor, model):
    """The preprocessor must give the ids and lengths the model was built for."""
    if not isinstance(preprocessor, TranslationPreprocessor):
        raise TypeError(
            "`preprocessor` must be a `keras_seq.text.TranslationPreprocessor`; "
            f"received {type(preprocessor).__name__}."
        )
    _check_tokenizer(
        preprocessor.source_tokenizer,
        "preprocessor.source_tokenizer",
        model.source_vocabulary_size,
    )
    _check_tokenizer(
        preprocessor.target_tokenizer,
        "preprocessor.target_tokenizer",
        model.target_vocabulary_size,
    )
    if preprocessor.length_limit > model.max_length:
        raise ValueError(
            f"`preprocessor` cuts sources to {preprocessor.length_limit} tokens; "
            f"the model takes at most max_length={model.max_length}."
        )


def _version_dir(export_dir, version):
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"`version` must be an int >= 1; received {version!r}.")
    path = os.path.join(os.fspath(export_dir), str(version))
    if os.path.exists(path):
        raise ValueError(
            f"`export_dir` already holds version {version} ({path}); choose "
            "another `version` or remove it."
        )
    return path


def _track(archive, *resources):
    """Track models and tokenizers; a tokenizer is built by one call first."""
    for resource in resources:
        if not getattr(resource, "built", True):
            resource(tf.constant([""]))
        archive.track(resource)


def _blank(ids):
    """(B, S) ids -> (B,) True where a sentence gave no token at all.

    Asking the tokenizer, not `tf.strings.strip`: control characters,
    zero-width spaces or a lone byte-order mark strip to nothing in the
    tokenizer but not in ASCII `strip`, and would get a made-up
    translation of an empty source.
    """
    return tf.reduce_all(tf.equal(ids, 0), axis=1)


def _guard_empty_batch(sentences, compute, empty):
    """`compute()` unless the batch is empty, then `empty()`."""
    return tf.cond(tf.equal(tf.size(sentences), 0), empty, compute)


def _string_spec(name):
    return [tf.TensorSpec([None], tf.string, name=name)]


def _ids_spec(*names):
    return [tf.TensorSpec([None, None], tf.int32, name=name) for name in names]


def export_translator(
    model,
    preprocessor,
    export_dir,
    version=DEFAULT_VERSION,
    max_new_tokens=None,
    beam_width=4,
    length_penalty=0.6,
    num_return=None,
):
    """Export a `zoo.build_translator` model with string signatures.

    Every signature tokenizes with `preprocessor` (`generate_preprocess`:
    cut to its `length_limit`, padded to a bucket length) and detokenizes
    with it, as in-process decoding does.

    Signatures:
        `serving_default`: `sentences` (B,) string -> `translations` (B,)
            string, greedy.
        `beam_search`: `sentences` (B,) -> `translations` (B, n) string and
            `scores` (B, n) float32 (length-normalised log-probabilities),
            best first; n = `num_return` (default `beam_width`).
        `tokenize`: `sentences` (B,) -> `token_ids` (B, S) int32, the
            source ids the other signatures decode from, and `truncated`
            (B,) bool, True where a sentence was cut.
        `logits`: `encoder_token_ids`, `decoder_token_ids` (B, S), (B, T)
            int32 -> `logits` (B, T, V) float32.

    Args:
        model: a model of `zoo.build_translator`.
        preprocessor: a `keras_seq.text.TranslationPreprocessor` whose
            vocabularies are the model's and whose `length_limit` is at
            most the model's `max_length`.
        export_dir: the directory that receives `<version>/`.
        version: int >= 1.
        max_new_tokens, beam_width, length_penalty, num_return: of the
            decoding (`model.generate`, `model.beam_search`).

    Returns:
        The path of the version directory.
    """
    require_tensorflow()
    _check_model(
        model,
        "build_translator",
        ("source_vocabulary_size", "target_vocabulary_size", "max_length"),
    )
    _check_preprocessor(preprocessor, model)
    path = _version_dir(export_dir, version)
    max_new_tokens = model.check_generate_input(
        np.zeros((1, 1), "int32"), max_new_tokens
    )
    num_return = num_return or beam_width

    def greedy(sentences):
        def compute():
            ids = preprocessor.generate_preprocess(sentences)
            generated = model.generate(
                ids, max_new_tokens, start_token_id=START_ID, end_token_id=END_ID
            )
            text = preprocessor.detokenize_graph(generated)
            return tf.where(_blank(ids), "", text)

        return {
            "translations": _guard_empty_batch(
                sentences, compute, lambda: tf.zeros([0], tf.string)
            )
        }

    def beam(sentences):
        def compute():
            ids = preprocessor.generate_preprocess(sentences)
            generated, scores = model.beam_search(
                ids,
                max_new_tokens,
                beam_width=beam_width,
                length_penalty=length_penalty,
                num_return=num_return,
                start_token_id=START_ID,
                end_token_id=END_ID,
            )
            flat = tf.reshape(generated, [-1, max_new_tokens])
            text = preprocessor.detokenize_graph(flat)
            text = tf.reshape(text, [-1, num_return])
            text = tf.where(_blank(ids)[:, None], "", text)
            return text, tf.cast(scores, "float32")

        def empty():
            return (
                tf.zeros([0, num_return], tf.string),
                tf.zeros([0, num_return], "float32"),
            )

        text, scores = _guard_empty_batch(sentences, compute, empty)
        return {"translations": text, "scores": scores}

    def tokenize(sentences):
        return {
            "token_ids": preprocessor.generate_preprocess(sentences),
            "truncated": preprocessor.truncated(sentences),
        }

    def logits(encoder_token_ids, decoder_token_ids):
        inputs = {
            "encoder_token_ids": encoder_token_ids,
            "decoder_token_ids": decoder_token_ids,
        }
        return {"logits": tf.cast(model(inputs, training=False), "float32")}

    archive = keras.export.ExportArchive()
    _track(archive, model, preprocessor.source_tokenizer, preprocessor.target_tokenizer)
    archive.add_endpoint("serving_default", greedy, _string_spec("sentences"))
    archive.add_endpoint("beam_search", beam, _string_spec("sentences"))
    archive.add_endpoint("tokenize", tokenize, _string_spec("sentences"))
    archive.add_endpoint(
        "logits", logits, _ids_spec("encoder_token_ids", "decoder_token_ids")
    )
    archive.write_out(path, verbose=False)
    return path


def export_language_model(
    model, tokenizer, export_dir, version=DEFAULT_VERSION, max_new_tokens=64
):
    """Export a `zoo.build_language_model` model with string signatures.

    Signatures:
        `serving_default`: `prompts` (B,) string -> `continuations` (B,)
            string, greedy; a prompt is cut to its last tokens so that
            prompt and continuation fit in `max_length`.
        `logits`: `token_ids` (B, T) int32 -> `logits` (B, T, V) float32.
    """
    require_tensorflow()
    _check_model(model, "build_language_model", ("vocabulary_size", "max_length"))
    _check_tokenizer(tokenizer, "tokenizer", model.vocabulary_size)
    path = _version_dir(export_dir, version)
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
        raise ValueError(
            f"`max_new_tokens` must be an int; received {max_new_tokens!r}."
        )
    # The served prompt is cut so that prompt and continuation fit.
    prompt_length = model.max_length - max_new_tokens
    if max_new_tokens < 1 or prompt_length < 1:
        raise ValueError(
            f"`max_new_tokens` must be in [1, {model.max_length - 1}] "
            f"(below max_length={model.max_length}); received {max_new_tokens}."
        )

    def continue_prompts(prompts):
        def compute():
            # Prompts of one length: a blank prompt starts from [END], the
            # separator the model saw between texts; others are left-padded
            # with it to the longest prompt.
            ids = tokenize_graph(tokenizer, prompts)[:, -prompt_length:]
            reversed_rows = tf.reverse(ids, axis=[1]).to_tensor(END_ID)
            missing = tf.maximum(1 - tf.shape(reversed_rows)[1], 0)
            reversed_rows = tf.pad(
                reversed_rows, [[0, 0], [0, missing]], constant_values=END_ID
            )
            prompt = tf.reverse(reversed_rows, axis=[1])
            generated = model.generate(prompt, max_new_tokens, end_token_id=END_ID)
            return detokenize_graph(tokenizer, generated)

        return {
            "continuations": _guard_empty_batch(
                prompts, compute, lambda: tf.zeros([0], tf.string)
            )
        }

    def logits(token_ids):
        return {"logits": tf.cast(model(token_ids, training=False), "float32")}

    archive = keras.export.ExportArchive()
    _track(archive, model, tokenizer)
    archive.add_endpoint("serving_default", continue_prompts, _string_spec("prompts"))
    archive.add_endpoint("logits", logits, _ids_spec("token_ids"))
    archive.write_out(path, verbose=False)
    return path


def export_classifier(
    model,
    tokenizer,
    export_dir,
    version=DEFAULT_VERSION,
    max_length=None,
    class_names=None,
):
    """Export a `zoo.build_classifier` model with string signatures.

    Signatures:
        `serving_default`: `texts` (B,) string -> `label` (B,) string (the
            class name, or its id as text), `label_id` (B,) int64 and
            `probabilities` (B, C) float32.
        `logits`: `token_ids` (B, T) int32 -> `logits` (B, C) float32.
    """
    require_tensorflow()
    config = model.get_config()
    if "num_classes" not in config:
        raise TypeError(
            "`model` must be a model of `zoo.build_classifier`; received a "
            f"{type(model).__name__} without `num_classes`."
        )
    _check_tokenizer(tokenizer, "tokenizer", config["vocabulary_size"])
    path = _version_dir(export_dir, version)
    max_length = min(max_length or config["max_length"], config["max_length"])
    num_classes = config["num_classes"]
    class_names = list(class_names or [str(i) for i in range(num_classes)])
    if len(class_names) != num_classes:
        raise ValueError(
            f"`class_names` must name the {num_classes} classes; received "
            f"{len(class_names)} names."
        )

    def classify(texts):
        def compute():
            ids = tokenize_graph(tokenizer, texts)[:, :max_length]
            ids = ids.to_tensor(PAD_ID)  # (B, S); S is 0 for blank batches
            ids = tf.pad(ids, [[0, 0], [0, tf.maximum(1 - tf.shape(ids)[1], 0)]])
            return tf.nn.softmax(tf.cast(model(ids, training=False), "float32"))

        probabilities = _guard_empty_batch(
            texts, compute, lambda: tf.zeros([0, num_classes], "float32")
        )
        label_id = tf.argmax(probabilities, axis=-1)
        return {
            "label": tf.gather(tf.constant(class_names), label_id),
            "label_id": label_id,
            "probabilities": probabilities,
        }

    def logits(token_ids):
        return {"logits": tf.cast(model(token_ids, training=False), "float32")}

    archive = keras.export.ExportArchive()
    _track(archive, model, tokenizer)
    archive.add_endpoint("serving_default", classify, _string_spec("texts"))
    archive.add_endpoint("logits", logits, _ids_spec("token_ids"))
    archive.write_out(path, verbose=False)
    return path
