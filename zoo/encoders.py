"""Encoder-only models: a sentence classifier and a masked language model.

Shape legend:
    B: batch size
    T: sequence length
    D: model width
    V: vocabulary size
    C: number of classes
"""

import keras
from keras import ops

from keras_seq.layers import (
    MaskedMeanPooling,
    TokenAndPositionEmbedding,
    TransformerEncoderBlock,
)
from keras_seq.layers.hashed_dropout import HashedDropout
from keras_seq.validation import check_positive_int
from zoo import presets as presets_lib
from zoo.common import (
    TokenIdsModel,
    final_norm,
    resolve_config,
)

ENCODER_DEFAULTS = {
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
    "norm_first": False,
    "attention_bias": True,
    "layer_norm_epsilon": 1e-5,
}


def _encoder_stack(config, token_ids):
    """Embedding and encoder blocks; returns (embedding layer, (B, T, D))."""
    for name in ("vocabulary_size", "num_layers", "model_dim"):
        check_positive_int(config[name], name)
    embedding = TokenAndPositionEmbedding(
        config["vocabulary_size"],
        config["max_length"],
        config["model_dim"],
        positional=config["positional"],
        scale_embeddings=True,
        name="token_embedding",
    )
    x = embedding(token_ids)  # (B, T, D), carries the padding mask
    x = HashedDropout(config["dropout"], name="embedding_dropout")(x)
    for i in range(config["num_layers"]):
        x = TransformerEncoderBlock(
            num_heads=config["num_heads"],
            ff_dim=config["ff_dim"],
            key_dim=config["key_dim"],
            value_dim=config["value_dim"],
            dropout=config["dropout"],
            norm_first=config["norm_first"],
            attention_bias=config["attention_bias"],
            layer_norm_epsilon=config["layer_norm_epsilon"],
            name=f"encoder_block_{i}",
        )(x)
    x = final_norm(config["norm_first"], config["layer_norm_epsilon"], "encoder_norm")(
        x
    )
    return embedding, x


class _ConfigModel(TokenIdsModel):
    """A functional model whose config is its builder arguments."""

    def _store_config(self, config):
        self._builder_config = dict(config)
        for name, value in config.items():
            setattr(self, name, value)

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, **self._builder_config}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@keras.saving.register_keras_serializable(package="zoo")
class Classifier(_ConfigModel):
    """Encoder blocks, masked mean pooling and a softmax classifier.

    The encoder-style use of a Transformer for sentiment: the contextual
    vectors of the real tokens are averaged into one sentence vector, and
    a dense layer gives class logits.

    Inputs:
        token_ids: (B, T) int, 0 = padding.

    Outputs:
        (B, C) class logits.
    """

    def __init__(self, num_classes=2, **config):
        config = {**ENCODER_DEFAULTS, **config}
        name = config.pop("name", None)
        check_positive_int(num_classes, "num_classes")
        token_ids = keras.Input((None,), dtype="int32", name="token_ids")
        _, x = _encoder_stack(config, token_ids)
        pooled = MaskedMeanPooling(name="pooling")(x)  # (B, D)
        pooled = HashedDropout(config["dropout"], name="pooled_dropout")(pooled)
        logits = keras.layers.Dense(num_classes, name="logits")(pooled)  # (B, C)
        super().__init__(inputs=token_ids, outputs=logits, name=name)
        self._store_config({**config, "num_classes": num_classes})


@keras.saving.register_keras_serializable(package="zoo")
class MaskedLanguageModel(_ConfigModel):
    """Encoder blocks with a masked-token head, as in BERT.

    The head (dense, GELU, layer norm, then logits tied to the token table)
    predicts every position; training labels hold the original id at the
    masked positions and 0 elsewhere, so the padding-masked loss reads only
    the masked ones. `embed_sentences` gives masked-mean sentence vectors
    of the last encoder block for semantic search.

    Inputs:
        token_ids: (B, T) int, 0 = padding.

    Outputs:
        (B, T, V) logits.
    """

    def __init__(self, **config):
        config = {**ENCODER_DEFAULTS, **config}
        name = config.pop("name", None)
        token_ids = keras.Input((None,), dtype="int32", name="token_ids")
        embedding, encoded = _encoder_stack(config, token_ids)
        x = keras.layers.Dense(
            config["model_dim"], activation="gelu", name="mlm_dense"
        )(encoded)
        x = keras.layers.LayerNormalization(
            epsilon=config["layer_norm_epsilon"], name="mlm_norm"
        )(x)
        logits = embedding(x, reverse=True)  # (B, T, V), tied to the inputs
        super().__init__(inputs=token_ids, outputs=logits, name=name)
        self._store_config(config)
        self.encoder = keras.Model(token_ids, encoded, name="encoder")
        self.pooling = MaskedMeanPooling(name="sentence_pooling")

    def embed_sentences(self, token_ids):
        """(B, T) ids -> (B, D) unit-length sentence embeddings."""
        encoded = self.encoder(token_ids, training=False)
        pooled = self.pooling(encoded, mask=ops.not_equal(token_ids, 0))
        return pooled / ops.maximum(ops.norm(pooled, axis=-1, keepdims=True), 1e-9)


def build_classifier(preset=None, **overrides):
    """Build an encoder-only sentence classifier (e.g. sentiment).

    Args:
        preset: a name in `zoo.presets.CLASSIFIER_PRESETS`, or None.
        **overrides: `Classifier` arguments, e.g. `vocabulary_size`,
            `num_classes`.
    """
    defaults = {**ENCODER_DEFAULTS, "num_classes": 2}
    config = resolve_config(
        defaults, presets_lib.CLASSIFIER_PRESETS, preset, overrides, "classifier"
    )
    return Classifier(**config)


def build_masked_language_model(preset=None, **overrides):
    """Build an encoder-only masked language model (fill-in, embeddings)."""
    config = resolve_config(
        ENCODER_DEFAULTS,
        presets_lib.ENCODER_PRESETS,
        preset,
        overrides,
        "masked language model",
    )
    return MaskedLanguageModel(**config)
