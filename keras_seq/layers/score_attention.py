"""Score-function attention for RNN decoders, Sec. 7.4.

Shape legend:
    B: batch size
    T: query length (decoder steps; 1 for a single step)
    S: key/value length (encoder steps)
    Q: query width (the decoder state, m_q in the book)
    K: key width (m_k)
    V: value width
    U: hidden width of the additive and concat scores (`units`)
"""

import math

import keras
from keras import ops

from keras_seq import masks as masks_lib
from keras_seq.validation import (
    check_choice,
    check_positive_int,
    check_rate,
    clone_initializer,
)

SCORES = ("dot", "scaled_dot", "general", "additive", "concat")


def _static_dim(x, axis):
    return masks_lib.static_dim(x.shape[axis])


def _check_shapes(query_shape, value_shape, key_shape):
    """Ranks and key/value lengths, from static shapes."""
    if len(query_shape) not in (2, 3):
        raise ValueError(
            "`query` must have rank 3, shape (batch_size, query_length, "
            "query_dim), or rank 2, shape (batch_size, query_dim), for a "
            f"single decoding step; received shape {tuple(query_shape)}."
        )
    for name, shape in (("value", value_shape), ("key", key_shape)):
        if len(shape) != 3:
            raise ValueError(
                f"`{name}` must have rank 3, shape (batch_size, "
                f"{name}_length, {name}_dim); received shape {tuple(shape)}."
            )
    key_length = masks_lib.static_dim(key_shape[1])
    value_length = masks_lib.static_dim(value_shape[1])
    if None not in (key_length, value_length) and key_length != value_length:
        raise ValueError(
            "`key` and `value` must have the same length; received key "
            f"shape {tuple(key_shape)} and value shape {tuple(value_shape)}."
        )


@keras.saving.register_keras_serializable(package="keras_seq")
class ScoreAttention(keras.layers.Layer):
    """Attention with a score function, Eq. (7.20) and (7.21).

    The attention of an RNN decoder (Fig. 7.10): each query `z_q^(t)` (the
    decoder state) is scored against every key `z_k^(s)` (the encoder
    outputs), the scores are normalized by a softmax over the S positions
    into the weights `alpha^(t)` (Eq. 7.20), and the context is the weighted
    sum of the values, `u^(t) = sum_s alpha_s^(t) v^(s)` (Eq. 7.21,
    non-causal by default, causal with `use_causal_mask`).

    The score functions `s(q, k)` of Sec. 7.4 ("Variants of the score
    function"), with `q` of width Q and `k` of width K:

    - `"dot"`: `q . k`, the inner product; needs Q == K. No weights.
    - `"scaled_dot"`: `q . k / sqrt(K)`; needs Q == K. No weights.
    - `"general"` (Luong): `q^T W k` with `W` (Q, K), no bias;
      Q * K weights.
    - `"additive"` (Bahdanau): `v^T tanh(W_q q + W_k k)` with `W_q` (Q, U),
      `W_k` (K, U) and `v` (U,), no biases; (Q + K + 1) * U weights.
    - `"concat"` (Luong): `v^T tanh(W [q; k] + b)` with one matrix `W`
      (Q + K, U) over the concatenation, a bias `b` (U,) and `v` (U,);
      (Q + K + 2) * U weights. Splitting `W` into its first Q rows and last
      K rows shows that, without `b`, it is the additive score with
      `W_q` and `W_k` stacked; `b` is the only difference, a learned shift
      of the tanh's operating point shared by all (q, k) pairs. The layer
      computes it that way, `W_top q` once per query and `W_bottom k + b`
      once per key, instead of concatenating every pair, which would
      materialize a (B, T, S, Q + K) tensor.

    Masks are boolean with `True` meaning "may attend". Padding masks
    arrive implicitly from `mask_zero` embeddings or `Masking` layers
    (`query_mask`, `value_mask`) or explicitly; explicit masks override
    implicit ones. `attention_mask` and the causal mask are merged with them
    by logical AND. A query that may attend to no key (a padded query, or a
    fully padded source) gets zero weights and a zero context, with zero
    gradients and no NaN. The softmax runs in float32 and its result is cast
    back to the compute dtype, so masking is safe in float16 and bfloat16.

    Args:
        score: str, one of `"dot"`, `"scaled_dot"`, `"general"`,
            `"additive"`, `"concat"`.
        units: int, hidden width U of the `"additive"` and `"concat"`
            scores (m-tilde in the book). Defaults to the key width K.
            Ignored by the other scores.
        dropout: float, dropout rate on the attention weights.
        kernel_initializer: initializer for the score matrices and `v`.
        bias_initializer: initializer for the `"concat"` bias `b`.
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        query: (B, T, Q) tensor, e.g. the decoder states, or (B, Q) for a
            single decoding step inside an RNN loop.
        value: (B, S, V) tensor, e.g. the encoder outputs.
        key: (B, S, K) tensor; defaults to `value`.
        query_mask: (B, T) boolean padding mask of the queries ((B,) for a
            rank-2 query).
        value_mask: (B, S) boolean padding mask of the keys and values.
        attention_mask: (B, T, S) boolean mask ((B, S) for a rank-2 query).
        use_causal_mask: bool; query `t` attends only to keys `s <= t`
            (Eq. 7.21, causal form), bottom-right aligned when T != S (so
            a rank-2 query, the last step, sees every key).
        training: bool, whether dropout is active.

    Returns:
        A tuple `(context, weights)`: `context` (B, T, V) and `weights`
        (B, T, S), the attention weights before dropout; (B, V) and (B, S)
        for a rank-2 query. Both carry the query's implicit mask.

    Example:
    >>> layer = ScoreAttention(score="additive", units=16)
    >>> decoder_states = keras.random.normal((2, 3, 8))
    >>> encoder_outputs = keras.random.normal((2, 5, 12))
    >>> context, weights = layer(decoder_states, encoder_outputs)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 3, 12), (2, 3, 5))

    References:
        Bahdanau, Cho and Bengio, "Neural Machine Translation by Jointly
        Learning to Align and Translate", ICLR 2015.
        Luong, Pham and Manning, "Effective Approaches to Attention-based
        Neural Machine Translation", EMNLP 2015.
    """

    def __init__(
        self,
        score="additive",
        units=None,
        dropout=0.0,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_choice(score, "score", SCORES)
        check_positive_int(units, "units", allow_none=True)
        check_rate(dropout, "dropout")
        self.score = score
        self.units = units
        self.dropout = dropout
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def _dense(self, units, use_bias, name):
        return keras.layers.Dense(
            units,
            use_bias=use_bias,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            dtype=self.dtype_policy,
            name=name,
        )

    def _score_vector(self):
        # v: (B, T, S, U) x (U,) -> (B, T, S)
        return keras.layers.EinsumDense(
            "btsu,u->bts",
            output_shape=(None, None),
            kernel_initializer=clone_initializer(self.kernel_initializer),
            dtype=self.dtype_policy,
            name="score_vector",
        )

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        _check_shapes(query_shape, value_shape, key_shape)
        query_dim, key_dim = query_shape[-1], key_shape[-1]
        if self.score in ("dot", "scaled_dot") and query_dim != key_dim:
            raise ValueError(
                f"`score={self.score!r}` needs queries and keys of the same "
                f"width; received query width {query_dim} (query shape "
                f"{tuple(query_shape)}) and key width {key_dim} (key shape "
                f"{tuple(key_shape)}). Use 'general', 'additive' or 'concat' "
                "for different widths."
            )
        units = self.units or key_dim
        if self.score == "general":
            # W: (Q, K), applied to the queries: (B, T, Q) -> (B, T, K).
            self._general_dense = self._dense(key_dim, False, "general_kernel")
            self._general_dense.build((None, None, query_dim))
        elif self.score == "additive":
            self._query_dense = self._dense(units, False, "query_projection")
            self._query_dense.build((None, None, query_dim))
            self._key_dense = self._dense(units, False, "key_projection")
            self._key_dense.build((None, None, key_dim))
        elif self.score == "concat":
            # One W: (Q + K, U) and b: (U,), over the concatenation [q; k].
            self._concat_dense = self._dense(units, True, "concat_projection")
            self._concat_dense.build((None, None, query_dim + key_dim))
        if self.score in ("additive", "concat"):
            self._score_dense = self._score_vector()
            self._score_dense.build((None, None, None, units))
        self._dropout_layer = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy
        )
        self.built = True

    # Scores.

    def _tanh_score(self, query_part, key_part):
        # (B, T, 1, U) + (B, 1, S, U) -> (B, T, S, U)
        hidden = ops.tanh(query_part[:, :, None, :] + key_part[:, None, :, :])
        return self._score_dense(hidden)  # (B, T, S)

    def _scores(self, query, key):
        """Unnormalized scores s(q, k), (B, T, S), in the compute dtype."""
        if self.score in ("dot", "scaled_dot"):
            # (B, T, K) x (B, S, K) -> (B, T, S)
            scores = ops.einsum("btk,bsk->bts", query, key)
            if self.score == "scaled_dot":
                scale = 1.0 / math.sqrt(_static_dim(key, 2))
                scores = ops.multiply(scores, ops.cast(scale, scores.dtype))
            return scores
        if self.score == "general":
            projected = self._general_dense(query)  # (B, T, K)
            # (B, T, K) x (B, S, K) -> (B, T, S)
            return ops.einsum("btk,bsk->bts", projected, key)
        if self.score == "additive":
            return self._tanh_score(self._query_dense(query), self._key_dense(key))
        # concat: W [q; k] + b = W[:Q] q + (W[Q:] k + b), see the docstring.
        if self._concat_dense.quantization_mode is not None:
            return self._tanh_score(*self._quantized_concat_parts(query, key))
        query_dim = _static_dim(query, 2)
        kernel = ops.cast(self._concat_dense.kernel, self.compute_dtype)
        bias = ops.cast(self._concat_dense.bias, self.compute_dtype)
        query_part = ops.matmul(query, kernel[:query_dim])  # (B, T, U)
        key_part = ops.matmul(key, kernel[query_dim:]) + bias  # (B, S, U)
        return self._tanh_score(query_part, key_part)

    def _quantized_concat_parts(self, query, key):
        """`W[:Q] q` and `W[Q:] k + b` through the quantized layer's own call.

        A quantized kernel cannot be sliced as floats; the layer applied to
        `[q; 0]` and `[0; k]` gives the two halves, each row quantized by
        its own largest value, as a call on `q` or `k` alone would be.
        """
        dense = self._concat_dense
        zeros_for_key = ops.zeros_like(key[:, :1, :])  # (B, 1, K)
        zeros_for_query = ops.zeros_like(query[:, :1, :])  # (B, 1, Q)
        length_t, length_s = ops.shape(query)[1], ops.shape(key)[1]
        padded_query = ops.concatenate(
            [query, ops.repeat(zeros_for_key, length_t, axis=1)], axis=-1
        )  # (B, T, Q + K)
        padded_key = ops.concatenate(
            [ops.repeat(zeros_for_query, length_s, axis=1), key], axis=-1
        )  # (B, S, Q + K)
        bias = ops.cast(dense.bias, self.compute_dtype)
        query_part = dense(padded_query) - bias  # (B, T, U)
        key_part = dense(padded_key)  # (B, S, U)
        return query_part, key_part

    # Masks.

    def _attention_mask(
        self, query, key, query_mask, value_mask, attention_mask, causal
    ):
        """Merged (B, T, S) boolean mask, or None; `query` is (B, T, Q)."""
        batch = _static_dim(query, 0)
        query_length, key_length = _static_dim(query, 1), _static_dim(key, 1)
        masks_lib.check_mask_shape(query_mask, "query_mask", (batch, query_length))
        masks_lib.check_mask_shape(value_mask, "value_mask", (batch, key_length))
        masks_lib.check_mask_shape(
            attention_mask, "attention_mask", (batch, query_length, key_length)
        )
        causal_part = None
        if causal:
            causal_part = masks_lib.causal_mask(ops.shape(query)[1], ops.shape(key)[1])
            causal_part = causal_part[None]  # (1, T, S)
        return masks_lib.merge_masks(
            masks_lib.attention_mask_from_padding(query_mask, value_mask),
            attention_mask,
            causal_part,
        )

    def _expand_single_step(self, query, query_mask, attention_mask):
        """Rank-2 query (B, Q) to a one-step sequence (B, 1, Q)."""
        batch = _static_dim(query, 0)
        masks_lib.check_mask_shape(query_mask, "query_mask", (batch,))
        if attention_mask is not None:
            if len(attention_mask.shape) != 2:
                raise ValueError(
                    "With a rank-2 `query`, `attention_mask` must have shape "
                    "(batch_size, value_length); received shape "
                    f"{tuple(attention_mask.shape)}."
                )
            attention_mask = attention_mask[:, None, :]  # (B, 1, S)
        if query_mask is not None:
            query_mask = query_mask[:, None]  # (B, 1)
        return query[:, None, :], query_mask, attention_mask

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        attention_mask=None,
        use_causal_mask=False,
        training=None,
    ):
        if key is None:
            key = value
        _check_shapes(tuple(query.shape), tuple(value.shape), tuple(key.shape))
        single_step = len(query.shape) == 2
        if single_step:
            query, query_mask, attention_mask = self._expand_single_step(
                query, query_mask, attention_mask
            )
        mask = self._attention_mask(
            query, key, query_mask, value_mask, attention_mask, use_causal_mask
        )  # (B, T, S), or broadcastable to it

        scores = self._scores(query, key)  # (B, T, S)
        # Eq. (7.20), in float32 and with rows without a key set to zero.
        weights = masks_lib.masked_softmax(scores, mask, self.compute_dtype)
        dropped = self._dropout_layer(weights, training=training)
        # (B, T, S) x (B, S, V) -> (B, T, V)
        context = ops.einsum("bts,bsv->btv", dropped, value)
        if single_step:
            return context[:, 0, :], weights[:, 0, :]  # (B, V), (B, S)
        return context, weights

    def compute_mask(self, query, mask=None):
        # `mask` is the query's implicit mask: both outputs are indexed by
        # the query positions.
        if mask is None:
            return None
        return (mask, mask)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "score": self.score,
                "units": self.units,
                "dropout": self.dropout,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config
