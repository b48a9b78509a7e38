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
from keras_seq.masks import padding_mask
from keras_seq.validation import check_positive_int
from zoo import presets as presets_lib
from zoo.common import (
    TokenIdsModel,
    check_model_kwargs,
    final_norm,
    hyperparameters,
    init_defaults,
    resolve_config,
)


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
            attention_dropout=config["attention_dropout"],
            norm_first=config["norm_first"],
            attention_bias=config["attention_bias"],
            layer_norm_epsilon=config["layer_norm_epsilon"],
            name=f"encoder_block_{i}",
        )(x)
    x = final_norm(config["norm_first"], config["layer_norm_epsilon"], "encoder_norm")(
        x
    )
    return embedding, x


@keras.saving.register_keras_serializable(package="zoo")
class Classifier(TokenIdsModel):
    """Encoder blocks, masked mean pooling and a softmax classifier.

    The encoder-style use of a Transformer for sentiment: the contextual
    vectors of the real tokens are averaged into one sentence vector, and
    a dense layer gives class logits.

    Args:
        vocabulary_size: int, number of token ids V (0 is padding).
        num_layers: int, number of encoder blocks.
        model_dim: int, width D of every block.
        num_heads, key_dim, value_dim, ff_dim, norm_first, attention_bias,
            layer_norm_epsilon: see `keras_seq.layers.TransformerEncoderBlock`.
        dropout: float in [0, 1), in the blocks and on the embeddings.
        attention_dropout: float or None, on the attention weights (`None`:
            `dropout`).
        max_length: int, longest input sequence.
        positional: `"learned"` (Eq. 7.28) or `"sinusoidal"` (Eq. 7.29).
        num_classes: int, number of classes C.
        **kwargs: `name` and `trainable`, passed to `keras.Model`.

    Inputs:
        token_ids: (B, T) int, 0 = padding.

    Outputs:
        (B, C) class logits.

    Example:
    >>> model = Classifier(vocabulary_size=100, num_layers=1, model_dim=16,
    ...                    num_heads=2, ff_dim=32, num_classes=3)
    >>> tuple(model(keras.ops.ones((2, 5), "int32")).shape)
    (2, 3)
    """

    label_bound = "num_classes"

    def __init__(
        self,
        vocabulary_size=8000,
        num_layers=2,
        model_dim=128,
        num_heads=4,
        key_dim=None,
        value_dim=None,
        ff_dim=512,
        dropout=0.1,
        attention_dropout=None,
        max_length=128,
        positional="learned",
        norm_first=False,
        attention_bias=True,
        layer_norm_epsilon=1e-5,
        num_classes=2,
        **kwargs,
    ):
        check_model_kwargs(kwargs, Classifier, "classifier")
        arguments = locals()
        config = {name: arguments[name] for name in hyperparameters(Classifier)}
        check_positive_int(num_classes, "num_classes")

        # Functional graph.
        token_ids = keras.Input((None,), dtype="int32", name="token_ids")
        _, x = _encoder_stack(config, token_ids)
        pooled = MaskedMeanPooling(name="pooling")(x)  # (B, D)
        pooled = HashedDropout(dropout, name="pooled_dropout")(pooled)
        logits = keras.layers.Dense(num_classes, name="logits")(pooled)  # (B, C)
        super().__init__(inputs=token_ids, outputs=logits, **kwargs)

        # Config.
        for name, value in config.items():
            setattr(self, name, value)

    def label_size(self):
        # One logit is read by a binary loss, whose targets are 0/1 or
        # probabilities, not ids below `num_classes`.
        if self.num_classes == 1:
            return None
        return super().label_size()


@keras.saving.register_keras_serializable(package="zoo")
class MaskedLanguageModel(TokenIdsModel):
    """Encoder blocks with a masked-token head, as in BERT.

    The head (dense, GELU, layer norm, then logits tied to the token table)
    predicts every position; training labels hold the original id at the
    masked positions and 0 elsewhere, so the padding-masked loss reads only
    the masked ones. `embed_sentences` gives masked-mean sentence vectors
    of the last encoder block for semantic search.

    Args:
        vocabulary_size: int, number of token ids V (0 is padding).
        num_layers: int, number of encoder blocks.
        model_dim: int, width D of every block.
        num_heads, key_dim, value_dim, ff_dim, norm_first, attention_bias,
            layer_norm_epsilon: see `keras_seq.layers.TransformerEncoderBlock`.
        dropout: float in [0, 1), in the blocks and on the embeddings.
        attention_dropout: float or None, on the attention weights (`None`:
            `dropout`).
        max_length: int, longest input sequence.
        positional: `"learned"` (Eq. 7.28) or `"sinusoidal"` (Eq. 7.29).
        **kwargs: `name` and `trainable`, passed to `keras.Model`.

    Inputs:
        token_ids: (B, T) int, 0 = padding.

    Outputs:
        (B, T, V) logits.

    Example:
    >>> model = MaskedLanguageModel(vocabulary_size=100, num_layers=1,
    ...                             model_dim=16, num_heads=2, ff_dim=32)
    >>> tuple(model(keras.ops.ones((2, 5), "int32")).shape)
    (2, 5, 100)

    References:
        Devlin et al., "BERT: Pre-training of Deep Bidirectional
        Transformers for Language Understanding", NAACL 2019.
    """

    label_bound = "vocabulary_size"

    def __init__(
        self,
        vocabulary_size=8000,
        num_layers=2,
        model_dim=128,
        num_heads=4,
        key_dim=None,
        value_dim=None,
        ff_dim=512,
        dropout=0.1,
        attention_dropout=None,
        max_length=128,
        positional="learned",
        norm_first=False,
        attention_bias=True,
        layer_norm_epsilon=1e-5,
        **kwargs,
    ):
        check_model_kwargs(kwargs, MaskedLanguageModel, "masked language model")
        arguments = locals()
        config = {
            name: arguments[name] for name in hyperparameters(MaskedLanguageModel)
        }

        # Functional graph. The head stays two plain layers of this graph:
        # Keras stores a functional model's weights under paths made from
        # its layers' class names (`layers/dense`, `layers/layer_normalization`),
        # and wrapping them in one head layer would move those paths, so
        # files saved with this layout would no longer load.
        token_ids = keras.Input((None,), dtype="int32", name="token_ids")
        embedding, encoded = _encoder_stack(config, token_ids)
        x = keras.layers.Dense(model_dim, activation="gelu", name="mlm_dense")(encoded)
        x = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, name="mlm_norm"
        )(x)
        logits = embedding(x, reverse=True)  # (B, T, V), tied to the inputs
        super().__init__(inputs=token_ids, outputs=logits, **kwargs)

        # Config and handles.
        for name, value in config.items():
            setattr(self, name, value)
        self.encoder = keras.Model(token_ids, encoded, name="encoder")
        self.pooling = MaskedMeanPooling(name="sentence_pooling")

    def embed_sentences(self, token_ids):
        """Unit-length sentence embeddings for semantic search.

        Args:
            token_ids: (B, T) int, 0 = padding.

        Returns:
            (B, D) masked means of the last encoder block, L2-normalized.
        """
        encoded = self.encoder(token_ids, training=False)
        pooled = self.pooling(encoded, mask=padding_mask(token_ids))
        return pooled / ops.maximum(ops.norm(pooled, axis=-1, keepdims=True), 1e-9)


def build_classifier(preset=None, **overrides):
    """Build an encoder-only sentence classifier (e.g. sentiment).

    Args:
        preset: a name in `zoo.presets.CLASSIFIER_PRESETS` (`"tiny"`,
            `"small"`), or None for the defaults.
        **overrides: any `Classifier` argument, e.g. `vocabulary_size`,
            `num_classes`.

    Returns:
        A `Classifier`, a functional `keras.Model`.

    Example:
    >>> model = build_classifier("tiny", num_classes=3)
    >>> tuple(model(keras.ops.ones((2, 5), "int32")).shape)
    (2, 3)
    """
    config = resolve_config(
        init_defaults(Classifier),
        presets_lib.CLASSIFIER_PRESETS,
        preset,
        overrides,
        "classifier",
    )
    return Classifier(**config)


def build_masked_language_model(preset=None, **overrides):
    """Build an encoder-only masked language model (fill-in, embeddings).

    Args:
        preset: a name in `zoo.presets.ENCODER_PRESETS` (`"tiny"`,
            `"small"`), or None for the defaults.
        **overrides: any `MaskedLanguageModel` argument, e.g.
            `vocabulary_size`, `max_length`.

    Returns:
        A `MaskedLanguageModel`, a functional `keras.Model`.

    Example:
    >>> model = build_masked_language_model("tiny")
    >>> tuple(model(keras.ops.ones((2, 5), "int32")).shape)
    (2, 5, 100)
    """
    config = resolve_config(
        init_defaults(MaskedLanguageModel),
        presets_lib.ENCODER_PRESETS,
        preset,
        overrides,
        "masked language model",
    )
    return MaskedLanguageModel(**config)
