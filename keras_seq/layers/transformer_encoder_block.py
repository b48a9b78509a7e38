"""The Transformer encoder block, Fig. 7.15 (a).

Shape legend:
    B: batch size
    T: sequence length
    D: model width
"""

import keras

from keras_seq import masks as masks_lib
from keras_seq.layers.transformer_block import TransformerBlock


@keras.saving.register_keras_serializable(package="keras_seq")
class TransformerEncoderBlock(TransformerBlock):
    """Self attention and a feed-forward network, each with a residual.

    The block of Fig. 7.15 (a): multi-head self attention (Eq. 7.25–7.26),
    residual and layer normalization (Eq. 7.31), a position-wise
    feed-forward network, residual and layer normalization again. With
    p = 512, N_1 = 2048, m = m_v = 64, H = 8 and `attention_bias=False` it
    has exactly the 3,150,336 parameters of Eq. (7.32).

    Args:
        See `TransformerBlock`: `num_heads`, `ff_dim`, `key_dim`,
        `value_dim`, `dropout`, `activation`, `norm_first`,
        `attention_bias`, `layer_norm_epsilon`, initializers,
        `attention_implementation`.

    Call arguments:
        inputs: (B, T, D) tensor.
        padding_mask: (B, T) boolean, `True` at real tokens. Defaults to the
            implicit Keras mask of `inputs` (e.g. from a `mask_zero`
            embedding); an explicit one overrides it.
        attention_mask: (B, T, T) boolean, merged with the padding mask;
            also (T, T) or per head (B, N, T, T), as
            `MultiHeadAttention` takes.
        return_attention_scores: bool, also return (B, N, T, T) weights.
        training: bool, whether dropout is active.

    Returns:
        (B, T, D) tensor, and the attention weights if asked for. The input
        padding mask propagates to the output.

    Example:
    >>> block = TransformerEncoderBlock(num_heads=2, ff_dim=16)
    >>> tuple(block(keras.ops.ones((2, 5, 8))).shape)
    (2, 5, 8)

    References:
        Vaswani et al., "Attention Is All You Need", 2017.
    """

    def build(self, inputs_shape):
        self._check_sequence_shape(inputs_shape, "inputs")
        model_dim = inputs_shape[-1]
        self._self_attention = self._attention(model_dim, "self_attention")
        self._self_attention.build(inputs_shape, inputs_shape)
        self._self_attention_norm = self._layer_norm("self_attention_layer_norm")
        self._self_attention_norm.build(inputs_shape)
        self._self_attention_dropout = self._dropout_layer("self_attention_dropout")
        self._feed_forward_layer = self._feed_forward("feed_forward")
        self._feed_forward_layer.build(inputs_shape)
        self._feed_forward_norm = self._layer_norm("feed_forward_layer_norm")
        self._feed_forward_norm.build(inputs_shape)
        self._feed_forward_dropout = self._dropout_layer("feed_forward_dropout")
        self.built = True

    def call(
        self,
        inputs,
        padding_mask=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
        mask=None,
    ):
        self._check_sequence(inputs, "inputs")
        if padding_mask is None:
            padding_mask = mask
        batch, length = inputs.shape[0], inputs.shape[1]
        masks_lib.check_mask_shape(padding_mask, "padding_mask", (batch, length))
        # `attention_mask` is checked by the attention layer, which takes
        # every shape Keras' layer takes.
        x = inputs

        # Self attention.
        residual = x
        if self.norm_first:
            x = self._self_attention_norm(x)
        attended = self._self_attention(
            x,
            x,
            query_mask=padding_mask,
            value_mask=padding_mask,
            attention_mask=attention_mask,
            return_attention_scores=return_attention_scores,
            training=training,
        )
        if return_attention_scores:
            x, scores = attended
        else:
            x = attended
        x = self._self_attention_dropout(x, training=training)
        x = x + residual
        if not self.norm_first:
            x = self._self_attention_norm(x)

        # Feed forward.
        residual = x
        if self.norm_first:
            x = self._feed_forward_norm(x)
        x = self._feed_forward_layer(x, training=training)
        x = self._feed_forward_dropout(x, training=training)
        x = x + residual
        if not self.norm_first:
            x = self._feed_forward_norm(x)

        if return_attention_scores:
            return x, scores
        return x

    def compute_output_spec(self, inputs, return_attention_scores=False, **kwargs):
        # From the shapes: tracing `call` outside `__call__` would run it
        # without mixed precision's casts.
        self._check_sequence(inputs, "inputs")
        output = keras.KerasTensor(inputs.shape, dtype=self.compute_dtype)
        if not return_attention_scores:
            return output
        batch, length = inputs.shape[0], inputs.shape[1]
        scores_shape = (batch, self.num_heads, length, length)
        return output, keras.KerasTensor(scores_shape, dtype=self.compute_dtype)
