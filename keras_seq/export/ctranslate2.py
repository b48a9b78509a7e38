"""Export to CTranslate2, the CPU inference engine of OpenNMT.

Shape legend:
    D: model width
    N: heads
    H: head width
    F: feed-forward width
    V: vocabulary size
    L: max_length

`export_ctranslate2` maps a Transformer translator (`TransformerSpec`) or a
decoder-only language model (`TransformerDecoderModelSpec`) onto
CTranslate2's specification, weight by weight, reading the Keras model's
variables by their stable paths (`encoder_block_0/self_attention/query/
kernel`, ...) and its hyperparameters from `get_config()`:

| keras-seq                                | CTranslate2                           |
|------------------------------------------|---------------------------------------|
| `norm_first`                             | `pre_norm`; the final norms           |
| token table, `scale_embeddings`          | `embeddings`, `scale_embeddings`      |
| sinusoidal or learned positions          | `position_encodings.encodings` (L, D) |
| query, key, value `(D, N, H)` kernels    | one fused `(3NH, D)` linear (self), a |
|                                          | query and a fused key-value (cross)   |
| `attention_output` `(N, H, D)`           | the attention's last linear `(D, NH)` |
| `*_layer_norm`, `layer_norm_epsilon`     | each sublayer's `layer_norm`, config  |
| feed-forward denses                      | `ffn.linear_0`, `ffn.linear_1`        |
| `logits` dense, or the tied table        | `projection` (V, D)                   |
| `[UNK]`, `[START]`, `[END]`              | `unk_token`, `bos_token`/`decoder_    |
|                                          | start_token`, `eos_token`             |

The position table is passed explicitly because ours interleaves sines and
cosines (Eq. 7.29: even features sines, odd cosines) where CTranslate2's own
table puts all sines first; the table is what the model's position layer
computes, so learned positions take the same path.

The directory also gets the run's preprocessor files (vocabularies and
`preprocessor.json`) and `tokens.json` (the special tokens and the suffix
marker), which `keras_seq.text.portable_tokenizer` reads to tokenize as the
preprocessor does without TensorFlow.

`ctranslate2` is an optional extra (`pip install "keras-seq[ctranslate2]"`);
it is imported when an export runs.
"""

import json
import os
import shutil

import keras
import numpy as np

from keras_seq.text.vocabulary import (
    END_ID,
    PAD_ID,
    RESERVED_TOKENS,
    START_ID,
    SUFFIX_INDICATOR,
    UNK_ID,
)

QUANTIZATIONS = ("float32", "int8", "int8_float32", "int16")
PREPROCESSOR_FILES = (
    "source_vocabulary.txt",
    "target_vocabulary.txt",
    "preprocessor.json",
)
TOKENS_FILE = "tokens.json"
EXPORT_FILE = "keras_seq.json"
_ACTIVATIONS = {"relu": "RELU", "gelu": "GELU"}


def require_ctranslate2():
    """Imports `ctranslate2`, or raises one line naming the extra to install."""
    try:
        import ctranslate2
    except ImportError:
        raise ImportError(
            'CTranslate2 export and decoding need the "ctranslate2" extra: '
            'pip install "keras-seq[ctranslate2]".'
        ) from None
    return ctranslate2


def _family(model):
    """'translator' or 'language_model', from the model's stable layer names."""
    names = {layer.name for layer in model.layers}
    config = model.get_config()
    if {"source_embedding", "encoder_block_0", "decoder_block_0"} <= names:
        return "translator"
    if {"token_embedding", "decoder_block_0"} <= names and "num_layers" in config:
        return "language_model"
    raise ValueError(
        "CTranslate2 export takes the Transformer translator or language model "
        f"(it has no spec for the others); received a {type(model).__name__}."
    )


class _Weights:
    """The model's variables as float32 NumPy arrays, by path."""

    def __init__(self, model):
        self.arrays = {
            v.path: np.asarray(keras.ops.convert_to_numpy(v), dtype="float32")
            for v in model.weights
        }

    def get(self, path):
        return self.arrays.get(path)

    def __getitem__(self, path):
        if path not in self.arrays:
            raise ValueError(f"The model has no variable {path!r}; it cannot export.")
        return self.arrays[path]


def _linear(spec, kernel, bias):
    """A Keras kernel (D_in, ..., D_out) or (..., D_in) -> spec (D_out, D_in)."""
    spec.weight = kernel
    if bias is not None:
        spec.bias = bias


def _projections(weights, prefix, names):
    """Kernels (D, N, H) -> one (len(names) N H, D) weight, biases fused."""
    kernels, biases = [], []
    for name in names:
        kernel = weights[f"{prefix}/{name}/kernel"]  # (D, N, H)
        kernels.append(kernel.reshape(kernel.shape[0], -1).T)  # (NH, D)
        bias = weights.get(f"{prefix}/{name}/bias")  # (N, H) or None
        biases.append(None if bias is None else bias.reshape(-1))
    bias = None if biases[0] is None else np.concatenate(biases)
    return np.concatenate(kernels), bias


def _set_attention(spec, weights, prefix, self_attention):
    if self_attention:
        _linear(
            spec.linear[0], *_projections(weights, prefix, ("query", "key", "value"))
        )
    else:
        _linear(spec.linear[0], *_projections(weights, prefix, ("query",)))
        _linear(spec.linear[1], *_projections(weights, prefix, ("key", "value")))
    kernel = weights[f"{prefix}/attention_output/kernel"]  # (N, H, D)
    _linear(
        spec.linear[-1],
        kernel.reshape(-1, kernel.shape[-1]).T,  # (D, NH)
        weights.get(f"{prefix}/attention_output/bias"),
    )


def _set_norm(spec, weights, prefix):
    spec.gamma = weights[f"{prefix}/gamma"]
    spec.beta = weights[f"{prefix}/beta"]


def _set_block(spec, weights, prefix, cross):
    _set_attention(spec.self_attention, weights, f"{prefix}/self_attention", True)
    _set_norm(
        spec.self_attention.layer_norm, weights, f"{prefix}/self_attention_layer_norm"
    )
    if cross:
        _set_attention(spec.attention, weights, f"{prefix}/cross_attention", False)
        _set_norm(
            spec.attention.layer_norm, weights, f"{prefix}/cross_attention_layer_norm"
        )
    for i, name in enumerate(("intermediate_dense", "output_dense")):
        dense = f"{prefix}/feed_forward/{name}"
        _linear(
            getattr(spec.ffn, f"linear_{i}"),
            weights[f"{dense}/kernel"].T,  # (F, D) then (D, F)
            weights.get(f"{dense}/bias"),
        )
    _set_norm(spec.ffn.layer_norm, weights, f"{prefix}/feed_forward_layer_norm")


def _position_table(model, embedding_name):
    """(L, D): what the embedding's position layer adds at every position."""
    embedding = model.get_layer(embedding_name)
    zeros = keras.ops.zeros((1, embedding.max_length, embedding.embedding_dim))
    table = embedding.position_embedding(zeros)  # (1, L, D)
    return np.asarray(keras.ops.convert_to_numpy(table), dtype="float32")[0]


def _check_heads(config, block):
    model_dim, num_heads = config["model_dim"], config["num_heads"]
    key_dim = config.get("key_dim") or model_dim // num_heads
    value_dim = config.get("value_dim") or key_dim
    if key_dim != value_dim:
        raise ValueError(
            "CTranslate2 attention has one head width, so `key_dim` must equal "
            f"`value_dim`; received {key_dim} and {value_dim}."
        )
    activation = block.get_config().get("activation", "relu")
    if activation not in _ACTIVATIONS:
        raise ValueError(
            f"CTranslate2 export supports the activations {sorted(_ACTIVATIONS)}; "
            f"the model's feed-forward layers use {activation!r}."
        )
    return key_dim, _ACTIVATIONS[activation]


def _translator_spec(model, weights):
    from ctranslate2.specs import common_spec, transformer_spec

    config = model.get_config()
    head_dim, activation = _check_heads(config, model.get_layer("encoder_block_0"))
    options = {
        "pre_norm": bool(config["norm_first"]),
        "activation": getattr(common_spec.Activation, activation),
        "head_dim": head_dim,
    }
    encoder = transformer_spec.TransformerEncoderSpec(
        config["num_encoder_layers"], config["num_heads"], **options
    )
    decoder = transformer_spec.TransformerDecoderSpec(
        config["num_decoder_layers"], config["num_heads"], **options
    )
    spec = transformer_spec.TransformerSpec(encoder, decoder)
    tied = bool(config["tie_embeddings"])
    target = "source_embedding" if tied else "target_embedding"
    for side, name, stack in (
        (encoder, "source_embedding", "encoder"),
        (decoder, target, "decoder"),
    ):
        table = weights[f"{name}/token_embedding/embeddings"]  # (V, D)
        embeddings = side.embeddings[0] if stack == "encoder" else side.embeddings
        embeddings.weight = table
        side.scale_embeddings = bool(config["scale_embeddings"])
        side.position_encodings.encodings = _position_table(model, name)
        count = config[f"num_{stack}_layers"]
        for i in range(count):
            _set_block(side.layer[i], weights, f"{stack}_block_{i}", stack == "decoder")
        if config["norm_first"]:
            _set_norm(side.layer_norm, weights, f"{stack}_norm")
    if tied:
        decoder.projection.weight = weights[
            "source_embedding/token_embedding/embeddings"
        ]
    else:
        _linear(
            decoder.projection, weights["logits/kernel"].T, weights.get("logits/bias")
        )
    return spec


def _language_model_spec(model, weights):
    from ctranslate2.specs import common_spec, transformer_spec

    config = model.get_config()
    head_dim, activation = _check_heads(config, model.get_layer("decoder_block_0"))
    spec = transformer_spec.TransformerDecoderModelSpec.from_config(
        config["num_layers"],
        config["num_heads"],
        pre_norm=bool(config["norm_first"]),
        activation=getattr(common_spec.Activation, activation),
        head_dim=head_dim,
    )
    decoder = spec.decoder
    table = weights["token_embedding/token_embedding/embeddings"]  # (V, D)
    decoder.embeddings.weight = table
    decoder.scale_embeddings = bool(model.get_layer("token_embedding").scale_embeddings)
    decoder.position_encodings.encodings = _position_table(model, "token_embedding")
    for i in range(config["num_layers"]):
        _set_block(decoder.layer[i], weights, f"decoder_block_{i}", cross=False)
    if config["norm_first"]:
        _set_norm(decoder.layer_norm, weights, "decoder_norm")
    if config["tie_embeddings"]:
        decoder.projection.weight = table
    else:
        _linear(
            decoder.projection, weights["logits/kernel"].T, weights.get("logits/bias")
        )
    return spec


def _vocabulary(directory, name, size):
    path = os.path.join(directory, name)
    with open(path, encoding="utf-8") as file:
        tokens = [line.rstrip("\n") for line in file]
    while tokens and tokens[-1] == "":
        tokens.pop()
    if len(tokens) != size or tuple(tokens[: len(RESERVED_TOKENS)]) != RESERVED_TOKENS:
        raise ValueError(
            f"{path} must hold the model's {size} tokens, starting with "
            f"{list(RESERVED_TOKENS)}; it holds {len(tokens)}."
        )
    return tokens


def export_ctranslate2(model, preprocessor_dir, output_dir, quantization="float32"):
    """Writes a CTranslate2 model directory for a translator or language model.

    Args:
        model: a `zoo.build_translator` or `zoo.build_language_model` model
            (trained on any backend).
        preprocessor_dir: the run directory holding the vocabulary files
            (`source_vocabulary.txt`, `target_vocabulary.txt`; a language
            model's one vocabulary as `source_vocabulary.txt` or
            `vocabulary.txt`) and, for a translator, `preprocessor.json`.
        output_dir: the directory to write; it must not exist yet.
        quantization: `"float32"`, `"int8"` (int8 weights, float32 or int8
            compute as CTranslate2 chooses), `"int8_float32"` or `"int16"`.

    Returns:
        `output_dir`.

    Raises:
        ValueError: for another model family, a model quantized by Keras,
            a configuration CTranslate2 cannot express, a vocabulary that
            does not fit the model, an unknown `quantization` or an existing
            `output_dir`.
        ImportError: without the `ctranslate2` extra (one line naming it).
    """
    if quantization not in QUANTIZATIONS:
        raise ValueError(
            f"`quantization` must be one of {list(QUANTIZATIONS)}; "
            f"received {quantization!r}."
        )
    output_dir = os.fspath(output_dir)
    if os.path.exists(output_dir):
        raise ValueError(f"`output_dir` {output_dir} exists; choose a new directory.")
    family = _family(model)
    _refuse_keras_quantized(model)
    require_ctranslate2()
    config = model.get_config()
    preprocessor_dir = os.fspath(preprocessor_dir)
    spec, tokens = _spec(model, family, preprocessor_dir)
    for key, value in tokens.items():
        setattr(spec.config, key, value)
    spec.config.layer_norm_epsilon = float(config["layer_norm_epsilon"])
    spec.validate()
    spec.optimize(quantization=quantization)
    os.makedirs(output_dir)
    spec.save(output_dir)
    _copy_preprocessor(preprocessor_dir, output_dir)
    _write_json(
        os.path.join(output_dir, TOKENS_FILE),
        {
            "padding": RESERVED_TOKENS[PAD_ID],
            "unknown": RESERVED_TOKENS[UNK_ID],
            "start": RESERVED_TOKENS[START_ID],
            "end": RESERVED_TOKENS[END_ID],
            "suffix_indicator": SUFFIX_INDICATOR,
        },
    )
    _write_json(
        os.path.join(output_dir, EXPORT_FILE),
        {
            "family": family,
            "max_length": int(config["max_length"]),
            "quantization": quantization,
            # Decoding may emit max_length - 1 tokens after the start token,
            # as `model.generate`.
            "max_decoding_length": int(config["max_length"]) - 1,
        },
    )
    return output_dir


def _refuse_keras_quantized(model):
    """Refuses a model that Keras quantized: CTranslate2 quantizes float
    weights itself, and Keras' int8 tables carry scales of their own that
    its specification has no place for."""
    quantized = sorted(
        layer.path
        for layer in model._flatten_layers()
        if getattr(layer, "quantization_mode", None) is not None
    )
    if quantized:
        raise ValueError(
            f"`model` is quantized (layers {quantized[:3]}...); export the "
            "float model and choose `quantization` here instead."
        )


def _spec(model, family, preprocessor_dir):
    """The CTranslate2 specification of `model` with its vocabularies, and
    the special tokens its config names."""
    weights = _Weights(model)
    config = model.get_config()
    tokens = {
        "unk_token": RESERVED_TOKENS[UNK_ID],
        "bos_token": RESERVED_TOKENS[START_ID],
        "eos_token": RESERVED_TOKENS[END_ID],
    }
    if family == "translator":
        spec = _translator_spec(model, weights)
        source = _vocabulary(
            preprocessor_dir, PREPROCESSOR_FILES[0], config["source_vocabulary_size"]
        )
        target = _vocabulary(
            preprocessor_dir, PREPROCESSOR_FILES[1], config["target_vocabulary_size"]
        )
        spec.register_source_vocabulary(source)
        spec.register_target_vocabulary(target)
        tokens["decoder_start_token"] = RESERVED_TOKENS[START_ID]
    else:
        spec = _language_model_spec(model, weights)
        name = next(
            (
                n
                for n in ("vocabulary.txt", PREPROCESSOR_FILES[0])
                if os.path.isfile(os.path.join(preprocessor_dir, n))
            ),
            "vocabulary.txt",
        )
        spec.register_vocabulary(
            _vocabulary(preprocessor_dir, name, config["vocabulary_size"])
        )
    return spec, tokens


def _copy_preprocessor(source_dir, output_dir):
    for name in PREPROCESSOR_FILES + ("vocabulary.txt",):
        path = os.path.join(source_dir, name)
        if os.path.isfile(path):
            shutil.copyfile(path, os.path.join(output_dir, name))


def _write_json(path, value):
    with open(path, "w", encoding="utf-8") as file:
        json.dump(value, file, indent=2)
        file.write("\n")
