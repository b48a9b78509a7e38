"""Token embeddings plus learned or sinusoidal position embeddings.

Shape legend:
    B: batch size
    T: sequence length
    V: vocabulary size
    D: embedding width (`embedding_dim`)
"""

import math

import keras
from keras import ops

from keras_seq import masks as masks_lib
from keras_seq.layers import attention_kernels as kernels
from keras_seq.layers import layer_spec
from keras_seq.layers.learned_positional_embedding import (
    LearnedPositionalEmbedding,
    check_static_length,
)
from keras_seq.layers.sinusoidal_positional_encoding import (
    LAYOUTS,
    SinusoidalPositionalEncoding,
)
from keras_seq.validation import (
    check_bool,
    check_choice,
    check_positive_int,
    clone_initializer,
)

POSITIONAL_KINDS = ("learned", "sinusoidal")


def _is_integer(x):
    dtype = keras.backend.standardize_dtype(x.dtype)
    return dtype.startswith("int") or dtype.startswith("uint")


@keras.saving.register_keras_serializable(package="keras_seq")
class TokenAndPositionEmbedding(keras.layers.Layer):
    """Embeds token ids and adds the embeddings of their positions.

    The input of a Transformer (Fig. 7.16): each token id is looked up in a
    (V, D) table, optionally scaled by `sqrt(D)` as in Vaswani et al., and
    the embedding of its position is added, either learned (the `W_3 e_t`
    term of Eq. 7.28) or the fixed sine and cosine code of Eq. (7.29), added
    as in Eq. (7.30).

    Tied as an output layer (`reverse=True`) it may add a learned (V,) bias
    to the logits (`output_bias=True`), as Marian's `final_logits_bias`.

    Token id 0 is padding: with `mask_zero=True` the layer emits a (B, T)
    boolean padding mask, True for real tokens, which Keras carries through
    the functional graph to the layers that follow.

    Args:
        vocabulary_size: int, the number of token ids V.
        max_length: int, the longest sequence the model accepts (the size of
            the learned position table). Longer sequences are refused for
            both kinds of position embedding.
        embedding_dim: int, the embedding width D; even for
            `positional="sinusoidal"`.
        positional: `"learned"` or `"sinusoidal"`.
        mask_zero: bool, whether token id 0 is masked as padding.
        scale_embeddings: bool, multiply the token embeddings by `sqrt(D)`
            before adding positions, as in Vaswani et al., Sec. 3.4.
        max_wavelength: float, the base M of Eq. (7.29) for
            `positional="sinusoidal"`.
        sinusoidal_layout: `"interleaved"` (Eq. 7.29) or `"concatenated"`
            (all sines, then all cosines, as Marian's table), for
            `positional="sinusoidal"`; see `sinusoidal_encoding`.
        output_bias: bool, whether the tied output layer (`reverse=True`)
            adds a learned (V,) bias, initialized to zeros.
        embeddings_initializer: initializer of the token table and of the
            learned position table.
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        token_ids: (B, T) integer tensor; with `reverse=True`, (B, T, D)
            hidden states.
        reverse: bool. If True, return `hidden @ token_table^T`, the logits
            of an output layer tied to the input embedding.
        start_index: int or scalar integer tensor, the position of the first
            token, e.g. the cache index while decoding one token at a time.

    Returns:
        (B, T, D) embeddings in the layer's compute dtype, carrying a (B, T)
        padding mask when `mask_zero=True`; with `reverse=True`, (B, T, V)
        logits.

    Example:
    >>> layer = TokenAndPositionEmbedding(
    ...     vocabulary_size=100, max_length=16, embedding_dim=8
    ... )
    >>> tuple(layer(keras.ops.array([[5, 7, 0]])).shape)
    (1, 3, 8)

    References:
        Vaswani et al., "Attention Is All You Need", 2017, Sec. 3.4, 3.5.
        Devlin et al., "BERT: Pre-training of Deep Bidirectional
        Transformers for Language Understanding", 2019.
    """

    def __init__(
        self,
        vocabulary_size,
        max_length,
        embedding_dim,
        positional="learned",
        mask_zero=True,
        scale_embeddings=False,
        max_wavelength=10000,
        embeddings_initializer="uniform",
        sinusoidal_layout="interleaved",
        output_bias=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int(vocabulary_size, "vocabulary_size")
        check_positive_int(max_length, "max_length")
        check_positive_int(embedding_dim, "embedding_dim")
        check_choice(positional, "positional", POSITIONAL_KINDS)
        check_choice(sinusoidal_layout, "sinusoidal_layout", LAYOUTS)
        check_bool(output_bias, "output_bias")
        if positional == "sinusoidal" and embedding_dim % 2:
            raise ValueError(
                '`embedding_dim` must be even with positional="sinusoidal", '
                "since sines and cosines come in pairs (Eq. 7.29); "
                f"received {embedding_dim}."
            )
        if isinstance(max_wavelength, bool) or not max_wavelength > 0:
            raise ValueError(
                "`max_wavelength` must be a positive number; "
                f"received {max_wavelength!r}."
            )
        self.vocabulary_size = vocabulary_size
        self.max_length = max_length
        self.embedding_dim = embedding_dim
        self.positional = positional
        self.mask_zero = mask_zero
        self.scale_embeddings = scale_embeddings
        self.max_wavelength = max_wavelength
        self.sinusoidal_layout = sinusoidal_layout
        self.output_bias = output_bias
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)
        self.supports_masking = True

    def build(self, token_ids_shape):
        if len(token_ids_shape) != 2:
            raise ValueError(
                "`token_ids` must have rank 2, shape (batch_size, "
                f"sequence_length); received shape {tuple(token_ids_shape)}."
            )
        # Checked here, not only by the position layer's build, so that the
        # message names this layer's argument.
        check_static_length(token_ids_shape[1], 0, self.max_length, name="token_ids")
        # Keras' reversible embedding is the tied output layer too: quantized
        # (`Model.quantize`), its reverse call reads the int8 table with its
        # per-row scales, which are then the output layer's per-column ones.
        self.token_embedding = keras.layers.ReversibleEmbedding(
            self.vocabulary_size,
            self.embedding_dim,
            tie_weights=True,
            embeddings_initializer=clone_initializer(self.embeddings_initializer),
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        # Its reverse call receives hidden states that carry the padding
        # mask, which the logits do not need.
        self.token_embedding.supports_masking = True
        self.token_embedding.build(token_ids_shape)
        self.logits_bias = None
        if self.output_bias:
            self.logits_bias = self.add_weight(
                shape=(self.vocabulary_size,), initializer="zeros", name="logits_bias"
            )
        embedded_shape = tuple(token_ids_shape) + (self.embedding_dim,)
        if self.positional == "learned":
            self.position_embedding = LearnedPositionalEmbedding(
                self.max_length,
                initializer=clone_initializer(self.embeddings_initializer),
                dtype=self.dtype_policy,
                name="position_embedding",
            )
        else:
            self.position_embedding = SinusoidalPositionalEncoding(
                max_wavelength=self.max_wavelength,
                mode="add",
                layout=self.sinusoidal_layout,
                dtype=self.dtype_policy,
                name="position_embedding",
            )
        self.position_embedding.build(embedded_shape)
        self.built = True

    def _check_token_ids(self, token_ids, start_index):
        masks_lib.check_token_ids(token_ids, vocabulary_size=self.vocabulary_size)
        check_static_length(
            token_ids.shape[1], start_index, self.max_length, name="token_ids"
        )

    def call(self, token_ids, start_index=0, reverse=False):
        if reverse:
            # The output layer tied to the token table (Press & Wolf, 2017):
            # (B, T, D) x (D, V) -> (B, T, V) logits.
            if self.logits_bias is None:
                return self.token_embedding(token_ids, reverse=True)
            logits = kernels.tied_logits(token_ids, self.token_embedding)
            return logits + ops.cast(self.logits_bias, logits.dtype)
        self._check_token_ids(token_ids, start_index)
        x = self.token_embedding(token_ids)  # (B, T, D)
        if self.scale_embeddings:
            x = x * ops.cast(math.sqrt(self.embedding_dim), x.dtype)
        if self.positional == "learned":
            return x + self.position_embedding(x, start_index=start_index)
        # The sinusoidal layer adds its code itself (Eq. 7.30).
        return self.position_embedding(x, start_index=start_index)

    def compute_mask(self, token_ids, mask=None):
        if not self.mask_zero or not _is_integer(token_ids):
            return mask  # Reverse calls take hidden states, not ids.
        return masks_lib.merge_masks(masks_lib.padding_mask(token_ids), mask)  # (B, T)

    def compute_output_spec(self, token_ids, start_index=0, reverse=False):
        if reverse:
            return keras.KerasTensor(
                tuple(token_ids.shape[:-1]) + (self.vocabulary_size,),
                dtype=self.compute_dtype,
            )
        # Keras builds symbolic outputs from `compute_output_shape` without
        # running `call`, so the checks run here too, before any graph is
        # built on float, wrongly shaped or over-long ids.
        self._check_token_ids(token_ids, start_index)
        return super().compute_output_spec(token_ids, start_index=start_index)

    def position_table(self):
        """(L, D): the position code this layer adds at each of its
        `max_length` positions, as its position layer computes it."""
        zeros = ops.zeros((1, self.max_length, self.embedding_dim), self.compute_dtype)
        # The learned layer returns its rows; the sinusoidal one, in its
        # "add" mode, adds its code to the zeros: the code either way.
        return self.position_embedding(zeros)[0]

    def spec(self):
        """What a fast path needs of this layer, a `layer_spec.EmbeddingSpec`."""
        mode = getattr(self.token_embedding, "quantization_mode", None)
        refusal = f"quantization_mode={mode!r}" if mode else None
        if self.compute_dtype != self.variable_dtype:
            refusal = f"dtype_policy={self.dtype_policy.name!r}"
        return layer_spec.EmbeddingSpec(
            table=self.token_embedding.embeddings,
            scale=math.sqrt(self.embedding_dim) if self.scale_embeddings else 1.0,
            positional=self.positional,
            max_length=self.max_length,
            position_table=self.position_table,
            refusal=refusal,
            sinusoidal_layout=self.sinusoidal_layout,
            output_bias=self.logits_bias,
        )

    def compute_output_shape(self, token_ids_shape):
        return tuple(token_ids_shape) + (self.embedding_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "max_length": self.max_length,
                "embedding_dim": self.embedding_dim,
                "positional": self.positional,
                "mask_zero": self.mask_zero,
                "scale_embeddings": self.scale_embeddings,
                "max_wavelength": self.max_wavelength,
                "sinusoidal_layout": self.sinusoidal_layout,
                "output_bias": self.output_bias,
                "embeddings_initializer": keras.initializers.serialize(
                    self.embeddings_initializer
                ),
            }
        )
        return config
