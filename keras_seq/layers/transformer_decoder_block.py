"""The Transformer decoder block, Fig. 7.15 (b).

Shape legend:
    B: batch size
    T: decoder (target) length
    S: encoder (source) length
    D: model width
    N: number of heads
    H: head width
    L: cache length (the longest sequence to decode)
"""

import keras

from keras_seq import masks as masks_lib
from keras_seq.layers.transformer_block import TransformerBlock


@keras.saving.register_keras_serializable(package="keras_seq")
class TransformerDecoderBlock(TransformerBlock):
    """Causal self attention, cross attention and a feed-forward network.

    The block of Fig. 7.15 (b): causal multi-head self attention (masking,
    Eq. 7.27), cross attention whose keys and values are the encoder output
    (Eq. 7.33) and whose key mask is the *encoder's* padding mask, and the
    position-wise feed-forward network, each followed by a residual sum and
    layer normalization (or preceded by it, with `norm_first`). With the
    book's sizes and no attention biases it has exactly 4,199,936
    parameters. Built without an encoder sequence it has no cross
    attention, which is the block of a decoder-only language model.

    For incremental decoding, pass `self_attention_cache` (B, 2, N, L, H)
    with `self_attention_cache_update_index`: the keys and values of the new
    tokens are written into the cache and the causal mask starts at that
    index. Cross-attention keys and values depend only on the source, so
    they are computed once (returned as `cross_cache` on the first step)
    and passed back as `cross_attention_cache` afterwards.

    Args:
        See `TransformerBlock`.

    Call arguments:
        decoder_sequence: (B, T, D) tensor.
        encoder_sequence: (B, S, D_enc) tensor, or `None` for a block
            without cross attention.
        decoder_padding_mask: (B, T) boolean; defaults to the implicit mask
            of `decoder_sequence`.
        encoder_padding_mask: (B, S) boolean, the key mask of cross
            attention; defaults to the implicit mask of `encoder_sequence`.
        self_attention_cache: (B, 2, N, L, H) keys and values so far,
            heads first (`MultiHeadAttention.cache_shape`).
        self_attention_cache_update_index: int or scalar tensor, the
            position of the first new token.
        cross_attention_cache: (B, 2, N, S, H) precomputed cross-attention
            keys and values.
        use_causal_mask: bool, mask future positions in self attention.
        return_attention_scores: bool, also return the cross-attention
            weights (B, N, T, S), as plotted in Fig. 7.11.
        training: bool, whether dropout is active.

    Returns:
        `output` (B, T, D); `(output, self_cache, cross_cache)` when a cache
        is passed. With `return_attention_scores`, the cross-attention
        weights are appended.

    Example:
    >>> block = TransformerDecoderBlock(num_heads=2, ff_dim=16)
    >>> x, z = keras.ops.ones((2, 4, 8)), keras.ops.ones((2, 6, 8))
    >>> tuple(block(x, z).shape)
    (2, 4, 8)

    References:
        Vaswani et al., "Attention Is All You Need", 2017.
    """

    def build(self, decoder_sequence_shape, encoder_sequence_shape=None):
        self._check_sequence_shape(decoder_sequence_shape, "decoder_sequence")
        self._check_sequence_shape(encoder_sequence_shape, "encoder_sequence")
        model_dim = decoder_sequence_shape[-1]
        self._self_attention = self._attention(model_dim, "self_attention")
        self._self_attention.build(decoder_sequence_shape, decoder_sequence_shape)
        self._self_attention_norm = self._layer_norm("self_attention_layer_norm")
        self._self_attention_norm.build(decoder_sequence_shape)
        self._self_attention_dropout = self._dropout_layer("self_attention_dropout")
        self._cross_attention = None
        if encoder_sequence_shape is not None:
            self._cross_attention = self._attention(model_dim, "cross_attention")
            self._cross_attention.build(decoder_sequence_shape, encoder_sequence_shape)
            self._cross_attention_norm = self._layer_norm("cross_attention_layer_norm")
            self._cross_attention_norm.build(decoder_sequence_shape)
            self._cross_attention_dropout = self._dropout_layer(
                "cross_attention_dropout"
            )
        self._feed_forward_layer = self._feed_forward("feed_forward")
        self._feed_forward_layer.build(decoder_sequence_shape)
        self._feed_forward_norm = self._layer_norm("feed_forward_layer_norm")
        self._feed_forward_norm.build(decoder_sequence_shape)
        self._feed_forward_dropout = self._dropout_layer("feed_forward_dropout")
        self.built = True

    def self_attention_cache_shape(self, batch_size, length):
        """The shape of this block's self-attention cache, (B, 2, N, L, W).

        See `MultiHeadAttention.cache_shape`.
        """
        return self._self_attention.cache_shape(batch_size, length)

    def compute_cross_attention_cache(self, encoder_sequence):
        """Cross-attention keys and values of a source, (B, 2, N, S, H)."""
        if self._cross_attention is None:
            raise ValueError(
                "This block was built without cross attention (no "
                "`encoder_sequence`), so it has no cross-attention cache."
            )
        return self._cross_attention.compute_cache(encoder_sequence)

    def _check_inputs(
        self,
        decoder_sequence,
        encoder_sequence,
        decoder_padding_mask,
        encoder_padding_mask,
        cross_attention_cache,
    ):
        self._check_sequence(decoder_sequence, "decoder_sequence")
        self._check_sequence(encoder_sequence, "encoder_sequence")
        batch, length = decoder_sequence.shape[0], decoder_sequence.shape[1]
        masks_lib.check_mask_shape(
            decoder_padding_mask, "decoder_padding_mask", (batch, length)
        )
        if encoder_sequence is not None:
            masks_lib.check_mask_shape(
                encoder_padding_mask,
                "encoder_padding_mask",
                (batch, encoder_sequence.shape[1]),
            )
        has_source = encoder_sequence is not None or (cross_attention_cache is not None)
        if self._cross_attention is not None and not has_source:
            raise ValueError(
                "This block was built with cross attention, so it needs "
                "`encoder_sequence` (B, S, D) or `cross_attention_cache`; "
                "received neither."
            )
        if self._cross_attention is None and has_source:
            raise ValueError(
                "This block was built without cross attention; received an "
                "`encoder_sequence` or `cross_attention_cache` it cannot use."
            )

    def call(
        self,
        decoder_sequence,
        encoder_sequence=None,
        decoder_padding_mask=None,
        encoder_padding_mask=None,
        self_attention_cache=None,
        self_attention_cache_update_index=None,
        cross_attention_cache=None,
        use_causal_mask=True,
        return_attention_scores=False,
        training=None,
        decoder_sequence_mask=None,
        encoder_sequence_mask=None,
    ):
        # Explicit padding masks override the implicit Keras masks.
        padding = _first_given(decoder_padding_mask, decoder_sequence_mask)
        source_padding = _first_given(encoder_padding_mask, encoder_sequence_mask)
        self._check_inputs(
            decoder_sequence,
            encoder_sequence,
            padding,
            source_padding,
            cross_attention_cache,
        )
        self_cache, index = self_attention_cache, self_attention_cache_update_index
        caching = self_cache is not None or cross_attention_cache is not None
        cross_cache = self._cross_cache(
            caching, cross_attention_cache, encoder_sequence
        )
        x = decoder_sequence

        # Causal self attention, Eq. (7.27), and Eq. (7.31).
        residual = x
        if self.norm_first:
            x = self._self_attention_norm(x)
        x, self_cache = self._attend_to_self(
            x, padding, use_causal_mask, self_cache, index, training
        )
        x = self._self_attention_dropout(x, training=training)
        x = x + residual
        if not self.norm_first:
            x = self._self_attention_norm(x)

        # Cross attention over the encoder output, Eq. (7.33).
        scores = None  # The cross-attention weights, for plots like Fig. 7.11.
        if self._cross_attention is not None:
            residual = x
            if self.norm_first:
                x = self._cross_attention_norm(x)
            x, scores = self._attend_to_source(
                x,
                encoder_sequence,
                padding,
                source_padding,
                cross_cache,
                return_attention_scores,
                training,
            )
            x = self._cross_attention_dropout(x, training=training)
            x = x + residual
            if not self.norm_first:
                x = self._cross_attention_norm(x)

        # Feed forward.
        residual = x
        if self.norm_first:
            x = self._feed_forward_norm(x)
        x = self._feed_forward_layer(x, training=training)
        x = self._feed_forward_dropout(x, training=training)
        x = x + residual
        if not self.norm_first:
            x = self._feed_forward_norm(x)

        outputs = (x,)
        if caching:
            outputs += (self_cache, cross_cache)
        if return_attention_scores:
            outputs += (scores,)
        return outputs[0] if len(outputs) == 1 else outputs

    def _attend_to_self(self, x, padding_mask, causal, cache, index, training):
        """Self attention of (B, T, D) `x`; returns it and the updated cache."""
        attended = self._self_attention(
            x,
            x,
            query_mask=padding_mask,
            value_mask=padding_mask,
            use_causal_mask=causal,
            cache=cache,
            cache_update_index=index,
            training=training,
        )
        if cache is not None:
            return attended  # (output, cache)
        return attended, None

    def _cross_cache(self, caching, cross_attention_cache, encoder_sequence):
        """The cross-attention cache, computed from the source if missing."""
        if not caching or self._cross_attention is None:
            return cross_attention_cache
        if cross_attention_cache is None:
            return self.compute_cross_attention_cache(encoder_sequence)
        return cross_attention_cache

    def _attend_to_source(
        self, x, source, query_mask, source_mask, cache, return_scores, training
    ):
        """Cross attention of (B, T, D) `x`; returns it and the weights or None.

        The weights are asked for only when returned: asking for them takes
        the attention off the fused path.
        """
        attended = self._cross_attention(
            x,
            source,
            query_mask=query_mask,
            value_mask=source_mask,
            cache=cache,
            return_attention_scores=return_scores,
            training=training,
        )
        attended = attended if isinstance(attended, tuple) else (attended,)
        scores = attended[1] if return_scores else None
        return attended[0], scores

    def compute_output_spec(
        self,
        decoder_sequence,
        encoder_sequence=None,
        self_attention_cache=None,
        cross_attention_cache=None,
        return_attention_scores=False,
        **kwargs,
    ):
        # From the shapes: tracing `call` outside `__call__` would run it
        # without mixed precision's casts.
        self._check_sequence(decoder_sequence, "decoder_sequence")
        self._check_sequence(encoder_sequence, "encoder_sequence")
        if self.built:
            crossing = self._cross_attention is not None
        else:
            crossing = encoder_sequence is not None
        dtype = self.compute_dtype
        outputs = (keras.KerasTensor(decoder_sequence.shape, dtype=dtype),)
        batch, length, model_dim = decoder_sequence.shape
        if crossing:
            source_length = (
                encoder_sequence.shape[1]
                if cross_attention_cache is None
                else cross_attention_cache.shape[3]
            )
        if self_attention_cache is not None or cross_attention_cache is not None:
            self_spec = _spec_like(self_attention_cache)
            cross_spec = _spec_like(cross_attention_cache)
            if crossing and cross_spec is None:
                key_dim = self._head_dims(model_dim)[0]
                cross_shape = (batch, 2, self.num_heads, source_length, key_dim)
                cross_spec = keras.KerasTensor(cross_shape, dtype=dtype)
            outputs += (self_spec, cross_spec)
        if return_attention_scores:
            scores = None
            if crossing:
                scores_shape = (batch, self.num_heads, length, source_length)
                scores = keras.KerasTensor(scores_shape, dtype=dtype)
            outputs += (scores,)
        return outputs[0] if len(outputs) == 1 else outputs


def _spec_like(x):
    return None if x is None else keras.KerasTensor(x.shape, dtype=x.dtype)


def _first_given(*masks):
    """The first of `masks` that is not None, or None."""
    return next((mask for mask in masks if mask is not None), None)
