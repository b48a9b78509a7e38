"""Multi-head attention with boolean masks and a key/value cache.

Shape legend:
    B: batch size
    T: query length
    S: key/value length
    D: model width (query feature size)
    N: number of heads
    H: head width for keys and queries (`key_dim`)
    V: head width for values (`value_dim`)
"""

import math

import keras
from keras import ops

from keras_seq import masks as masks_lib
from keras_seq.layers.hashed_dropout import HashedDropout

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


def _clone(initializer):
    return initializer.__class__.from_config(initializer.get_config())


def _static_dim(x, axis):
    return masks_lib.static_dim(x.shape[axis])


@keras.saving.register_keras_serializable(package="keras_seq")
class MultiHeadAttention(keras.layers.Layer):
    """Multi-head scaled dot-product attention, Eq. (7.25)–(7.27).

    Each head `h` projects queries, keys and values with its own `W_q^h`,
    `W_k^h`, `W_v^h`, attends with scores `q·k / sqrt(key_dim)` and the heads
    are combined by `W_c` (Eq. 7.26; summing `W_c^h u^h` over heads is the
    same as concatenating the heads and applying one matrix).

    Masks are boolean with `True` meaning "may attend". Padding masks arrive
    implicitly from `mask_zero` embeddings (`query_mask`, `value_mask`) or
    explicitly; `attention_mask` (B, T, S) and the causal mask are merged
    with them by logical AND. A query row that may attend to no key returns
    a zero vector (and zero gradients), never NaN.

    Two numerically equivalent paths compute the attention: a fused one
    through `keras.ops.dot_product_attention`, and an explicit einsum and
    softmax, used when attention scores are returned or attention dropout
    is active. With a cache (keys and values stacked heads first) the
    explicit computation always runs, over the whole stack
    (`_cached_attention`).

    Args:
        num_heads: int, number of heads N.
        key_dim: int, head width H of queries and keys (m in the book).
        value_dim: int, head width V of values (m_v). Defaults to `key_dim`.
        dropout: float, dropout rate on the attention weights.
        use_bias: bool, whether the four projections have biases. `False`
            reproduces the book's parameter counts (Eq. 7.32).
        output_dim: int, width of the output. Defaults to the query width.
        attention_implementation: `"auto"`, `"fused"` or `"explicit"`.
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
        attention_mask: (B, T, S) boolean mask.
        use_causal_mask: bool; queries attend only to keys at or before
            their own position, bottom-right aligned (or from
            `cache_update_index` when a cache is updated).
        cache: (B, 2, N, S, H) stacked keys and values, heads first (see
            `cache_shape`). With
            `cache_update_index` the new keys and values are written at that
            index (self attention while decoding); without it the cache is
            used as is (cross attention over a fixed source). While a cache
            is updated, implicit key masks of the new tokens are ignored:
            pass key padding of the cache through `attention_mask`.
        cache_update_index: int or scalar tensor, where the new keys go.
        return_attention_scores: bool, also return the (B, N, T, S) weights.
        training: bool, whether dropout is active.

    Returns:
        `output` (B, T, output_dim); with `return_attention_scores` also the
        scores; with `cache` also the (possibly updated) cache, last.

    Example:
    >>> layer = MultiHeadAttention(num_heads=2, key_dim=4)
    >>> x = keras.random.normal((1, 5, 8))
    >>> layer(x, x, use_causal_mask=True).shape
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
        for name, value in (("num_heads", num_heads), ("key_dim", key_dim)):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(
                    f"`{name}` must be a positive integer; received {value!r}."
                )
        if value_dim is not None and (not isinstance(value_dim, int) or value_dim <= 0):
            raise ValueError(
                f"`value_dim` must be a positive integer or None; "
                f"received {value_dim!r}."
            )
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"`dropout` must be in [0, 1); received {dropout}.")
        if attention_implementation not in IMPLEMENTATIONS:
            raise ValueError(
                f"`attention_implementation` must be one of {IMPLEMENTATIONS}; "
                f"received {attention_implementation!r}."
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
            kernel_initializer=_clone(self.kernel_initializer),
            bias_initializer=_clone(self.bias_initializer),
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
        # (B, T, D) x (D, N, H) -> (B, T, N, H)
        self._query_dense = self._dense("btd,dnh->btnh", (None, n, h), "nh", "query")
        self._query_dense.build(query_shape)
        self._key_dense = self._dense("bsd,dnh->bsnh", (None, n, h), "nh", "key")
        self._key_dense.build(key_shape)
        self._value_dense = self._dense("bsd,dnh->bsnh", (None, n, v), "nh", "value")
        self._value_dense.build(value_shape)
        # (B, T, N, V) x (N, V, D) -> (B, T, D)
        self._output_dense = self._dense(
            "btnv,nvd->btd", (None, output_dim), "d", "attention_output"
        )
        self._output_dense.build(tuple(query_shape[:-1]) + (n, v))
        self._dropout_layer = HashedDropout(self.dropout, dtype=self.dtype_policy)
        self.built = True

    def _project(self, dense, x):
        """`dense(x)` for a (D, N, H) projection, as one (D, N*H) matmul.

        The same values as the `EinsumDense` call, whose weights these are,
        shaped so that XLA on the CPU compiles a single row (a decoding
        step at batch 1) into its vectorized matrix-vector kernel with the
        bias add fused: about 1.5-2 us for `small`'s 128 x 128 projection
        where the einsum took 19 us. The bias is flattened by joining its
        heads' rows: flattened with a reshape, XLA moves the reshape past
        the add (`reshape(dot) + bias`) and then compiles the lone
        matrix-vector product as an elementwise loop.
        """
        if getattr(dense, "quantization_mode", None) or getattr(
            dense, "lora_enabled", False
        ):
            return dense(x)
        d, n, h = dense.kernel.shape
        y = ops.matmul(x, ops.reshape(dense.kernel, (d, n * h)))  # (B, T, N*H)
        if dense.bias is not None:
            bias = dense.bias  # (N, H)
            y = y + ops.concatenate([bias[i] for i in range(n)], axis=0)
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        return ops.reshape(y, (batch, length, n, h))  # (B, T, N, H)

    # Masks.

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
        masks_lib.check_mask_shape(
            attention_mask, "attention_mask", (batch, query_length, key_length)
        )
        causal = None
        if use_causal_mask:
            causal = masks_lib.causal_mask(
                ops.shape(query)[1], ops.shape(keys)[key_axis], offset=causal_offset
            )[None]  # (1, T, S)
        return masks_lib.merge_masks(
            masks_lib.attention_mask_from_padding(query_mask, key_mask),
            attention_mask,
            causal,
        )

    # Attention.

    def _use_fused(self, return_attention_scores, training):
        if self.attention_implementation == "explicit":
            return False
        if return_attention_scores:
            return False
        if training and self.dropout > 0:
            return False
        if self.compute_dtype == "float16" and keras.backend.backend() == "jax":
            # XLA:CPU has no float16 dot with float32 accumulation, which
            # JAX's fused attention asks for; the explicit path works.
            return _on_gpu()
        return True

    def _explicit_attention(self, query, key, value, mask, training):
        # (B, T, N, H) x (B, S, N, H) -> (B, N, T, S)
        scores = ops.einsum("btnh,bsnh->bnts", query, key)
        weights = self._attention_weights(scores, mask, training)
        dropped = self._dropout_layer(weights, training=training)
        # (B, N, T, S) x (B, S, N, V) -> (B, T, N, V)
        context = ops.einsum("bnts,bsnv->btnv", dropped, value)
        return context, weights

    def _attention_weights(self, scores, mask, training):
        """(B, N, T, S) raw scores -> masked softmax weights (B, N, T, S)."""
        scores = ops.multiply(
            scores, ops.cast(1.0 / math.sqrt(self.key_dim), scores.dtype)
        )
        # Softmax in float32: float16 logits lose the small differences that
        # decide the weights, and its range is too short for masked values.
        scores = ops.cast(scores, "float32")
        if mask is not None:
            scores = ops.where(
                mask[:, None, :, :], scores, masks_lib.masked_value("float32")
            )
        weights = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        if mask is not None:
            weights = ops.where(mask[:, None, :, :], weights, 0)
        return weights

    def _fused_attention(self, query, key, value, mask):
        if mask is not None:
            mask = mask[:, None, :, :]  # (B, 1, T, S), broadcast over heads
        return ops.dot_product_attention(
            query, key, value, mask=mask, scale=1.0 / math.sqrt(self.key_dim)
        )

    def _cached_attention(self, query, cache, mask, training):
        """Attention over a stacked cache (B, 2, N, S, H), read in place.

        The same numbers as `_explicit_attention`. XLA on the CPU runs a
        batched matrix product on whole buffers whose batch axes come
        first, so taking the keys or the values out of the stacked cache
        (a strided slice), or reading a cache whose positions come before
        its heads, copied every cache at every decoding step: 8 copies a
        step for `small`'s 2 decoder blocks, 14% of a greedy call at batch
        32. Here both products run over the whole stack, with (B, 2, N) as
        batch axes, and the keys' scores and the values' context are taken
        from their results: twice the arithmetic of two products of one
        query row each, against copying two (B, N, S, H) tensors.
        """
        query = ops.transpose(query, (0, 2, 1, 3))[:, None]  # (B, 1, N, T, H)
        both = ops.concatenate([query, query], axis=1)  # (B, 2, N, T, H)
        scores = ops.einsum("bcnth,bcnsh->bcnts", both, cache)[:, 0]  # (B, N, T, S)
        weights = self._attention_weights(scores, mask, training)
        dropped = self._dropout_layer(weights, training=training)[:, None]
        dropped = ops.concatenate([dropped, dropped], axis=1)  # (B, 2, N, T, S)
        context = ops.einsum("bcnts,bcnsv->bcntv", dropped, cache)[:, 1]
        return ops.transpose(context, (0, 2, 1, 3)), weights  # (B, T, N, V)

    # Cache.

    def cache_shape(self, batch_size, length):
        """The shape of this layer's cache: (B, 2, N, L, H).

        Keys then values, each heads first (B, N, L, H); `_cached_attention`
        says why heads come before positions.
        """
        return (batch_size, 2, self.num_heads, length, self.key_dim)

    def compute_cache(self, value, key=None):
        """Keys and values of a fixed source, stacked as (B, 2, N, S, H).

        Used for cross attention while decoding: computed once per source,
        then passed as `cache` (without `cache_update_index`) at every step.
        """
        if self.value_dim != self.key_dim:
            raise ValueError(
                "A cache stacks keys and values, so `value_dim` must equal "
                f"`key_dim`; received key_dim={self.key_dim}, "
                f"value_dim={self.value_dim}."
            )
        key = value if key is None else key
        return self._stack_heads_first(key, value)

    def _stack_heads_first(self, key, value):
        """Projected keys and values of (B, S, D) inputs as (B, 2, N, S, H)."""
        return ops.stack(
            [
                ops.transpose(self._project(self._key_dense, key), (0, 2, 1, 3)),
                ops.transpose(self._project(self._value_dense, value), (0, 2, 1, 3)),
            ],
            axis=1,
        )

    def _keys_and_values(self, value, key, cache, cache_update_index):
        if cache is None:
            if cache_update_index is not None:
                raise ValueError(
                    "`cache_update_index` was given without a `cache`; pass "
                    "both, or neither."
                )
            return (
                self._project(self._key_dense, key),
                self._project(self._value_dense, value),
                None,
            )
        _check_rank(cache, 5, "cache", "(batch_size, 2, num_heads, length, key_dim)")
        expected = (None, 2, self.num_heads, None, self.key_dim)
        masks_lib.check_mask_shape(cache, "cache", expected)
        if cache_update_index is not None:
            # One update of the stacked cache, which a compiled decoding
            # loop does in place; updating keys and values apart and
            # stacking them again copied the whole cache at every step.
            new = self._stack_heads_first(key, value)  # (B, 2, N, T, H)
            cache = ops.slice_update(
                cache, [0, 0, 0, cache_update_index, 0], new
            )  # (B, 2, N, S, H)
        # `_cached_attention` reads keys and values from the stack itself.
        return None, None, cache

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
        _check_rank(query, 3, "query", "(batch_size, query_length, dim)")
        if value is None and (cache is None or cache_update_index is not None):
            raise ValueError("`value` is required unless a fixed `cache` is given.")
        if key is None:
            key = value
        _check_rank(value, 3, "value", "(batch_size, value_length, dim)")
        _check_rank(key, 3, "key", "(batch_size, key_length, dim)")
        if value is not None:
            key_len, value_len = _static_dim(key, 1), _static_dim(value, 1)
            if None not in (key_len, value_len) and key_len != value_len:
                raise ValueError(
                    "`key` and `value` must have the same length; received "
                    f"key shape {tuple(key.shape)} and value shape "
                    f"{tuple(value.shape)}."
                )
        if key_mask is None:
            key_mask = value_mask
        updating = cache is not None and cache_update_index is not None
        if updating:
            key_mask = None  # The keys are the cache's, not the new tokens'.

        query_heads = self._project(self._query_dense, query)  # (B, T, N, H)
        keys, values, cache = self._keys_and_values(
            value, key, cache, cache_update_index
        )  # (B, S, N, H) and (B, S, N, V), or only the (B, 2, N, S, H) cache
        mask = self._attention_mask(
            query,
            keys if cache is None else cache,
            1 if cache is None else 3,  # the axis of the key positions
            query_mask,
            key_mask,
            attention_mask,
            use_causal_mask,
            causal_offset=cache_update_index if updating else None,
        )
        if cache is not None:
            context, scores = self._cached_attention(query_heads, cache, mask, training)
        elif self._use_fused(return_attention_scores, training):
            context = self._fused_attention(query_heads, keys, values, mask)
            scores = None
        else:
            context, scores = self._explicit_attention(
                query_heads, keys, values, mask, training
            )
        output = self._output_dense(context)  # (B, T, D)
        if mask is not None:
            # A query with no key to attend to gets a zero vector: the softmax
            # over an all-masked row is uniform, not zero, and the output
            # bias would leak through as well.
            has_key = ops.any(mask, axis=-1)[:, :, None]  # (B, T, 1)
            output = ops.where(has_key, output, ops.zeros_like(output))

        outputs = (output,)
        if return_attention_scores:
            outputs += (scores,)
        if cache is not None:
            outputs += (cache,)
        return outputs[0] if len(outputs) == 1 else outputs

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


def _on_gpu():
    import jax

    return jax.default_backend() == "gpu"
