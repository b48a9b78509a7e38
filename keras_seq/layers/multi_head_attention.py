"""Multi-head attention with boolean masks and a key/value cache.

Shape legend:
    B: batch size
    T: query length
    S: key/value length (the cache length L when a cache is used)
    D: model width (query feature size)
    N: number of heads
    H: head width for keys and queries (`key_dim`)
    V: head width for values (`value_dim`)
"""

import math

import keras
from keras import ops

from keras_seq import masks as masks_lib
from keras_seq.layers import attention_kernels as kernels
from keras_seq.layers import layer_spec
from keras_seq.layers.hashed_dropout import HashedDropout
from keras_seq.validation import (
    check_choice,
    check_positive_int,
    check_rate,
    clone_initializer,
)

IMPLEMENTATIONS = ("auto", "fused", "explicit")


def _check_rank(x, rank, name, layout):
    if x is not None and len(x.shape) != rank:
        raise ValueError(
            f"`{name}` must have rank {rank}, shape {layout}; "
            f"received shape {tuple(x.shape)}."
        )


def _check_rank_of_shape(shape, name):
    if shape is not None and len(shape) != 3:
        raise ValueError(
            f"`{name}` must have rank 3, shape (batch_size, length, dim); "
            f"received shape {tuple(shape)}."
        )


def _static_dim(x, axis):
    return masks_lib.static_dim(x.shape[axis])


def _check_same_length(key_shape, value_shape):
    key_length = masks_lib.static_dim(key_shape[1])
    value_length = masks_lib.static_dim(value_shape[1])
    if None not in (key_length, value_length) and key_length != value_length:
        raise ValueError(
            "`key` and `value` must have the same length; received "
            f"key shape {tuple(key_shape)} and value shape {tuple(value_shape)}."
        )


@keras.saving.register_keras_serializable(package="keras_seq")
class MultiHeadAttention(keras.layers.Layer):
    """Multi-head scaled dot-product attention, Eq. (7.25)-(7.27).

    Each head `h` has its own projections `W_q^h`, `W_k^h`, `W_v^h` of the
    queries, keys and values, and its weights are a softmax of the scaled
    scores (Eq. 7.25):

        alpha_s^h(t) = softmax_s( (W_q^h x(t)) . (W_k^h x(s)) / sqrt(H) )
        u^h(t)       = sum_s alpha_s^h(t) W_v^h x(s)

    The heads are combined by `W_c` (Eq. 7.26): `u(t) = sum_h W_c^h u^h(t)`,
    which is one matrix applied to the concatenated heads. Masked keys
    (later positions in causal attention, Eq. 7.27, and padding) get zero
    weight.

    Masks are boolean with `True` meaning "may attend". Padding masks arrive
    implicitly from `mask_zero` embeddings (`query_mask`, `value_mask`) or
    explicitly; `attention_mask` and the causal mask are merged with them
    by logical AND. A query row that may attend to no key returns a zero
    vector (and zero gradients), never NaN; with a per-head mask, so does
    each head without a key.

    Habits from `keras.layers.MultiHeadAttention` carry over (the call
    signature, `attention_mask` of shape (T, S), (B, T, S) or per head
    (B, N, T, S), `compute_output_shape`) but one: the causal mask of a
    query shorter than its keys (T < S) is aligned to the *last* key, so
    query `i` sees keys `j <= S - T + i`, where Keras aligns it to the
    first (`j <= i`). A query appended to a cache of earlier keys needs
    the last; with T == S the two agree.

    The attention runs on one of two paths with the same numbers: the
    backend's fused kernel (`keras.ops.dot_product_attention`), or Eq.
    (7.25) written out, which runs when the weights are returned, attention
    dropout is active, or a cache is used. The kernels that keep decoding
    fast (one-matmul projections, the stacked heads-first cache) are in
    `keras_seq.layers.attention_kernels`.

    Args:
        num_heads: int, number of heads N.
        key_dim: int, head width H of queries and keys (m in the book).
        value_dim: int, head width V of values (m_v). Defaults to `key_dim`.
        dropout: float, dropout rate on the attention weights.
        use_bias: bool, whether the four projections have biases. `False`
            reproduces the book's parameter counts (Eq. 7.32).
        output_dim: int > 0 or None, width of the output. None: the query
            width.
        attention_implementation: `"auto"` (fused where possible),
            `"fused"` (the same) or `"explicit"` (always Eq. 7.25 written
            out).
        kernel_initializer: initializer for the projection kernels.
        bias_initializer: initializer for the projection biases.
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        query: (B, T, D) tensor.
        value: (B, S, D_v) tensor. May be `None` when a precomputed `cache`
            is given without `cache_update_index` (cross attention).
        key: (B, S, D_k) tensor, defaults to `value`.
        query_mask: (B, T) boolean padding mask of the queries.
        value_mask: (B, S) boolean padding mask of the keys and values.
        key_mask: (B, S) boolean; overrides `value_mask` for the keys.
        attention_mask: boolean mask of shape (T, S), (B, T, S) or
            (B, N, T, S) (one per head), a batch or head axis of size 1
            broadcast, as Keras takes.
        use_causal_mask: bool; queries attend only to keys at or before
            their own position, bottom-right aligned: query `i` of T sees
            keys `j <= S - T + i` (or `j <= cache_update_index + i` when a
            cache is updated). Keras' layer aligns it top-left (`j <= i`);
            the two agree when T == S.
        cache: (B, 2, N, S, H) stacked keys and values, heads first (see
            `cache_shape`). With `cache_update_index` the new keys and
            values are written at that index (self attention while
            decoding); without it the cache is used as is (cross attention
            over a fixed source). While a cache is updated, implicit key
            masks of the new tokens are ignored: pass key padding of the
            cache through `attention_mask`.
        cache_update_index: int or scalar tensor, where the new keys go.
        return_attention_scores: bool, also return the (B, N, T, S) weights.
        training: bool, whether dropout is active.

    Returns:
        `output` (B, T, output_dim); with `return_attention_scores` also the
        weights; with `cache` also the (possibly updated) cache, last.

    Example:
    >>> layer = MultiHeadAttention(num_heads=2, key_dim=4)
    >>> x = keras.random.normal((1, 5, 8))
    >>> tuple(layer(x, x, use_causal_mask=True).shape)
    (1, 5, 8)

    References:
        Vaswani et al., "Attention Is All You Need", 2017.
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        dropout=0.0,
        use_bias=True,
        output_dim=None,
        attention_implementation="auto",
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int(num_heads, "num_heads")
        check_positive_int(key_dim, "key_dim")
        check_positive_int(value_dim, "value_dim", allow_none=True)
        check_positive_int(output_dim, "output_dim", allow_none=True)
        check_rate(dropout, "dropout")
        check_choice(
            attention_implementation, "attention_implementation", IMPLEMENTATIONS
        )
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim if value_dim is not None else key_dim
        self.dropout = dropout
        self.use_bias = use_bias
        self.output_dim = output_dim
        self.attention_implementation = attention_implementation
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def _dense(self, equation, output_shape, bias_axes, name):
        dense = keras.layers.EinsumDense(
            equation,
            output_shape=output_shape,
            bias_axes=bias_axes if self.use_bias else None,
            # A fresh initializer per projection, so that seeded ones do not
            # hand the same values to every head's matrices.
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            dtype=self.dtype_policy,
            name=name,
        )
        # The projections see tensors that carry padding masks; this layer
        # handles those masks itself, so the projections just pass them on
        # instead of warning that they would drop them.
        dense.supports_masking = True
        return dense

    def build(self, query_shape, value_shape=None, key_shape=None):
        _check_rank_of_shape(query_shape, "query")
        _check_rank_of_shape(value_shape, "value")
        _check_rank_of_shape(key_shape, "key")
        if value_shape is None:
            value_shape = query_shape
        if key_shape is None:
            key_shape = value_shape
        query_dim = query_shape[-1]
        output_dim = self.output_dim or query_dim
        n, h, v = self.num_heads, self.key_dim, self.value_dim
        # W_q^h, W_k^h, W_v^h of all heads: (B, T, D) x (D, N, H) -> (B, T, N, H)
        self._query_dense = self._dense("btd,dnh->btnh", (None, n, h), "nh", "query")
        self._query_dense.build(query_shape)
        self._key_dense = self._dense("bsd,dnh->bsnh", (None, n, h), "nh", "key")
        self._key_dense.build(key_shape)
        self._value_dense = self._dense("bsd,dnh->bsnh", (None, n, v), "nh", "value")
        self._value_dense.build(value_shape)
        # W_c: (B, T, N, V) x (N, V, D) -> (B, T, D)
        self._output_dense = self._dense(
            "btnv,nvd->btd", (None, output_dim), "d", "attention_output"
        )
        self._output_dense.build(tuple(query_shape[:-1]) + (n, v))
        self._dropout_layer = HashedDropout(self.dropout, dtype=self.dtype_policy)
        self.built = True

    def call(
        self,
        query,
        value=None,
        key=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        use_causal_mask=False,
        cache=None,
        cache_update_index=None,
        return_attention_scores=False,
        training=None,
    ):
        key = self._check_inputs(query, value, key, cache, cache_update_index)
        updating = cache is not None and cache_update_index is not None
        if key_mask is None:
            key_mask = value_mask
        if updating:
            key_mask = None  # The keys are the cache's, not the new tokens'.

        # Eq. (7.25), the projections: W_q^h x(t), W_k^h x(s), W_v^h x(s).
        queries = kernels.project_heads(self._query_dense, query)  # (B, T, N, H)
        keys, values, cache = self._keys_and_values(
            value, key, cache, cache_update_index
        )  # (B, S, N, H) and (B, S, N, V), or only the (B, 2, N, S, H) cache

        # Eq. (7.27): keys a query may not see (later ones, padding) masked.
        mask = self._attention_mask(
            query,
            keys if cache is None else cache,
            1 if cache is None else 3,  # the axis of the key positions
            query_mask,
            key_mask,
            attention_mask,
            use_causal_mask,
            causal_offset=cache_update_index if updating else None,
        )  # (B, 1, T, S) or (B, N, T, S) (B may be 1), or None

        # Eq. (7.25), the weights alpha^h and each head's context u^h.
        context, weights = self._attend(
            queries, keys, values, cache, mask, return_attention_scores, training
        )  # (B, T, N, V) and (B, N, T, S) or None
        if mask is not None and _static_dim(mask, 1) != 1:
            # A head with no key to attend to contributes nothing; the
            # fused kernel's softmax over an all-masked row is uniform.
            head_has_key = ops.any(mask, axis=-1)  # (B, N, T)
            head_has_key = ops.transpose(head_has_key, (0, 2, 1))[..., None]
            context = ops.where(head_has_key, context, ops.zeros_like(context))

        # Eq. (7.26): u(t) = sum_h W_c^h u^h(t).
        output = self._output_dense(context)  # (B, T, D)
        if mask is not None:
            # A query with no key to attend to gets a zero vector: the softmax
            # over an all-masked row is uniform, not zero, and the output
            # bias would leak through as well.
            has_key = ops.any(mask, axis=(1, 3))[:, :, None]  # (B, T, 1)
            output = ops.where(has_key, output, ops.zeros_like(output))

        outputs = (output,)
        if return_attention_scores:
            outputs += (weights,)
        if cache is not None:
            outputs += (cache,)
        return outputs[0] if len(outputs) == 1 else outputs

    # Attention, Eq. (7.25).

    def _attend(self, queries, keys, values, cache, mask, return_weights, training):
        """Per-head context (B, T, N, V) and weights (B, N, T, S) or None."""
        if cache is None and self._use_fused(return_weights, training):
            context = kernels.fused_attention(
                queries, keys, values, mask, scale=1.0 / math.sqrt(self.key_dim)
            )
            return context, None
        if cache is None:
            # (B, T, N, H) x (B, S, N, H) -> (B, N, T, S)
            scores = ops.einsum("btnh,bsnh->bnts", queries, keys)
        else:
            widened = self._widen(queries, self.key_dim)  # (B, T, N, W)
            scores = kernels.cached_scores(widened, cache)  # (B, N, T, S)
        weights = self._attention_weights(scores, mask)  # (B, N, T, S)
        dropped = self._dropout_layer(weights, training=training)
        if cache is None:
            # (B, N, T, S) x (B, S, N, V) -> (B, T, N, V)
            context = ops.einsum("bnts,bsnv->btnv", dropped, values)
        else:
            context = kernels.cached_context(dropped, cache)  # (B, T, N, W)
            context = context[..., : self.value_dim]  # (B, T, N, V)
        return context, weights

    def _attention_weights(self, scores, mask):
        """(B, N, T, S) raw scores -> masked softmax weights (B, N, T, S)."""
        scale = ops.cast(1.0 / math.sqrt(self.key_dim), scores.dtype)
        scores = ops.multiply(scores, scale)
        # The (B, N or 1, T, S) mask broadcasts over heads.
        return masks_lib.masked_softmax(scores, mask, self.compute_dtype)

    def _use_fused(self, return_attention_scores, training):
        if self.attention_implementation == "explicit":
            return False
        if return_attention_scores:
            return False
        if training and self.dropout > 0:
            return False
        return kernels.fused_attention_available(
            self.compute_dtype, self.key_dim, self.value_dim
        )

    # Masks, Eq. (7.27).

    def _attention_mask(
        self,
        query,
        keys,
        key_axis,
        query_mask,
        key_mask,
        attention_mask,
        use_causal_mask,
        causal_offset,
    ):
        batch = _static_dim(query, 0)
        query_length = _static_dim(query, 1)
        key_length = _static_dim(keys, key_axis)
        masks_lib.check_mask_shape(query_mask, "query_mask", (batch, query_length))
        masks_lib.check_mask_shape(key_mask, "value_mask", (batch, key_length))
        attention_mask = masks_lib.attention_mask_per_head(
            attention_mask, batch, self.num_heads, query_length, key_length
        )  # (B, N, T, S), B and N possibly 1
        causal = None
        if use_causal_mask:
            causal = masks_lib.causal_mask(
                ops.shape(query)[1], ops.shape(keys)[key_axis], offset=causal_offset
            )[None, None]  # (1, 1, T, S)
        padding = masks_lib.attention_mask_from_padding(query_mask, key_mask)
        return masks_lib.merge_masks(
            None if padding is None else padding[:, None],  # (B, 1, T, S)
            attention_mask,
            causal,
        )

    # Inputs and cache.

    def _check_inputs(self, query, value, key, cache, cache_update_index):
        """Check ranks and lengths; return `key`, defaulted to `value`."""
        _check_rank(query, 3, "query", "(batch_size, query_length, dim)")
        if value is None and (cache is None or cache_update_index is not None):
            raise ValueError("`value` is required unless a fixed `cache` is given.")
        if key is None:
            key = value
        _check_rank(value, 3, "value", "(batch_size, value_length, dim)")
        _check_rank(key, 3, "key", "(batch_size, key_length, dim)")
        if value is not None:
            _check_same_length(key.shape, value.shape)
        return key

    # Shapes, as Keras' layer gives them.

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        """The output's shape: (B, T, output_dim), output_dim defaulting to D.

        Args:
            query_shape: (B, T, D).
            value_shape: (B, S, D_v), or None (the query's).
            key_shape: (B, S, D_k), or None (the value's).

        Raises:
            ValueError: for a rank other than 3, or keys and values of
                different lengths.
        """
        for shape, name in ((query_shape, "query"), (value_shape, "value")):
            _check_rank_of_shape(shape, name)
        _check_rank_of_shape(key_shape, "key")
        value_shape = query_shape if value_shape is None else value_shape
        key_shape = value_shape if key_shape is None else key_shape
        _check_same_length(key_shape, value_shape)
        return tuple(query_shape[:-1]) + (self.output_dim or query_shape[-1],)

    def compute_output_spec(
        self,
        query,
        value=None,
        key=None,
        cache=None,
        cache_update_index=None,
        return_attention_scores=False,
        **kwargs,
    ):
        # From the shapes, as Keras' layer does: tracing `call` outside
        # `__call__` would run it without mixed precision's casts.
        key = self._check_inputs(query, value, key, cache, cache_update_index)
        output_shape = self.compute_output_shape(
            query.shape,
            None if value is None else value.shape,
            None if key is None else key.shape,
        )
        outputs = (keras.KerasTensor(output_shape, dtype=self.compute_dtype),)
        if return_attention_scores:
            key_length = key.shape[1] if cache is None else cache.shape[3]
            scores_shape = (query.shape[0], self.num_heads, query.shape[1], key_length)
            outputs += (keras.KerasTensor(scores_shape, dtype=self.compute_dtype),)
        if cache is not None:
            outputs += (keras.KerasTensor(cache.shape, dtype=cache.dtype),)
        return outputs[0] if len(outputs) == 1 else outputs

    def _keys_and_values(self, value, key, cache, cache_update_index):
        """Projected keys and values, or the (possibly updated) cache."""
        if cache is None:
            if cache_update_index is not None:
                raise ValueError(
                    "`cache_update_index` was given without a `cache`; pass "
                    "both, or neither."
                )
            keys = kernels.project_heads(self._key_dense, key)  # (B, S, N, H)
            values = kernels.project_heads(self._value_dense, value)  # (B, S, N, V)
            return keys, values, None
        _check_rank(cache, 5, "cache", "(batch_size, 2, num_heads, length, width)")
        expected = (None, 2, self.num_heads, None, self.cache_width)
        masks_lib.check_mask_shape(cache, "cache", expected)
        if cache_update_index is not None:
            new = self._stacked_keys_and_values(key, value)  # (B, 2, N, T, H)
            cache = kernels.update_cache(cache, new, cache_update_index)
        # The cached attention reads keys and values from the stack itself.
        return None, None, cache

    def _stacked_keys_and_values(self, key, value):
        """Projected keys and values of (B, S, D) inputs as (B, 2, N, S, W)."""
        keys = kernels.project_heads(self._key_dense, key)  # (B, S, N, H)
        values = kernels.project_heads(self._value_dense, value)  # (B, S, N, V)
        return kernels.stack_heads_first(
            self._widen(keys, self.key_dim), self._widen(values, self.value_dim)
        )

    @property
    def cache_width(self):
        """W, the last axis of a cache: max(key_dim, value_dim).

        Keys and values are stacked in one tensor, so heads of unequal
        widths are zero-padded to the wider one: zero key features add
        nothing to a score, and the padded value features are dropped.
        """
        return max(self.key_dim, self.value_dim)

    def _widen(self, x, width):
        """(..., width) -> (..., W), zero-padded on the last axis."""
        if width == self.cache_width:
            return x
        pad = [(0, 0)] * (len(x.shape) - 1) + [(0, self.cache_width - width)]
        return ops.pad(x, pad)

    def cache_shape(self, batch_size, length):
        """The shape of this layer's cache: (B, 2, N, L, W).

        Keys then values, each heads first (B, N, L, W); the module
        docstring of `attention_kernels` says why. W is `cache_width`, the
        head width H unless `value_dim` differs from `key_dim`.

        Args:
            batch_size: int, B.
            length: int, the number of positions L the cache holds.

        Returns:
            A shape tuple.
        """
        return (batch_size, 2, self.num_heads, length, self.cache_width)

    def compute_cache(self, value, key=None):
        """Keys and values of a fixed source, stacked as (B, 2, N, S, W).

        Used for cross attention while decoding: computed once per source,
        then passed as `cache` (without `cache_update_index`) at every step.

        Args:
            value: (B, S, D_v) tensor, e.g. the encoder output.
            key: (B, S, D_k) tensor, defaults to `value`.

        Returns:
            The (B, 2, N, S, W) cache (`cache_shape`).
        """
        key = value if key is None else key
        return self._stacked_keys_and_values(key, value)

    def spec(self):
        """What a fast path needs of this layer, a `layer_spec.AttentionSpec`.

        The four projections' variables, the head counts and widths, and
        the refusal of a subclass (whose `call` may compute otherwise) or
        of a projection a plain product would not reproduce.
        """
        projections = [
            layer_spec.projection_spec(dense)
            for dense in (
                self._query_dense,
                self._key_dense,
                self._value_dense,
                self._output_dense,
            )
        ]
        refusal = next((p.refusal for p in projections if p.refusal), None)
        if type(self) is not MultiHeadAttention:
            refusal = f"attention={type(self).__name__}"
        return layer_spec.AttentionSpec(
            self.num_heads, self.key_dim, self.value_dim, *projections, refusal
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "value_dim": self.value_dim,
                "dropout": self.dropout,
                "use_bias": self.use_bias,
                "output_dim": self.output_dim,
                "attention_implementation": self.attention_implementation,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config
