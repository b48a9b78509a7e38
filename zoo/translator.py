"""The encoder-decoder Transformer, Fig. 7.16 and Eq. (7.31)–(7.34).

Shape legend:
    B: batch size
    S: source length
    T: target length
    D: model width
    V: target vocabulary size
"""

import keras
from keras import ops

from keras_seq import defaults
from keras_seq.generation import (
    GenerativeModel,
    empty_self_attention_caches,
    resolve_max_new_tokens,
)
from keras_seq.generation.fast_step import torch_decoder_step, torch_encoder
from keras_seq.generation.stack_spec import Stack
from keras_seq.layers import (
    TokenAndPositionEmbedding,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
)
from keras_seq.layers.hashed_dropout import HashedDropout
from keras_seq.layers.sinusoidal_positional_encoding import LAYOUTS
from keras_seq.masks import check_token_ids, padding_mask
from keras_seq.text import PAD_ID, RESERVED_TOKENS, START_ID
from keras_seq.validation import (
    check_bool,
    check_choice,
    check_int_in,
    check_positive_int,
    check_token_id,
)
from zoo import presets as presets_lib
from zoo.common import (
    TokenIdsModel,
    final_norm,
    hyperparameters,
    init_defaults,
    resolve_config,
)

# The arguments the encoder and decoder blocks take from the translator's.
_BLOCK_ARGUMENTS = (
    "num_heads", "ff_dim", "key_dim", "value_dim", "dropout", "attention_dropout",
    "norm_first", "attention_bias", "layer_norm_epsilon", "activation",
)  # fmt: skip

# The feed-forward activations a translator takes: ReLU (Vaswani et al.),
# GELU and Swish (SiLU, its alias), the ones pretrained translators use and
# every fast path (PyTorch's step, CTranslate2) computes.
ACTIVATIONS = ("relu", "gelu", "swish", "silu")


def _check_config(config):
    for name in (
        "source_vocabulary_size",
        "target_vocabulary_size",
        "num_encoder_layers",
        "num_decoder_layers",
        "model_dim",
    ):
        check_positive_int(config[name], name)
    sizes = config["source_vocabulary_size"], config["target_vocabulary_size"]
    # A start token (or a prompt's first) and one token after it.
    check_int_in(config["max_length"], "max_length", 2, None, "", allow_none=False)
    check_choice(config["activation"], "activation", ACTIVATIONS)
    check_choice(config["sinusoidal_layout"], "sinusoidal_layout", LAYOUTS)
    check_bool(config["tie_output_embedding"], "tie_output_embedding")
    if config["logits_bias"] is not None:
        check_bool(config["logits_bias"], "logits_bias")
    start = config["decoder_start_token_id"]
    if start is not None:
        check_token_id(start, "decoder_start_token_id", sizes[1])
        if start == PAD_ID:
            raise ValueError(
                f"`decoder_start_token_id` must not be the padding id {PAD_ID}, "
                "which every mask hides; received 0."
            )
    if config["tie_embeddings"] and sizes[0] != sizes[1]:
        raise ValueError(
            "`tie_embeddings=True` shares one vocabulary, so "
            "`source_vocabulary_size` must equal `target_vocabulary_size`; "
            f"received {sizes[0]} and {sizes[1]}."
        )


def _embeddings(config):
    """The source and target `TokenAndPositionEmbedding` of a translator's
    `config`: one table when `tie_embeddings`, and the logits bias with the
    table the output is tied to, where it lives."""

    def embedding(vocabulary_size, name, output_bias):
        return TokenAndPositionEmbedding(
            vocabulary_size,
            config["max_length"],
            config["model_dim"],
            positional=config["positional"],
            scale_embeddings=config["scale_embeddings"],
            sinusoidal_layout=config["sinusoidal_layout"],
            output_bias=output_bias,
            name=name,
        )

    tie_embeddings = config["tie_embeddings"]
    tied_output = tie_embeddings or config["tie_output_embedding"]
    output_bias = tied_output and bool(config["logits_bias"])
    source = embedding(
        config["source_vocabulary_size"],
        "source_embedding",
        tie_embeddings and output_bias,
    )
    if tie_embeddings:
        return source, source
    target = embedding(
        config["target_vocabulary_size"], "target_embedding", output_bias
    )
    return source, target


@keras.saving.register_keras_serializable(package="zoo")
class Translator(GenerativeModel, TokenIdsModel):
    """An encoder-decoder Transformer that maps source ids to target logits.

    The encoder embeds the source (token plus position, Eq. 7.30) and runs
    `num_encoder_layers` blocks of Fig. 7.15 (a); the decoder embeds the
    target shifted right and runs `num_decoder_layers` blocks of Fig. 7.15
    (b), whose cross attention reads the encoder output `z*` with the
    source padding mask; a linear layer gives logits over the target
    vocabulary. Trained with teacher forcing, all target positions at once
    (Sec. 7.5). Cross attention is why this is a functional graph and not a
    `keras.Sequential` stack: the decoder blocks take two inputs.

    `generate` and `beam_search` (from `GenerativeModel`) translate source
    ids: the encoder runs once, its keys and values for cross attention are
    computed once, and each new token is one `decoding_step` over
    preallocated self-attention caches.

    Args:
        source_vocabulary_size, target_vocabulary_size: vocabulary sizes.
            With `tie_embeddings` they must be equal (a shared vocabulary).
        num_encoder_layers, num_decoder_layers: block counts.
        model_dim: int, width p of every block.
        num_heads, key_dim, value_dim, ff_dim, dropout, attention_dropout,
            norm_first, attention_bias, layer_norm_epsilon: see
            `TransformerBlock`.
        max_length: int, longest source or target sequence.
        positional: `"sinusoidal"` (Eq. 7.29) or `"learned"` (Eq. 7.28).
        tie_embeddings: bool, share one token table between the source, the
            target and the output layer (Press & Wolf, 2017).
        scale_embeddings: bool, scale token embeddings by sqrt(model_dim)
            before their positions are added (Vaswani et al., Sec. 3.4;
            Marian's `scale_embedding`).
        activation: the feed-forward hidden activation of every block:
            `"relu"` (Vaswani et al.), `"gelu"` (exact, erf-based) or
            `"swish"` (alias `"silu"`, Marian's default).
        sinusoidal_layout: with `positional="sinusoidal"`, `"interleaved"`
            (Eq. 7.29: column 2i a sine, 2i + 1 its cosine) or
            `"concatenated"` (all sines, then all cosines of the same
            frequencies: tensor2tensor's and Marian's table).
        tie_output_embedding: bool, the output layer is the transpose of
            the target embedding's table while the source keeps its own
            (separate vocabularies, as Marian's `lm_head` tied to its
            decoder's `embed_tokens`); `tie_embeddings` implies it.
        logits_bias: None, True or False. None: an untied output layer has
            its bias, a tied one none. True: a tied output adds a learned
            (V,) bias (Marian's `final_logits_bias`). False: the untied
            output layer has no bias.
        decoder_start_token_id: the target id decoding starts from, or
            None for the reserved `[START]` id (`default_start_token_id`);
            never the padding id 0.

    Inputs:
        encoder_token_ids: (B, S) int, 0 = padding.
        decoder_token_ids: (B, T) int, starting with the start token.

    Outputs:
        (B, T, V) logits for the next target token at every position.
    """

    label_bound = "target_vocabulary_size"
    # Never written into a translation (`keras_seq.defaults` says why).
    unsamplable_token_ids = tuple(
        RESERVED_TOKENS.index(token)
        for token in defaults.TRANSLATION_UNSAMPLABLE_TOKENS
    )

    def __init__(
        self,
        source_vocabulary_size=8000,
        target_vocabulary_size=8000,
        num_encoder_layers=2,
        num_decoder_layers=2,
        model_dim=128,
        num_heads=4,
        ff_dim=512,
        key_dim=None,
        value_dim=None,
        dropout=0.1,
        attention_dropout=None,
        max_length=64,
        positional="sinusoidal",
        norm_first=False,
        tie_embeddings=False,
        attention_bias=True,
        scale_embeddings=True,
        layer_norm_epsilon=1e-5,
        activation="relu",
        sinusoidal_layout="interleaved",
        tie_output_embedding=False,
        logits_bias=None,
        decoder_start_token_id=None,
        **kwargs,
    ):
        arguments = locals()
        config = {name: arguments[name] for name in hyperparameters(Translator)}
        _check_config(config)
        block_kwargs = {name: config[name] for name in _BLOCK_ARGUMENTS}

        # Layers.
        tied_output = tie_embeddings or tie_output_embedding
        source_embedding, target_embedding = _embeddings(config)
        encoder_blocks = [
            TransformerEncoderBlock(**block_kwargs, name=f"encoder_block_{i}")
            for i in range(num_encoder_layers)
        ]
        decoder_blocks = [
            TransformerDecoderBlock(**block_kwargs, name=f"decoder_block_{i}")
            for i in range(num_decoder_layers)
        ]
        encoder_norm = final_norm(norm_first, layer_norm_epsilon, "encoder_norm")
        decoder_norm = final_norm(norm_first, layer_norm_epsilon, "decoder_norm")
        output_dense = None
        if not tied_output:
            output_dense = keras.layers.Dense(
                target_vocabulary_size, use_bias=logits_bias is not False, name="logits"
            )

        # Functional graph.
        encoder_ids = keras.Input((None,), dtype="int32", name="encoder_token_ids")
        decoder_ids = keras.Input((None,), dtype="int32", name="decoder_token_ids")
        x = source_embedding(encoder_ids)  # (B, S, D), carries the mask
        x = HashedDropout(dropout, name="source_dropout")(x)
        for block in encoder_blocks:
            x = block(x)
        encoded = encoder_norm(x)
        y = target_embedding(decoder_ids)  # (B, T, D)
        y = HashedDropout(dropout, name="target_dropout")(y)
        for block in decoder_blocks:
            y = block(y, encoded)
        y = decoder_norm(y)
        if tied_output:
            logits = target_embedding(y, reverse=True)  # (B, T, V)
        else:
            logits = output_dense(y)  # (B, T, V)
        super().__init__(
            inputs={"encoder_token_ids": encoder_ids, "decoder_token_ids": decoder_ids},
            outputs=logits,
            **kwargs,
        )

        # Config and handles for generation.
        for name, value in config.items():
            setattr(self, name, value)
        self.source_embedding = source_embedding
        self.target_embedding = target_embedding
        self.encoder_blocks = encoder_blocks
        self.decoder_blocks = decoder_blocks
        self.encoder_norm = encoder_norm
        self.decoder_norm = decoder_norm
        self.output_dense = output_dense

    # Generation: the same layers on a second path, over caches.

    def encode(self, encoder_token_ids, training=False):
        """Source ids (B, S) -> encoder output z* (B, S, D) and its mask."""
        source_mask = padding_mask(encoder_token_ids)  # (B, S)
        x = self.source_embedding(encoder_token_ids)
        for block in self.encoder_blocks:
            x = block(x, padding_mask=source_mask, training=training)
        return self.encoder_norm(x), source_mask

    @property
    def default_start_token_id(self):
        """The target id decoding starts from: `decoder_start_token_id`, or
        the reserved `[START]` id when it is None."""
        if self.decoder_start_token_id is None:
            return START_ID
        return self.decoder_start_token_id

    @property
    def tied_output(self):
        """Whether the output layer is the target table's transpose."""
        return bool(self.tie_embeddings or self.tie_output_embedding)

    def _logits(self, y):
        if self.tied_output:
            return self.target_embedding(y, reverse=True)
        return self.output_dense(y)

    def cross_attention_caches(self, encoded):
        """Keys and values of z* for every decoder block, computed once.

        Returns:
            A tuple with one (B, 2, N, S, H) cache per decoder block.
        """
        return tuple(
            b.compute_cross_attention_cache(encoded) for b in self.decoder_blocks
        )

    def empty_self_attention_caches(self, batch_size, length):
        """Zeroed self-attention caches, one (B, 2, N, L, H) per block.

        See `keras_seq.generation.empty_self_attention_caches`.
        """
        return empty_self_attention_caches(
            self.decoder_blocks, batch_size, length, self.compute_dtype
        )

    def cross_attention_weights(self, encoder_token_ids, decoder_token_ids):
        """Cross-attention weights of the last decoder block, as in Fig. 7.11.

        Returns:
            (B, N, T, S) weights: row t says where output t looked in the
            source.
        """
        encoded, source_mask = self.encode(encoder_token_ids)
        target_mask = padding_mask(decoder_token_ids)  # (B, T)
        y = self.target_embedding(decoder_token_ids)
        for block in self.decoder_blocks[:-1]:
            y = block(
                y,
                encoded,
                decoder_padding_mask=target_mask,
                encoder_padding_mask=source_mask,
            )
        _, weights = self.decoder_blocks[-1](
            y,
            encoded,
            decoder_padding_mask=target_mask,
            encoder_padding_mask=source_mask,
            return_attention_scores=True,
        )
        return weights

    # `generate` and `beam_search` come from `GenerativeModel`; its hooks:

    def check_generate_input(self, token_ids, max_new_tokens=None):
        """Validate source ids; returns `max_new_tokens` or its default.

        The output has at most `max_length - 1` tokens (its positions
        after the start token), the default.
        """
        check_token_ids(token_ids, "token_ids", self.source_vocabulary_size)
        if token_ids.shape[1] is not None and token_ids.shape[1] > self.max_length:
            raise ValueError(
                f"`token_ids` has length {token_ids.shape[1]}; the model's "
                f"max_length is {self.max_length}."
            )
        max_new_tokens = resolve_max_new_tokens(max_new_tokens, self.max_length - 1)
        if not 0 < max_new_tokens < self.max_length:
            raise ValueError(
                f"`max_new_tokens` must be in [1, {self.max_length - 1}] "
                f"(max_length - 1); received {max_new_tokens}."
            )
        return max_new_tokens

    def start_decoding(self, token_ids, max_new_tokens, start_token_id):
        """Encode the source once: `(start, context, cache)`.

        See `GenerativeModel.start_decoding`. `context` is `(encoded,
        source_mask, cross_caches)`, from `encode` and
        `cross_attention_caches`; `cache` is the zeroed self-attention
        caches for `max_new_tokens` positions.
        """
        # The encoder runs once; its output, mask and cross-attention keys
        # and values stay fixed while the self-attention caches fill.
        encoded, source_mask = self.encode(token_ids)
        context = (encoded, source_mask, self.cross_attention_caches(encoded))
        return self._start(token_ids, max_new_tokens, start_token_id, context)

    def _start(self, token_ids, max_new_tokens, start_token_id, context):
        batch_size = ops.shape(token_ids)[0]
        cache = self.empty_self_attention_caches(batch_size, max_new_tokens)
        start = ops.full((batch_size, 1), start_token_id, dtype="int32")
        return start, context, cache

    def decoding_step(self, token_ids, index, context, cache):
        """One decoder position over the caches (Eq. 7.34).

        See `GenerativeModel.decoding_step`: (B, 1) target ids at `index`
        -> (B, V) logits of the next target token and the updated
        self-attention caches.
        """
        encoded, source_mask, cross_caches = context
        y = self.target_embedding(token_ids, start_index=index)  # (B, 1, D)
        updated = []
        for i, block in enumerate(self.decoder_blocks):
            y, self_cache, _ = block(
                y,
                encoded,
                encoder_padding_mask=source_mask,
                self_attention_cache=cache[i],
                self_attention_cache_update_index=index,
                cross_attention_cache=cross_caches[i],
            )
            updated.append(self_cache)
        logits = self._logits(self.decoder_norm(y))  # (B, 1, V)
        return logits[:, 0, :], tuple(updated)

    def encoder_stack(self):
        """The encoder's layers as a `keras_seq.generation.stack_spec.Stack`,
        what the fast paths (PyTorch's step, the CTranslate2 writer) read."""
        return Stack(
            self.source_embedding, tuple(self.encoder_blocks), self.encoder_norm
        )

    def decoder_stack(self):
        """The decoder's layers as a `Stack`; no output layer when tied
        (the target embedding's spec then holds the logits bias, if any)."""
        return Stack(
            self.target_embedding,
            tuple(self.decoder_blocks),
            self.decoder_norm,
            None if self.tied_output else self.output_dense,
        )

    def fast_start_decoding(self):
        """`start_decoding` in plain PyTorch (`keras_seq.generation.fast_step`)."""
        encoder = torch_encoder(self.encoder_stack())
        step = torch_decoder_step(self.decoder_stack())
        if encoder is None or step is None:
            return None

        def start(token_ids, max_new_tokens, start_token_id):
            encoded, source_mask = encoder(token_ids)
            context = (encoded, source_mask, step.cross_attention_caches(encoded))
            return self._start(token_ids, max_new_tokens, start_token_id, context)

        return start

    def fast_decoding_step(self):
        """`decoding_step` in plain PyTorch (`keras_seq.generation.fast_step`)."""
        step = torch_decoder_step(self.decoder_stack())
        if step is None:
            return None

        def decode(token_ids, index, context, cache):
            _, source_mask, cross_caches = context
            return step(token_ids, index, cache, cross_caches, source_mask)

        return decode


def build_translator(preset=None, **overrides):
    """Build an encoder-decoder Transformer translator.

    Args:
        preset: name of a preset in `zoo.presets.TRANSLATOR_PRESETS`
            (`"tiny"`, `"small"`, `"book"`, `"base"`, `"big"`), or None for
            the defaults.
        **overrides: any `Translator` argument; `vocabulary_size` sets both
            vocabularies.

    Returns:
        A `Translator`, a functional `keras.Model`.

    Example:
    >>> model = build_translator("tiny")
    >>> sorted(model.input)
    ['decoder_token_ids', 'encoder_token_ids']
    """
    config = resolve_config(
        init_defaults(Translator),
        presets_lib.TRANSLATOR_PRESETS,
        preset,
        overrides,
        "translator",
    )
    if "vocabulary_size" in config:
        size = config.pop("vocabulary_size")
        config["source_vocabulary_size"] = size
        config["target_vocabulary_size"] = size
    return Translator(**config)
