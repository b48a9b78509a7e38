"""A Marian (OPUS-MT) checkpoint in the zoo's own layers.

`load_marian(directory)` reads what transformers' `save_pretrained` writes
for a `MarianMTModel` (`config.json`, `model.safetensors` or
`pytorch_model.bin`, `vocab.json` and, for separate vocabularies,
`target_vocab.json`), builds a `zoo.Translator` with the options Marian's
architecture needs, and assigns every weight through the layers' public
`spec()` variables. Everything is read and checked before anything is
returned: a field the zoo cannot map, a missing tensor or a tensor of the
wrong shape is refused in one line naming it.

How Marian maps onto the translator's options:

| Marian (`config.json`, tensors)           | `zoo.build_translator`                 |
|-------------------------------------------|----------------------------------------|
| post-norm blocks, biased projections      | `norm_first=False`, `attention_bias`   |
| `nn.LayerNorm` (epsilon 1e-5)             | `layer_norm_epsilon=1e-5`              |
| static sinusoidal positions, sines first  | `positional="sinusoidal"`,             |
|                                           | `sinusoidal_layout="concatenated"`     |
| `max_position_embeddings`                 | `max_length`                           |
| `activation_function`                     | `activation`                           |
| `scale_embedding`                         | `scale_embeddings`                     |
| `share_encoder_decoder_embeddings`        | `tie_embeddings` (one table)           |
| `lm_head` tied to the decoder's table     | `tie_output_embedding`                 |
| `final_logits_bias`                       | `logits_bias=True` (tied output), or   |
|                                           | the `logits` dense's bias (untied)     |
| `dropout`, `attention_dropout`            | `dropout`, `attention_dropout`         |
| `decoder_start_token_id` = `<pad>`        | `[START]`, which takes `<pad>`'s row   |

Ids are the zoo's (`zoo.pretrained.vocabulary`): zoo id `z` takes the
embedding row, the output row and the logits bias of Marian id
`marian_ids[z]`, so the zoo's logits at `z` are Marian's at that id.

Transformers' tensor names (`modeling_marian.py`): `model.shared`,
`model.{encoder,decoder}.embed_tokens`, `model.{encoder,decoder}.layers.N.`
`self_attn.{q,k,v,out}_proj`, `self_attn_layer_norm`, `fc1`, `fc2`,
`final_layer_norm`, the decoder's `encoder_attn` and
`encoder_attn_layer_norm`, `lm_head`, `final_logits_bias`. Tied tensors
may be stored under one of their names only (transformers v5 writes a
shared table once), so each is looked up under all of them.

Shape legend:
    D: model width (`d_model`)
    N: heads
    H: head width (D / N)
    F: feed-forward width
    M: Marian's vocabulary size
    V: the zoo's vocabulary size (M + 2)
"""

import dataclasses
import os

import numpy as np

from zoo.pretrained import checkpoint
from zoo.pretrained.vocabulary import marian_vocabulary

SOURCE_VOCABULARY_FILE = "vocab.json"
TARGET_VOCABULARY_FILE = "target_vocab.json"

# transformers' activation names -> the translator's; "gelu" is the exact,
# erf-based GELU in both (transformers' approximate ones are other names).
_ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "swish": "swish", "silu": "silu"}

# Fields whose other values change Marian's arithmetic in ways the
# translator does not compute: each (field, the value the zoo maps).
_FIXED_FIELDS = (
    ("normalize_before", False),
    ("normalize_embedding", False),
    ("layernorm_embedding", False),
    ("add_final_layer_norm", False),
    ("static_position_embeddings", True),
    ("add_bias_logits", False),
    ("is_decoder", False),
    ("is_encoder_decoder", True),
)
# Training-time options the translator has no counterpart for; zero is
# what OPUS-MT checkpoints carry.
_ZERO_FIELDS = ("activation_dropout", "encoder_layerdrop", "decoder_layerdrop")
_SIZE_FIELDS = (
    "d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads",
    "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim",
    "max_position_embeddings",
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class MarianCheckpoint:
    """A Marian checkpoint loaded into the zoo.

    Attributes:
        model: the `zoo.Translator`, its weights assigned, in zoo ids.
        source_vocabulary: the source side's `MarianVocabulary`.
        target_vocabulary: the target side's (the same object when the
            checkpoint shares one vocabulary).
        config: the parsed `config.json`, a dict.
        translator_config: the `zoo.build_translator` arguments it was
            built with.
        shared_vocabulary: bool, `share_encoder_decoder_embeddings`.
        weights_file: the weights file read.
    """

    model: object
    source_vocabulary: object
    target_vocabulary: object
    config: dict
    translator_config: dict
    shared_vocabulary: bool
    weights_file: str


def load_marian(directory):
    """Loads a Marian checkpoint directory into a `zoo.Translator`.

    Args:
        directory: a local directory as `MarianMTModel.save_pretrained`
            writes it, with Marian's `vocab.json` (and `target_vocab.json`
            for separate vocabularies) beside it. Nothing is downloaded.

    Returns:
        A `MarianCheckpoint`.

    Raises:
        ValueError: in one line, for a `model_type` other than `"marian"`,
            a configuration field the translator cannot map (named with its
            value), a vocabulary that does not fit the configuration,
            missing or unreadable weights, or a missing or misshapen tensor
            (named with its file).
        ImportError: a missing extra (`safetensors`), naming it.
    """
    directory = os.fspath(directory)
    config = checkpoint.read_config(directory)
    shared = _shared_vocabulary(config)
    source, target = read_vocabularies(directory, config)
    translator_config = translator_options(config, source, target)
    weights = checkpoint.read_weights(directory)
    arrays = marian_arrays(weights, config, source, target)

    import zoo  # Only when a model is built: the checks above need no Keras.

    model = zoo.build_translator(**translator_config)
    assign_weights(model, arrays)
    return MarianCheckpoint(
        model=model,
        source_vocabulary=source,
        target_vocabulary=target,
        config=config,
        translator_config=translator_config,
        shared_vocabulary=shared,
        weights_file=weights.path,
    )


def _refuse(field, value, why):
    raise ValueError(f"config.json: `{field}` is {value!r}; {why}.")


def _shared_vocabulary(config):
    if config.get("model_type") != "marian":
        _refuse(
            "model_type",
            config.get("model_type"),
            'only Marian checkpoints ("marian") are imported',
        )
    shared = config.get("share_encoder_decoder_embeddings", True)
    if not isinstance(shared, bool):
        _refuse("share_encoder_decoder_embeddings", shared, "expected true or false")
    return shared


def read_vocabularies(directory, config):
    """The source and target `MarianVocabulary` of a checkpoint directory,
    checked against `config.json`'s sizes and special ids.

    Returns:
        `(source, target)`; one object twice for a shared vocabulary.
    """
    shared = _shared_vocabulary(config)
    source = _vocabulary(directory, SOURCE_VOCABULARY_FILE)
    target = source
    if not shared:
        target = _vocabulary(directory, TARGET_VOCABULARY_FILE)
    _check_size(config, "vocab_size", source, SOURCE_VOCABULARY_FILE)
    if not shared:
        _check_size(config, "decoder_vocab_size", target, TARGET_VOCABULARY_FILE)
    elif config.get("decoder_vocab_size") not in (None, source.marian_size):
        _check_size(config, "decoder_vocab_size", source, SOURCE_VOCABULARY_FILE)
    for side, vocabulary in (("source", source), ("target", target)):
        _check_special(config, "pad_token_id", "<pad>", vocabulary, side)
        _check_special(config, "eos_token_id", "</s>", vocabulary, side)
    return source, target


def _vocabulary(directory, name):
    pieces = checkpoint.read_json(directory, name, "an object of piece: id")
    return marian_vocabulary(pieces, where=os.path.join(directory, name))


def _check_size(config, field, vocabulary, name):
    size = config.get(field, config.get("vocab_size"))
    if size != vocabulary.marian_size:
        _refuse(field, size, f"{name} holds {vocabulary.marian_size} pieces")


def _check_special(config, field, piece, vocabulary, side):
    value = config.get(field)
    index = vocabulary.tokens.index(_ZOO_TOKEN[piece])
    expected = vocabulary.marian_ids[index]
    if value != expected:
        _refuse(field, value, f"the {side} vocabulary gives {piece} id {expected}")


_ZOO_TOKEN = {"<pad>": "[PAD]", "</s>": "[END]"}


def translator_options(config, source, target):
    """The `zoo.build_translator` arguments of a Marian `config.json`,
    refusing in one line each field it cannot map."""
    for field in _SIZE_FIELDS:
        value = config.get(field)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            _refuse(field, value, "expected a positive integer")
    for field, mapped in _FIXED_FIELDS:
        if field in config and config[field] != mapped:
            _refuse(field, config[field], f"the zoo's translator maps only {mapped!r}")
    for field in _ZERO_FIELDS:
        if config.get(field, 0) != 0:
            _refuse(field, config[field], "the zoo's translator has no such option")
    activation = config.get("activation_function", "gelu")
    if activation not in _ACTIVATIONS:
        _refuse(
            "activation_function",
            activation,
            f"the zoo's translator computes {sorted(_ACTIVATIONS)}",
        )
    start, pad = config.get("decoder_start_token_id"), config.get("pad_token_id")
    if start != pad:
        _refuse(
            "decoder_start_token_id",
            start,
            f"the zoo starts Marian's decoder from <pad> (pad_token_id {pad})",
        )
    for encoder_field, decoder_field in (
        ("encoder_attention_heads", "decoder_attention_heads"),
        ("encoder_ffn_dim", "decoder_ffn_dim"),
    ):
        if config.get(encoder_field) != config.get(decoder_field):
            _refuse(
                decoder_field,
                config.get(decoder_field),
                f"the zoo's translator takes one value for both sides "
                f"({encoder_field} is {config.get(encoder_field)!r})",
            )
    width, heads = config.get("d_model"), config.get("encoder_attention_heads")
    if not isinstance(width, int) or not isinstance(heads, int) or width % heads:
        _refuse("d_model", width, f"it must be a multiple of the {heads!r} heads")
    shared = config.get("share_encoder_decoder_embeddings", True)
    tied = config.get("tie_word_embeddings", True)
    return {
        "source_vocabulary_size": len(source.tokens),
        "target_vocabulary_size": len(target.tokens),
        "num_encoder_layers": config.get("encoder_layers"),
        "num_decoder_layers": config.get("decoder_layers"),
        "model_dim": width,
        "num_heads": heads,
        "ff_dim": config.get("encoder_ffn_dim"),
        "dropout": float(config.get("dropout", 0.1)),
        "attention_dropout": float(config.get("attention_dropout", 0.0)),
        "max_length": config.get("max_position_embeddings"),
        "positional": "sinusoidal",
        "sinusoidal_layout": "concatenated",
        "norm_first": False,
        "attention_bias": True,
        "layer_norm_epsilon": 1e-5,
        "scale_embeddings": bool(config.get("scale_embedding", False)),
        "activation": _ACTIVATIONS[activation],
        # One table for source, target and output only when the output is
        # tied too: without `tie_word_embeddings` transformers unties the
        # shared tables as well, so each side keeps its own and the output
        # is a dense layer.
        "tie_embeddings": bool(shared and tied),
        "tie_output_embedding": bool(tied),
        # `final_logits_bias`: a tied output's bias, or the dense's own.
        "logits_bias": True if tied else None,
        # The zoo's [START] takes <pad>'s row: Marian's start, as is.
        "decoder_start_token_id": None,
    }


@dataclasses.dataclass(frozen=True)
class MarianArrays:
    """A checkpoint's tensors laid out for the translator's layers, in zoo
    ids: `source_table` (V_s, D), `target_table` (V_t, D), `output`
    (V_t, D) untied output rows or None, `logits_bias` (V_t,), and per
    block a dict of the zoo's sublayer -> (kernel, bias) or (gamma, beta)."""

    source_table: np.ndarray
    target_table: np.ndarray
    output: object
    logits_bias: np.ndarray
    encoder_blocks: tuple
    decoder_blocks: tuple


def marian_arrays(weights, config, source, target):
    """Every tensor the translator needs from `weights` (a
    `checkpoint.Weights`), checked for presence and shape and permuted to
    zoo ids; nothing is built yet."""
    width = config["d_model"]
    heads = config["encoder_attention_heads"]
    shared = config.get("share_encoder_decoder_embeddings", True)
    tied = config.get("tie_word_embeddings", True)
    source_size, target_size = source.marian_size, target.marian_size
    # Each side's own name first: with `tie_word_embeddings` false,
    # transformers unties a shared vocabulary's tables too.
    encoder_names = ["model.encoder.embed_tokens.weight"]
    decoder_names = ["model.decoder.embed_tokens.weight"]
    if shared:
        encoder_names, decoder_names = (
            encoder_names + ["model.shared.weight"] + decoder_names,
            decoder_names + ["model.shared.weight"] + encoder_names,
        )
    if tied:
        decoder_names = decoder_names + ["lm_head.weight"]
    source_table = weights.first(encoder_names, (source_size, width))
    target_table = weights.first(decoder_names, (target_size, width))
    output = None
    if not tied:
        output = weights.get("lm_head.weight", (target_size, width))[
            list(target.marian_ids)
        ]
    # transformers treats a missing `final_logits_bias` as zeros (its
    # `_keys_to_ignore_on_load_missing`), so the zoo does too.
    bias = np.zeros((target_size,), "float32")
    if "final_logits_bias" in weights:
        bias = weights.get("final_logits_bias", (1, target_size))[0]
    layers = {
        side: tuple(
            _block(weights, f"model.{side}.layers.{i}", width, heads, config, side)
            for i in range(config[f"{side}_layers"])
        )
        for side in ("encoder", "decoder")
    }
    return MarianArrays(
        source_table=source_table[list(source.marian_ids)],
        target_table=target_table[list(target.marian_ids)],
        output=output,
        logits_bias=bias[list(target.marian_ids)],
        encoder_blocks=layers["encoder"],
        decoder_blocks=layers["decoder"],
    )


def _linear(weights, name, rows, columns):
    """transformers' `nn.Linear` (out, in) weight -> a (in, out) kernel."""
    kernel = weights.get(f"{name}.weight", (rows, columns)).T
    return kernel, weights.get(f"{name}.bias", (rows,))


def _norm(weights, name, width):
    return weights.get(f"{name}.weight", (width,)), weights.get(
        f"{name}.bias", (width,)
    )


def _attention(weights, name, width, heads):
    """q, k, v kernels (D, N, H) and biases (N, H); W_c (N, H, D) and (D,)."""
    head = width // heads
    parts = {}
    for zoo_name, marian in (("query", "q"), ("key", "k"), ("value", "v")):
        kernel, bias = _linear(weights, f"{name}.{marian}_proj", width, width)
        parts[zoo_name] = (
            kernel.reshape(width, heads, head),
            bias.reshape(heads, head),
        )
    kernel, bias = _linear(weights, f"{name}.out_proj", width, width)
    parts["output"] = (kernel.reshape(heads, head, width), bias)
    return parts


def _block(weights, prefix, width, heads, config, side):
    ff_dim = config[f"{side}_ffn_dim"]
    block = {
        "self_attention": _attention(weights, f"{prefix}.self_attn", width, heads),
        "self_attention_norm": _norm(weights, f"{prefix}.self_attn_layer_norm", width),
        "inner": _linear(weights, f"{prefix}.fc1", ff_dim, width),
        "outer": _linear(weights, f"{prefix}.fc2", width, ff_dim),
        "feed_forward_norm": _norm(weights, f"{prefix}.final_layer_norm", width),
    }
    if side == "decoder":
        block["cross_attention"] = _attention(
            weights, f"{prefix}.encoder_attn", width, heads
        )
        block["cross_attention_norm"] = _norm(
            weights, f"{prefix}.encoder_attn_layer_norm", width
        )
    return block


def assign_weights(model, arrays):
    """Writes `arrays` (a `MarianArrays`) into a translator built by
    `translator_options`, through its layers' public `spec()` variables."""
    source = model.source_embedding.spec()
    target = model.target_embedding.spec()
    _assign(source.table, arrays.source_table)
    if target.table is not source.table:
        _assign(target.table, arrays.target_table)
    if arrays.output is None:
        _assign(target.output_bias, arrays.logits_bias)
    else:
        from keras_seq.layers import layer_spec

        output = layer_spec.projection_spec(model.output_dense)
        _assign(output.kernel, arrays.output.T)
        _assign(output.bias, arrays.logits_bias)
    blocks = zip(
        (*model.encoder_blocks, *model.decoder_blocks),
        (*arrays.encoder_blocks, *arrays.decoder_blocks),
        strict=True,
    )
    for block, values in blocks:
        _assign_block(block.spec(), values)


def _assign_block(spec, values):
    for name in ("self_attention", "cross_attention"):
        if name in values:
            attention = getattr(spec, name)
            for part in ("query", "key", "value", "output"):
                projection = getattr(attention, part)
                _assign(projection.kernel, values[name][part][0])
                _assign(projection.bias, values[name][part][1])
    for name in ("self_attention_norm", "cross_attention_norm", "feed_forward_norm"):
        if name in values:
            norm = getattr(spec, name)
            _assign(norm.gamma, values[name][0])
            _assign(norm.beta, values[name][1])
    for name in ("inner", "outer"):
        projection = getattr(spec.feed_forward, name)
        _assign(projection.kernel, values[name][0])
        _assign(projection.bias, values[name][1])


def _assign(variable, array):
    if tuple(variable.shape) != tuple(array.shape):
        # The arrays were checked against the configuration the model was
        # built from; a mismatch here is a bug, not a bad checkpoint.
        raise AssertionError(
            f"{variable.path} has shape {tuple(variable.shape)}; the checkpoint "
            f"gives {tuple(array.shape)}."
        )
    variable.assign(np.ascontiguousarray(array, dtype="float32"))
