"""SavedModels that take strings and return strings, for TF Serving.

Each export writes `<export_dir>/<version>/` with `keras.export.ExportArchive`
(the model, its tokenizers and their vocabulary tables are tracked, so the
artifact is self-contained). Every export takes the model's preprocessor
(`keras_seq.text`), and inside every string signature the graph turns text
into ids with it exactly as in process: invalid UTF-8 becomes U+FFFD, the
text is normalised (`normalize_graph`), tokenized with the preprocessor's
tokenizers (WordPiece or SentencePiece, TensorFlow Text ops) and cut by
its rule; the graph decodes with the same cached loops as `model.generate` and
detokenizes with TensorFlow string ops. No Python runs at serving time, and
no text crashes it: an empty batch gives an empty batch, an empty (or
blank: no token at all) sentence gives an empty string, an over-long one
is truncated (a `tokenize` signature says which were). The `logits`
signatures take ids and refuse, in the graph, ids outside the vocabulary
and sequences longer than the model's `max_length`, with the messages the
model gives in process (an `InvalidArgumentError`, which a server answers
with 400).

Loading needs only TensorFlow and TensorFlow Text:

    import tensorflow as tf, tensorflow_text  # registers the text ops
    served = tf.saved_model.load("exported/1")
    served.signatures["serving_default"](sentences=tf.constant(["Hallo!"]))
"""

import json
import os

import keras
import numpy as np
import tensorflow as tf

from keras_seq import defaults
from keras_seq.generation import GenerativeModel
from keras_seq.text import (
    END_ID,
    RESERVED_TOKENS,
    ClassificationPreprocessor,
    LanguageModelPreprocessor,
    TranslationPreprocessor,
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
        builder: the `zoo` builders whose models the export takes.
        attributes: the hyperparameters that tell its family apart (the
            translators and the language model all generate).
    """
    missing = [name for name in attributes if not hasattr(model, name)]
    if not isinstance(model, GenerativeModel):
        missing.insert(0, "generate")
    if missing:
        raise TypeError(
            f"`model` must be a model of {builder}; received a "
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


def _check_preprocessor(preprocessor, kind, model, tokenizers):
    """The preprocessor must give the ids and lengths the model was built for.

    Args:
        preprocessor: what the export was given.
        kind: the preprocessor class the model needs.
        model: the model.
        tokenizers: `(attribute of the preprocessor, vocabulary size of
            the model)` pairs.
    """
    if not isinstance(preprocessor, kind):
        raise TypeError(
            f"`preprocessor` must be a `keras_seq.text.{kind.__name__}`; "
            f"received {type(preprocessor).__name__}."
        )
    for attribute, size in tokenizers:
        _check_tokenizer(
            getattr(preprocessor, attribute), f"preprocessor.{attribute}", size
        )
    limit = getattr(preprocessor, "length_limit", preprocessor.max_length)
    max_length = _max_length(model)
    if max_length is not None and limit > max_length:
        raise ValueError(
            f"`preprocessor` cuts sequences to {limit} tokens; the model takes "
            f"at most max_length={max_length}."
        )


def _max_length(model):
    """The model's `max_length`, or None for a model without one (an RNN)."""
    return model.get_config().get("max_length")


def _checked_ids(ids, name, size, size_name, max_length):
    """(B, T) ids, refused in the graph as the model refuses them in process.

    In process the model refuses ids outside `[0, size)` and sequences
    longer than its `max_length` before they reach an embedding; in a
    graph nothing is read, so the same checks run as assertions, with the
    same messages: a negative id would otherwise read another row of the
    table and a long sequence positions past it.

    Args:
        ids: (B, T) int32 tensor.
        name: the input's name in the messages.
        size: int, the vocabulary size.
        size_name: the model's attribute holding `size`.
        max_length: int, or None for a model without one.

    Returns:
        `ids`, after the checks.
    """
    low, high = tf.reduce_min(ids), tf.reduce_max(ids)
    in_range = tf.logical_or(
        tf.equal(tf.size(ids), 0), tf.logical_and(low >= 0, high < size)
    )
    message = tf.strings.format(
        f"`{name}` must lie in [0, {size}) ({size_name}={size}); received "
        "values in [{}, {}].",
        (low, high),
    )
    checks = [tf.debugging.Assert(in_range, [message])]
    if max_length is not None:
        length = tf.shape(ids)[1]
        message = tf.strings.format(
            f"`{name}` reaches past `max_length`: positions up to "
            f"max_length={max_length} are supported; received sequence length "
            "{} starting at position 0, which needs {} positions.",
            (length, length),
        )
        checks.append(tf.debugging.Assert(length <= max_length, [message]))
    with tf.control_dependencies(checks):
        return tf.identity(ids)


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


def _write_models(path, **tokenizers):
    """SentencePiece models beside the graph: `assets/source.spm`, `target.spm`.

    The graph's SentencePiece ops hold their models already, so loading
    never reads these; they let a reader of the directory (or another
    runtime) tokenize alike without the run directory.
    """
    for side, tokenizer in tokenizers.items():
        proto = getattr(tokenizer, "proto", None)
        if proto is None:  # WordPiece: its vocabulary is in the graph.
            continue
        os.makedirs(os.path.join(path, "assets"), exist_ok=True)
        with open(os.path.join(path, "assets", f"{side}.spm"), "wb") as file:
            file.write(proto)


def _track(archive, *resources):
    """Track models and tokenizers; a tokenizer is built by one call first."""
    for resource in resources:
        if not getattr(resource, "built", True):
            resource(tf.constant([""]))
        archive.track(resource)


# What a reader of the directory learns before loading it: the graph's text
# ops are TensorFlow Text's, which TensorFlow registers only on `import
# tensorflow_text`; without it the load fails with an op name and no hint.
README = """A keras-seq {what}, exported as a SavedModel: strings in, strings out.

Signatures: {signatures}.

Its text pipeline runs TensorFlow Text's ops ({ops}), which TensorFlow
knows only once tensorflow_text is imported; without it, loading fails
with "Op type not registered" and one of these names. Load it with the
tensorflow-text release of the TensorFlow that exported it (TensorFlow
{tensorflow}):

    import tensorflow as tf
    import tensorflow_text  # registers the text ops the graph names
    served = tf.saved_model.load("{version}")
    served.signatures["serving_default"]({argument}=tf.constant(["..."]))

Stock TensorFlow Serving loads it only if its build links TensorFlow Text's
ops (an image of the same minor version; otherwise a custom-ops build);
`keras-seq serve --saved-model DIR` loads it as it is.
"""


def _text_ops(path):
    """The op types of the SavedModel at `path` that TensorFlow itself does
    not define: TensorFlow Text's (WordPiece's or SentencePiece's), read
    from the written graph rather than listed by tokenizer, so the README
    names what a loader will miss."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as file:
        saved.ParseFromString(file.read())
    graph = saved.meta_graphs[0].graph_def
    nodes = list(graph.node)
    for function in graph.library.function:
        nodes.extend(function.node_def)
    # `tf.raw_ops` holds every op TensorFlow's own build registers; an op
    # library loaded later (tensorflow_text's) adds none to it.
    core = set(dir(tf.raw_ops))
    return sorted(
        {n.op for n in nodes if n.op not in core and not n.op.startswith("_")}
    )


def _write_out(archive, endpoints, path, what):
    """Writes the archive with `endpoints` ({name: (function, input spec)})
    and the README beside `saved_model.pb`; the path."""
    for name, (function, spec) in endpoints.items():
        archive.add_endpoint(name, function, spec)
    archive.write_out(path, verbose=False)
    (argument,) = [s.name for s in endpoints["serving_default"][1]]
    readme = README.format(
        what=what,
        signatures=", ".join(endpoints),
        ops=", ".join(_text_ops(path)),
        tensorflow=tf.__version__,
        version=os.path.basename(path),
        argument=argument,
    )
    with open(os.path.join(path, "README.txt"), "w", encoding="utf-8") as file:
        file.write(readme)
    return path


def _blank(ids):
    """(B, S) ids -> (B,) True where a sentence gave no token at all.

    Asking the tokenizer, not `tf.strings.strip`: control characters,
    zero-width spaces or a lone byte-order mark strip to nothing in the
    tokenizer but not in ASCII `strip`, and would get a made-up
    translation of an empty source.
    """
    return tf.reduce_all(tf.equal(ids, 0), axis=1)


def _after(checks, *tensors):
    """`tensors`, each read only once `checks` have run."""
    with tf.control_dependencies(checks):
        return tuple(tf.identity(tensor) for tensor in tensors)


def _guard_empty_batch(sentences, compute, empty):
    """`compute()` unless the batch is empty, then `empty()`."""
    return tf.cond(tf.equal(tf.size(sentences), 0), empty, compute)


def _string_spec(name):
    return [tf.TensorSpec([None], tf.string, name=name)]


def _ids_spec(*names):
    return [tf.TensorSpec([None, None], tf.int32, name=name) for name in names]


def _translator_beam_search(
    model, preprocessor, max_new_tokens, beam_width, length_penalty, num_return
):
    """The `beam_search` signature's function: sentences -> n-best
    translations and scores."""

    def beam(sentences):
        def compute():
            ids = preprocessor.generate_preprocess(sentences)
            generated, scores = model.beam_search(
                ids,
                max_new_tokens,
                beam_width=beam_width,
                length_penalty=length_penalty,
                num_return=num_return,
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

    return beam


def _translator_score(model, preprocessor, max_new_tokens):
    """The `score` signature's function: (sentence, target) pairs -> each
    target token's teacher-forced log-probability, `[END]` appended, as
    `TrainedModel.score`."""

    def score(sentences, targets):
        check = tf.debugging.assert_equal(
            tf.size(sentences),
            tf.size(targets),
            message="`targets` must hold one string per sentence",
        )
        # Every op that reads the inputs waits for the check: an assertion
        # is ordered only against stateful ops, and a concat of mismatched
        # rows could fail first with the graph's own words.
        sentences, targets = _after([check], sentences, targets)

        def compute():
            ids = preprocessor.generate_preprocess(sentences)
            # Cut to leave room for [END]; the width is the model's most new
            # tokens, so that one compiled loop serves every batch.
            rows = preprocessor.tokenize_target(targets)[:, : max_new_tokens - 1]
            ends = tf.fill([rows.nrows(), 1], tf.cast(END_ID, rows.dtype))
            rows = tf.concat([rows, tf.RaggedTensor.from_tensor(ends)], axis=1)
            target_ids = rows.to_tensor(0, shape=[None, max_new_tokens])
            target_ids = tf.cast(target_ids, "int32")
            token_scores = tf.cast(
                model.score(ids, target_ids, end_token_id=END_ID), "float32"
            )
            return tf.reduce_sum(token_scores, axis=1), token_scores, target_ids

        def empty():
            return (
                tf.zeros([0], "float32"),
                tf.zeros([0, max_new_tokens], "float32"),
                tf.zeros([0, max_new_tokens], "int32"),
            )

        log_prob, token_scores, target_ids = _guard_empty_batch(
            sentences, compute, empty
        )
        return {
            "log_prob": log_prob,
            "token_log_probs": token_scores,
            "target_ids": target_ids,
        }

    return score


def _translator_with_controls(model, preprocessor, max_new_tokens):
    """The `translate_with_controls` signature's function: greedy
    translations under the decoding controls a request sets per sentence.

    The controls are per-row inputs, not settings of the export, so that
    the server's batcher can merge requests that ask for different ones.
    Their values are checked in the graph with the messages of
    `check_control_values`.
    """

    def translate(sentences, target_prefix, min_new_tokens, repetition_penalty):
        def checks():
            for name, value in (
                ("target_prefix", target_prefix),
                ("min_new_tokens", min_new_tokens),
                ("repetition_penalty", repetition_penalty),
            ):
                yield tf.debugging.assert_equal(
                    tf.size(sentences),
                    tf.size(value),
                    message=f"`{name}` must hold one value per sentence",
                )
            # `check_control_values`' messages, for the first value out of
            # range.
            low, high = tf.reduce_min(min_new_tokens), tf.reduce_max(min_new_tokens)
            yield tf.debugging.Assert(
                low >= 0,
                [
                    tf.strings.format(
                        "`min_new_tokens` must be at least 0; received {}.", low
                    )
                ],
            )
            yield tf.debugging.Assert(
                high <= max_new_tokens,
                [
                    tf.strings.format(
                        f"`min_new_tokens` must be at most {max_new_tokens} "
                        "(max_new_tokens); received {}.",
                        high,
                    )
                ],
            )
            invalid = tf.logical_not(
                tf.math.is_finite(repetition_penalty) & (repetition_penalty > 0)
            )
            first = tf.concat([tf.boolean_mask(repetition_penalty, invalid), [1.0]], 0)[
                0
            ]
            yield tf.debugging.Assert(
                tf.logical_not(tf.reduce_any(invalid)),
                [
                    tf.strings.format(
                        "`repetition_penalty` must be a finite number above 0; "
                        "received {}.",
                        first,
                    )
                ],
            )

        def compute():
            # As in `score`: every input waits for the checks.
            prefixes, minimums, penalties = _after(
                list(checks()), target_prefix, min_new_tokens, repetition_penalty
            )
            ids = preprocessor.generate_preprocess(sentences)
            prefix = preprocessor.tokenize_target(prefixes).to_tensor(0)
            generated = model.generate(
                ids,
                max_new_tokens,
                end_token_id=END_ID,
                prefix_ids=tf.cast(prefix, "int32"),
                min_new_tokens=minimums,
                repetition_penalty=penalties,
            )
            text = preprocessor.detokenize_graph(generated)
            return tf.where(_blank(ids), "", text)

        return {
            "translations": _guard_empty_batch(
                sentences, compute, lambda: tf.zeros([0], tf.string)
            )
        }

    return translate


def _translator_logits(model):
    """The `logits` signature's function, refusing ids out of range and
    sequences past the model's `max_length` inside the graph."""
    max_length = _max_length(model)

    def logits(encoder_token_ids, decoder_token_ids):
        inputs = {
            "encoder_token_ids": _checked_ids(
                encoder_token_ids, "encoder_token_ids",
                model.source_vocabulary_size, "source_vocabulary_size", max_length,
            ),
            "decoder_token_ids": _checked_ids(
                decoder_token_ids, "decoder_token_ids",
                model.target_vocabulary_size, "target_vocabulary_size", max_length,
            ),
        }  # fmt: skip
        return {"logits": tf.cast(model(inputs, training=False), "float32")}

    return logits


def export_translator(
    model,
    preprocessor,
    export_dir,
    version=DEFAULT_VERSION,
    max_new_tokens=None,
    beam_width=defaults.BEAM_WIDTH,
    length_penalty=defaults.LENGTH_PENALTY,
    num_return=None,
):
    """Export a `zoo.build_translator` or `zoo.build_rnn_translator` model.

    Every signature tokenizes with `preprocessor` (`generate_preprocess`:
    cut to its `length_limit`, padded to a bucket length) and detokenizes
    with it, as in-process decoding does; the lengths are the
    preprocessor's, so a model without a `max_length` of its own (the RNN
    translator) exports too.

    Signatures:
        `serving_default`: `sentences` (B,) string -> `translations` (B,)
            string, greedy.
        `translate_with_controls`: `sentences`, `target_prefix` (B,)
            string, `min_new_tokens` (B,) int32 and `repetition_penalty`
            (B,) float32 -> `translations` (B,) string, greedy, each
            sentence under its own controls (as `TrainedModel.translate`
            with `beam_width=1`): the tokens of its prefix forced first
            ("" forces none), no end token before its minimum, its
            penalty on the ids already written (1 changes nothing).
        `beam_search`: `sentences` (B,) -> `translations` (B, n) string and
            `scores` (B, n) float32 (length-normalised log-probabilities),
            best first; n = `num_return` (default `beam_width`).
        `tokenize`: `sentences` (B,) -> `token_ids` (B, S) int32, the
            source ids the other signatures decode from, and `truncated`
            (B,) bool, True where a sentence was cut.
        `score`: `sentences`, `targets` (B,) string -> `log_prob` (B,)
            float32, the target's teacher-forced log-probability with
            `[END]` appended, `token_log_probs` (B, M) float32 per token
            (0 at padding) and `target_ids` (B, M) int32 (M =
            `max_new_tokens`; a longer target is cut to fit), as
            `TrainedModel.score`.
        `logits`: `encoder_token_ids`, `decoder_token_ids` (B, S), (B, T)
            int32 -> `logits` (B, T, V) float32; ids out of range and
            sequences past the model's `max_length` are refused.

    Args:
        model: a model of `zoo.build_translator` or
            `zoo.build_rnn_translator`.
        preprocessor: a `keras_seq.text.TranslationPreprocessor` whose
            vocabularies are the model's and whose `length_limit` is at
            most the model's `max_length` (where it has one).
        export_dir: the directory that receives `<version>/`.
        version: int >= 1.
        max_new_tokens: int or None: the decoding's most new tokens,
            `preprocessor.length_limit - 1` by default, as `translate`.
        beam_width, length_penalty, num_return: of the decoding
            (`model.generate`, `model.beam_search`).

    Returns:
        The path of the version directory.
    """
    require_tensorflow()
    _check_model(
        model,
        "`zoo.build_translator` or `zoo.build_rnn_translator`",
        ("source_vocabulary_size", "target_vocabulary_size"),
    )
    _check_preprocessor(
        preprocessor,
        TranslationPreprocessor,
        model,
        (
            ("source_tokenizer", model.source_vocabulary_size),
            ("target_tokenizer", model.target_vocabulary_size),
        ),
    )
    path = _version_dir(export_dir, version)
    max_new_tokens = model.check_generate_input(
        np.zeros((1, 1), "int32"), max_new_tokens or preprocessor.length_limit - 1
    )
    num_return = num_return or beam_width

    def greedy(sentences):
        def compute():
            ids = preprocessor.generate_preprocess(sentences)
            generated = model.generate(ids, max_new_tokens, end_token_id=END_ID)
            text = preprocessor.detokenize_graph(generated)
            return tf.where(_blank(ids), "", text)

        return {
            "translations": _guard_empty_batch(
                sentences, compute, lambda: tf.zeros([0], tf.string)
            )
        }

    beam = _translator_beam_search(
        model, preprocessor, max_new_tokens, beam_width, length_penalty, num_return
    )

    def tokenize(sentences):
        return {
            "token_ids": preprocessor.generate_preprocess(sentences),
            "truncated": preprocessor.truncated(sentences),
        }

    logits = _translator_logits(model)
    score = _translator_score(model, preprocessor, max_new_tokens)
    with_controls = _translator_with_controls(model, preprocessor, max_new_tokens)
    archive = keras.export.ExportArchive()
    _track(archive, model, preprocessor.source_tokenizer, preprocessor.target_tokenizer)
    endpoints = {
        "serving_default": (greedy, _string_spec("sentences")),
        "beam_search": (beam, _string_spec("sentences")),
        "tokenize": (tokenize, _string_spec("sentences")),
        "score": (score, _string_spec("sentences") + _string_spec("targets")),
        "translate_with_controls": (
            with_controls,
            _string_spec("sentences")
            + _string_spec("target_prefix")
            + [tf.TensorSpec([None], tf.int32, name="min_new_tokens")]
            + [tf.TensorSpec([None], tf.float32, name="repetition_penalty")],
        ),
        "logits": (logits, _ids_spec("encoder_token_ids", "decoder_token_ids")),
    }
    path = _write_out(archive, endpoints, path, "translator")
    # For `keras-seq serve`, which fills the controls a request leaves out;
    # TF Serving's clients send every input.
    with open(os.path.join(path, "signature_defaults.json"), "w") as file:
        json.dump({"translate_with_controls": defaults.CONTROL_INPUT_DEFAULTS}, file)
    _write_models(
        path, source=preprocessor.source_tokenizer, target=preprocessor.target_tokenizer
    )
    return path


def export_language_model(
    model, preprocessor, export_dir, version=DEFAULT_VERSION, max_new_tokens=64
):
    """Export a `zoo.build_language_model` model with string signatures.

    Prompts become ids by the rule of `LanguageModelPreprocessor` (cut to
    their last `max_length - max_new_tokens` tokens, a blank prompt as
    `[START]`, left-padded with `[END]`), as `TrainedModel.generate` makes
    them.

    Signatures:
        `serving_default`: `prompts` (B,) string -> `continuations` (B,)
            string, greedy, stopping at `[END]`.
        `tokenize`: `prompts` (B,) -> `token_ids` (B, P) int32, the ids the
            continuations start from, and `truncated` (B,) bool, True
            where a prompt was cut.
        `logits`: `token_ids` (B, T) int32 -> `logits` (B, T, V) float32;
            ids out of range and sequences past `max_length` are refused.

    Args:
        model: a model of `zoo.build_language_model`.
        preprocessor: a `keras_seq.text.LanguageModelPreprocessor` of the
            model's vocabulary and at most its `max_length`.
        export_dir: the directory that receives `<version>/`.
        version: int >= 1.
        max_new_tokens: int in [1, max_length - 1], the continuation's
            length.

    Returns:
        The path of the version directory.
    """
    require_tensorflow()
    _check_model(model, "`zoo.build_language_model`", ("vocabulary_size",))
    _check_preprocessor(
        preprocessor,
        LanguageModelPreprocessor,
        model,
        (("tokenizer", model.vocabulary_size),),
    )
    preprocessor.prompt_limit(max_new_tokens)  # Refuses it out of range.
    path = _version_dir(export_dir, version)

    def continue_prompts(prompts):
        def compute():
            prompt = preprocessor.generate_preprocess(prompts, max_new_tokens)
            generated = model.generate(prompt, max_new_tokens, end_token_id=END_ID)
            return preprocessor.detokenize_graph(generated)

        return {
            "continuations": _guard_empty_batch(
                prompts, compute, lambda: tf.zeros([0], tf.string)
            )
        }

    def tokenize(prompts):
        return {
            "token_ids": preprocessor.generate_preprocess(prompts, max_new_tokens),
            "truncated": preprocessor.truncated(prompts, max_new_tokens),
        }

    archive = keras.export.ExportArchive()
    _track(archive, model, preprocessor.tokenizer)
    endpoints = {
        "serving_default": (continue_prompts, _string_spec("prompts")),
        "tokenize": (tokenize, _string_spec("prompts")),
        "logits": (_logits(model), _ids_spec("token_ids")),
    }
    return _write_out(archive, endpoints, path, "language model")


def export_classifier(
    model, preprocessor, export_dir, version=DEFAULT_VERSION, class_names=None
):
    """Export a `zoo.build_classifier` model with string signatures.

    Texts become ids by `preprocessor.preprocess` (cut and padded to its
    `max_length`), as in-process classification makes them.

    Signatures:
        `serving_default`: `texts` (B,) string -> `label` (B,) string (the
            class name, or its id as text), `label_id` (B,) int64 and
            `probabilities` (B, C) float32.
        `tokenize`: `texts` (B,) -> `token_ids` (B, L) int32 and
            `truncated` (B,) bool, True where a text was cut.
        `logits`: `token_ids` (B, T) int32 -> `logits` (B, C) float32; ids
            out of range and sequences past `max_length` are refused.

    Args:
        model: a model of `zoo.build_classifier`.
        preprocessor: a `keras_seq.text.ClassificationPreprocessor` of the
            model's vocabulary and at most its `max_length`.
        export_dir: the directory that receives `<version>/`.
        version: int >= 1.
        class_names: the C class names, or None for the preprocessor's
            `class_names` (the labels of a training file of names), or else
            the ids as text.

    Returns:
        The path of the version directory.
    """
    require_tensorflow()
    config = model.get_config()
    if "num_classes" not in config:
        raise TypeError(
            "`model` must be a model of `zoo.build_classifier`; received a "
            f"{type(model).__name__} without `num_classes`."
        )
    _check_preprocessor(
        preprocessor,
        ClassificationPreprocessor,
        model,
        (("tokenizer", config["vocabulary_size"]),),
    )
    path = _version_dir(export_dir, version)
    num_classes = config["num_classes"]
    class_names = list(
        class_names
        or getattr(preprocessor, "class_names", None)
        or [str(i) for i in range(num_classes)]
    )
    if len(class_names) != num_classes:
        raise ValueError(
            f"`class_names` must name the {num_classes} classes; received "
            f"{len(class_names)} names."
        )

    def classify(texts):
        def compute():
            ids = preprocessor.preprocess(texts)  # (B, L)
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

    def tokenize(texts):
        return {
            "token_ids": preprocessor.preprocess(texts),
            "truncated": preprocessor.truncated(texts),
        }

    archive = keras.export.ExportArchive()
    _track(archive, model, preprocessor.tokenizer)
    endpoints = {
        "serving_default": (classify, _string_spec("texts")),
        "tokenize": (tokenize, _string_spec("texts")),
        "logits": (_logits(model), _ids_spec("token_ids")),
    }
    return _write_out(archive, endpoints, path, "classifier")


def _logits(model):
    """The `logits` signature of a one-input model, its ids checked."""
    size = model.get_config()["vocabulary_size"]
    max_length = _max_length(model)

    def logits(token_ids):
        token_ids = _checked_ids(
            token_ids, "token_ids", size, "vocabulary_size", max_length
        )
        return {"logits": tf.cast(model(token_ids, training=False), "float32")}

    return logits
