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
CTranslate2's specification, weight by weight, from the flat weight spec
of each of the model's stacks (`keras_seq.generation.stack_spec.flatten`
over `model.encoder_stack()` and `model.decoder_stack()`, the spec
PyTorch's decoding step reads too), and its hyperparameters from
`get_config()`; what it cannot express (`stack_spec.refusal`: heads whose
`value_dim` differs from `key_dim`, an activation other than ReLU, GELU
or Swish, a quantized or mixed-precision layer, ...) is refused in one line
naming the option:

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
| `activation` relu, gelu, swish / silu    | `activation` RELU, GELU, SWISH        |
| `logits` dense, or the tied table        | `projection` (V, D)                   |
| the tied output's `logits_bias`          | `projection.bias` (V,)                |
| `[UNK]`, `[START]` (or the               | `unk_token`, `bos_token`/`decoder_    |
| `decoder_start_token_id`), `[END]`       | start_token`, `eos_token`             |

The position table is passed explicitly because the default one interleaves
sines and cosines (Eq. 7.29: even features sines, odd cosines) where
CTranslate2's own table puts all sines first; the table is what the model's
position layer computes, so the concatenated layout and learned positions
take the same path.

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

from keras_seq.generation import stack_spec
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
# By the layers' serialized names (`"swish"` serializes as `"silu"`).
_ACTIVATIONS = {"relu": "RELU", "gelu": "GELU", "silu": "SWISH"}


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


def _linear(spec, kernel, bias):
    """A flat (D_in, D_out) kernel and its bias -> spec (D_out, D_in)."""
    spec.weight = kernel.T
    if bias is not None:
        spec.bias = bias


def _set_attention(spec, attention, self_attention):
    """`FlatAttention` -> one fused (3NH, D) linear (self), or a query and a
    fused key-value linear (cross), then W_c as (D, NH)."""
    if self_attention:
        _linear(spec.linear[0], *attention.fused)
    else:
        _linear(spec.linear[0], *attention.query)
        _linear(spec.linear[1], *attention.fused)
    _linear(spec.linear[-1], *attention.output)


def _set_norm(spec, norm):
    spec.gamma = norm.gamma
    spec.beta = norm.beta


def _set_block(spec, block):
    _set_attention(spec.self_attention, block.self_attention, True)
    _set_norm(spec.self_attention.layer_norm, block.self_attention_norm)
    if block.cross_attention is not None:
        _set_attention(spec.attention, block.cross_attention, False)
        _set_norm(spec.attention.layer_norm, block.cross_attention_norm)
    _linear(spec.ffn.linear_0, *block.inner)
    _linear(spec.ffn.linear_1, *block.outer)
    _set_norm(spec.ffn.layer_norm, block.feed_forward_norm)


def _flat(stack):
    """The stack's flat NumPy spec, or one line naming what CTranslate2
    cannot express."""
    reason = stack_spec.refusal(
        stack, equal_head_widths=True, activations=tuple(_ACTIVATIONS)
    )
    if reason is not None:
        raise ValueError(
            f"CTranslate2 cannot express this model: {reason} (its attention "
            f"has one head width; its activations are {sorted(_ACTIVATIONS)})."
        )
    return stack_spec.flatten(stack, "numpy")


def _options(flat, config):
    from ctranslate2.specs import common_spec

    block = flat.blocks[0]
    return {
        "pre_norm": bool(config["norm_first"]),
        "activation": getattr(
            common_spec.Activation, _ACTIVATIONS[block.activation_name]
        ),
        "head_dim": block.self_attention.key_dim,
    }


def _set_stack(side, flat, encoder):
    embeddings = side.embeddings[0] if encoder else side.embeddings
    embeddings.weight = flat.table  # (V, D)
    side.scale_embeddings = flat.scale != 1.0
    side.position_encodings.encodings = flat.positions  # (L, D)
    for layer, block in zip(side.layer, flat.blocks, strict=True):
        _set_block(layer, block)
    if flat.final_norm is not None:
        _set_norm(side.layer_norm, flat.final_norm)


def _set_projection(decoder, flat):
    if flat.output is None:
        decoder.projection.weight = flat.table  # tied: (V, D)
        if flat.output_bias is not None:
            decoder.projection.bias = flat.output_bias  # (V,)
    else:
        _linear(decoder.projection, *flat.output)


def _translator_spec(model):
    from ctranslate2.specs import transformer_spec

    config = model.get_config()
    source, target = _flat(model.encoder_stack()), _flat(model.decoder_stack())
    options = _options(source, config)
    encoder = transformer_spec.TransformerEncoderSpec(
        len(source.blocks), config["num_heads"], **options
    )
    decoder = transformer_spec.TransformerDecoderSpec(
        len(target.blocks), config["num_heads"], **options
    )
    _set_stack(encoder, source, encoder=True)
    _set_stack(decoder, target, encoder=False)
    _set_projection(decoder, target)
    return transformer_spec.TransformerSpec(encoder, decoder)


def _language_model_spec(model):
    from ctranslate2.specs import transformer_spec

    config = model.get_config()
    flat = _flat(model.decoder_stack())
    spec = transformer_spec.TransformerDecoderModelSpec.from_config(
        len(flat.blocks), config["num_heads"], **_options(flat, config)
    )
    _set_stack(spec.decoder, flat, encoder=False)
    _set_projection(spec.decoder, flat)
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
    _refuse_keras_quantized(model, family)
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


def _stacks(model, family):
    if family == "translator":
        return [model.encoder_stack(), model.decoder_stack()]
    return [model.decoder_stack()]


def _refuse_keras_quantized(model, family):
    """Refuses a model that Keras quantized: CTranslate2 quantizes float
    weights itself, and Keras' int8 tables carry scales of their own that
    its specification has no place for."""
    for stack in _stacks(model, family):
        reason = stack_spec.refusal(stack)
        if reason is not None and reason.startswith("quantization_mode="):
            raise ValueError(
                f"`model` is quantized ({reason}); export the float model and "
                "choose `quantization` here instead."
            )


def _spec(model, family, preprocessor_dir):
    """The CTranslate2 specification of `model` with its vocabularies, and
    the special tokens its config names."""
    config = model.get_config()
    tokens = {
        "unk_token": RESERVED_TOKENS[UNK_ID],
        "bos_token": RESERVED_TOKENS[START_ID],
        "eos_token": RESERVED_TOKENS[END_ID],
    }
    if family == "translator":
        spec = _translator_spec(model)
        source = _vocabulary(
            preprocessor_dir, PREPROCESSOR_FILES[0], config["source_vocabulary_size"]
        )
        target = _vocabulary(
            preprocessor_dir, PREPROCESSOR_FILES[1], config["target_vocabulary_size"]
        )
        spec.register_source_vocabulary(source)
        spec.register_target_vocabulary(target)
        start = config.get("decoder_start_token_id")
        tokens["decoder_start_token"] = target[START_ID if start is None else start]
    else:
        spec = _language_model_spec(model)
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
    # A SentencePiece preprocessor's models go too: the portable tokenizer
    # reads them.
    for name in PREPROCESSOR_FILES + ("vocabulary.txt", "source.spm", "target.spm"):
        path = os.path.join(source_dir, name)
        if os.path.isfile(path):
            shutil.copyfile(path, os.path.join(output_dir, name))


def _write_json(path, value):
    with open(path, "w", encoding="utf-8") as file:
        json.dump(value, file, indent=2)
        file.write("\n")
