"""The decoder-only causal Transformer language model.

Shape legend:
    B: batch size
    T: sequence length
    D: model width
    V: vocabulary size
"""

import keras

from keras_seq.layers import TokenAndPositionEmbedding, TransformerDecoderBlock
from zoo import presets as presets_lib
from zoo.common import check_positive_int, final_norm, resolve_config
from zoo.encoders import _ConfigModel

DEFAULTS = {
    "vocabulary_size": 8000,
    "num_layers": 2,
    "model_dim": 128,
    "num_heads": 4,
    "key_dim": None,
    "value_dim": None,
    "ff_dim": 512,
    "dropout": 0.1,
    "max_length": 128,
    "positional": "learned",
    "norm_first": True,
    "tie_embeddings": True,
    "attention_bias": True,
    "layer_norm_epsilon": 1e-5,
}


@keras.saving.register_keras_serializable(package="zoo")
class LanguageModel(_ConfigModel):
    """Causal decoder blocks (no cross attention) and next-token logits.

    The decoder-style use of a Transformer: position t attends only to
    positions up to t (masking, Eq. 7.27), so one forward pass predicts
    every next token of a text at once.

    Inputs:
        token_ids: (B, T) int, 0 = padding.

    Outputs:
        (B, T, V) logits of the next token.
    """

    def __init__(self, **config):
        config = {**DEFAULTS, **config}
        name = config.pop("name", None)
        for key in ("vocabulary_size", "num_layers", "model_dim"):
            check_positive_int(config[key], key)
        embedding = TokenAndPositionEmbedding(
            config["vocabulary_size"],
            config["max_length"],
            config["model_dim"],
            positional=config["positional"],
            scale_embeddings=True,
            name="token_embedding",
        )
        blocks = [
            TransformerDecoderBlock(
                num_heads=config["num_heads"],
                ff_dim=config["ff_dim"],
                key_dim=config["key_dim"],
                value_dim=config["value_dim"],
                dropout=config["dropout"],
                norm_first=config["norm_first"],
                attention_bias=config["attention_bias"],
                layer_norm_epsilon=config["layer_norm_epsilon"],
                name=f"decoder_block_{i}",
            )
            for i in range(config["num_layers"])
        ]
        norm = final_norm(
            config["norm_first"], config["layer_norm_epsilon"], "decoder_norm"
        )

        token_ids = keras.Input((None,), dtype="int32", name="token_ids")
        x = embedding(token_ids)  # (B, T, D)
        x = keras.layers.Dropout(config["dropout"], name="embedding_dropout")(x)
        for block in blocks:
            x = block(x)
        x = norm(x)
        if config["tie_embeddings"]:
            logits = embedding(x, reverse=True)  # (B, T, V)
        else:
            logits = keras.layers.Dense(config["vocabulary_size"], name="logits")(x)
        super().__init__(inputs=token_ids, outputs=logits, name=name)
        self._store_config(config)
        self.token_embedding = embedding
        self.decoder_blocks = blocks
        self.decoder_norm = norm


def build_language_model(preset=None, **overrides):
    """Build a decoder-only causal Transformer language model."""
    config = resolve_config(
        DEFAULTS,
        presets_lib.LANGUAGE_MODEL_PRESETS,
        preset,
        overrides,
        "language model",
    )
    return LanguageModel(**config)
