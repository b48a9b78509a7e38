"""The encoder-decoder Transformer, Fig. 7.16 and Eq. (7.31)–(7.34).

Shape legend:
    B: batch size
    S: source length
    T: target length
    D: model width
    V: target vocabulary size
"""

import keras

from keras_seq.layers import (
    TokenAndPositionEmbedding,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
)
from zoo import presets as presets_lib
from zoo.common import check_positive_int, final_norm, resolve_config

DEFAULTS = {
    "source_vocabulary_size": 8000,
    "target_vocabulary_size": 8000,
    "num_encoder_layers": 2,
    "num_decoder_layers": 2,
    "model_dim": 128,
    "num_heads": 4,
    "key_dim": None,
    "value_dim": None,
    "ff_dim": 512,
    "dropout": 0.1,
    "max_length": 64,
    "positional": "sinusoidal",
    "norm_first": False,
    "tie_embeddings": False,
    "attention_bias": True,
    "scale_embeddings": True,
    "layer_norm_epsilon": 1e-5,
}


@keras.saving.register_keras_serializable(package="zoo")
class Translator(keras.Model):
    """An encoder-decoder Transformer that maps source ids to target logits.

    The encoder embeds the source (token plus position, Eq. 7.30) and runs
    `num_encoder_layers` blocks of Fig. 7.15 (a); the decoder embeds the
    target shifted right and runs `num_decoder_layers` blocks of Fig. 7.15
    (b), whose cross attention reads the encoder output `z*` with the
    source padding mask; a linear layer gives logits over the target
    vocabulary. Trained with teacher forcing, all target positions at once
    (Sec. 7.5). Cross attention is why this is a functional graph and not a
    `keras.Sequential` stack: the decoder blocks take two inputs.

    Args:
        source_vocabulary_size, target_vocabulary_size: vocabulary sizes.
            With `tie_embeddings` they must be equal (a shared vocabulary).
        num_encoder_layers, num_decoder_layers: block counts.
        model_dim: int, width p of every block.
        num_heads, key_dim, value_dim, ff_dim, dropout, norm_first,
            attention_bias, layer_norm_epsilon: see `TransformerBlock`.
        max_length: int, longest source or target sequence.
        positional: `"sinusoidal"` (Eq. 7.29) or `"learned"` (Eq. 7.28).
        tie_embeddings: bool, share one token table between the source, the
            target and the output layer (Press & Wolf, 2017).
        scale_embeddings: bool, scale token embeddings by sqrt(model_dim).

    Inputs:
        encoder_token_ids: (B, S) int, 0 = padding.
        decoder_token_ids: (B, T) int, starting with the start token.

    Outputs:
        (B, T, V) logits for the next target token at every position.
    """

    def __init__(
        self,
        source_vocabulary_size,
        target_vocabulary_size,
        num_encoder_layers,
        num_decoder_layers,
        model_dim,
        num_heads,
        ff_dim,
        key_dim=None,
        value_dim=None,
        dropout=0.1,
        max_length=64,
        positional="sinusoidal",
        norm_first=False,
        tie_embeddings=False,
        attention_bias=True,
        scale_embeddings=True,
        layer_norm_epsilon=1e-5,
        **kwargs,
    ):
        for name in (
            "source_vocabulary_size",
            "target_vocabulary_size",
            "num_encoder_layers",
            "num_decoder_layers",
            "model_dim",
        ):
            check_positive_int(locals()[name], name)
        if tie_embeddings and source_vocabulary_size != target_vocabulary_size:
            raise ValueError(
                "`tie_embeddings=True` shares one vocabulary, so "
                "`source_vocabulary_size` must equal `target_vocabulary_size`; "
                f"received {source_vocabulary_size} and {target_vocabulary_size}."
            )
        block_kwargs = {
            "num_heads": num_heads,
            "ff_dim": ff_dim,
            "key_dim": key_dim,
            "value_dim": value_dim,
            "dropout": dropout,
            "norm_first": norm_first,
            "attention_bias": attention_bias,
            "layer_norm_epsilon": layer_norm_epsilon,
        }

        # Layers.
        def embedding(vocabulary_size, name):
            return TokenAndPositionEmbedding(
                vocabulary_size,
                max_length,
                model_dim,
                positional=positional,
                scale_embeddings=scale_embeddings,
                name=name,
            )

        source_embedding = embedding(source_vocabulary_size, "source_embedding")
        target_embedding = (
            source_embedding
            if tie_embeddings
            else embedding(target_vocabulary_size, "target_embedding")
        )
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
        if not tie_embeddings:
            output_dense = keras.layers.Dense(target_vocabulary_size, name="logits")

        # Functional graph.
        encoder_ids = keras.Input((None,), dtype="int32", name="encoder_token_ids")
        decoder_ids = keras.Input((None,), dtype="int32", name="decoder_token_ids")
        x = source_embedding(encoder_ids)  # (B, S, D), carries the mask
        x = keras.layers.Dropout(dropout, name="source_dropout")(x)
        for block in encoder_blocks:
            x = block(x)
        encoded = encoder_norm(x)
        y = target_embedding(decoder_ids)  # (B, T, D)
        y = keras.layers.Dropout(dropout, name="target_dropout")(y)
        for block in decoder_blocks:
            y = block(y, encoded)
        y = decoder_norm(y)
        if tie_embeddings:
            logits = target_embedding(y, reverse=True)  # (B, T, V)
        else:
            logits = output_dense(y)  # (B, T, V)
        super().__init__(
            inputs={"encoder_token_ids": encoder_ids, "decoder_token_ids": decoder_ids},
            outputs=logits,
            **kwargs,
        )

        # Config and handles for generation.
        self.source_vocabulary_size = source_vocabulary_size
        self.target_vocabulary_size = target_vocabulary_size
        self.num_encoder_layers = num_encoder_layers
        self.num_decoder_layers = num_decoder_layers
        self.model_dim = model_dim
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim
        self.ff_dim = ff_dim
        self.dropout = dropout
        self.max_length = max_length
        self.positional = positional
        self.norm_first = norm_first
        self.tie_embeddings = tie_embeddings
        self.attention_bias = attention_bias
        self.scale_embeddings = scale_embeddings
        self.layer_norm_epsilon = layer_norm_epsilon
        self.source_embedding = source_embedding
        self.target_embedding = target_embedding
        self.encoder_blocks = encoder_blocks
        self.decoder_blocks = decoder_blocks
        self.encoder_norm = encoder_norm
        self.decoder_norm = decoder_norm
        self.output_dense = output_dense

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "source_vocabulary_size": self.source_vocabulary_size,
            "target_vocabulary_size": self.target_vocabulary_size,
            "num_encoder_layers": self.num_encoder_layers,
            "num_decoder_layers": self.num_decoder_layers,
            "model_dim": self.model_dim,
            "num_heads": self.num_heads,
            "key_dim": self.key_dim,
            "value_dim": self.value_dim,
            "ff_dim": self.ff_dim,
            "dropout": self.dropout,
            "max_length": self.max_length,
            "positional": self.positional,
            "norm_first": self.norm_first,
            "tie_embeddings": self.tie_embeddings,
            "attention_bias": self.attention_bias,
            "scale_embeddings": self.scale_embeddings,
            "layer_norm_epsilon": self.layer_norm_epsilon,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)


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
        DEFAULTS, presets_lib.TRANSLATOR_PRESETS, preset, overrides, "translator"
    )
    if "vocabulary_size" in config:
        size = config.pop("vocabulary_size")
        config["source_vocabulary_size"] = size
        config["target_vocabulary_size"] = size
    return Translator(**config)
