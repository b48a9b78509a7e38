"""A Transformer decoding step on PyTorch without Keras' per-call overhead.

Why: PyTorch runs a decoding step eagerly, and at the sizes the zoo trains
each of its forty-odd Keras layer calls spends longer in Python (argument
and mask checks, dtype policies, `keras.ops` dispatch) than in arithmetic.
`TorchDecoderStep` computes the same numbers as the layers' `call()`s over
the same weights, in a few plain PyTorch operations per sublayer, so the
teaching layers keep their readable `call()` and `decoding_step` stays
the public, backend-agnostic step. `GenerativeModel` runs this step inside
its loops on PyTorch and the ordinary one everywhere else; the tests hold
the two equal (logits to 1e-5, greedy ids exactly).

What it mirrors, per step and for each (B, 1) query:

- `TokenAndPositionEmbedding(ids, start_index=index)`: the token row,
  scaled by sqrt(D) when the layer scales, plus the position code, read
  from a table that the layer's own position layer computes once per
  call of `generate`;
- `TransformerDecoderBlock` with caches (Fig. 7.15 (b)): pre- or
  post-norm residual sublayers, causal self attention over the keys
  written so far, cross attention over the precomputed source keys and
  values under the source padding mask, the feed-forward network;
  dropout is inactive while decoding;
- `MultiHeadAttention`'s zero output for a query that may attend to no
  key: a padding query (id 0, as a finished beam feeds), or a source with
  no real token;
- the closing norm and the output layer, tied to the token table or not.

Models it cannot mirror exactly (mixed precision, quantized or LoRA
projections, a custom layer norm) get `None` from `torch_decoder_step`
and decode through their ordinary step.

Shape legend:
    B: batch size
    D: model width
    N: number of heads
    H: head width
    L: positions a self-attention cache holds
    S: source length
    V: vocabulary size
"""

import math

import keras

from keras_seq.layers.multi_head_attention import MultiHeadAttention


def torch_decoder_step(embedding, blocks, final_norm, output_dense=None):
    """A `TorchDecoderStep` over these layers, or None where it cannot be.

    Args:
        embedding: the built `TokenAndPositionEmbedding` of the decoder's
            input, also the output layer when `output_dense` is None (tied
            embeddings).
        blocks: the built `TransformerDecoderBlock`s.
        final_norm: a `keras.layers.LayerNormalization` or
            `keras.layers.Identity` after the blocks.
        output_dense: the `keras.layers.Dense` output layer, or None.

    Returns:
        A `TorchDecoderStep`, or None off PyTorch, while gradients are
        recorded (the step writes the caches in place), or for layers it
        does not mirror exactly.
    """
    if keras.backend.backend() != "torch":
        return None
    import torch  # The PyTorch backend only.

    if torch.is_grad_enabled() or not _mirrors(
        embedding, blocks, final_norm, output_dense
    ):
        return None
    return TorchDecoderStep(embedding, blocks, final_norm, output_dense)


def _mirrors(embedding, blocks, final_norm, output_dense):
    """Whether `TorchDecoderStep` computes exactly what these layers do."""
    layers = [embedding, final_norm, *blocks]
    if output_dense is not None:
        layers.append(output_dense)
    policies = {(layer.compute_dtype, layer.variable_dtype) for layer in layers}
    if len(policies) != 1 or len({*next(iter(policies))}) != 1:
        return False  # Mixed precision casts weights at every call.
    if not isinstance(final_norm, keras.layers.Identity) and not _plain_norm(
        final_norm
    ):
        return False
    dense_layers = [] if output_dense is None else [output_dense]
    for block in blocks:
        dense_layers += [
            block._feed_forward_layer._intermediate_dense,
            block._feed_forward_layer._output_dense,
        ]
        for attention in _attentions(block):
            if type(attention) is not MultiHeadAttention:
                return False
            dense_layers += [
                attention._query_dense,
                attention._key_dense,
                attention._value_dense,
                attention._output_dense,
            ]
        norms = [block._self_attention_norm, block._feed_forward_norm]
        if block._cross_attention is not None:
            norms.append(block._cross_attention_norm)
        if not all(_plain_norm(norm) for norm in norms):
            return False
    # The step reads float weights; a quantized or LoRA layer keeps its call.
    table = embedding.token_embedding
    return not any(
        getattr(layer, "quantization_mode", None)
        or getattr(layer, "lora_enabled", False)
        for layer in [table, *dense_layers]
    )


def _plain_norm(layer):
    return (
        type(layer) is keras.layers.LayerNormalization
        and not layer.rms_scaling
        and tuple(layer.axis) in ((-1,), (2,))
    )


def _attentions(block):
    if block._cross_attention is None:
        return [block._self_attention]
    return [block._self_attention, block._cross_attention]


class TorchDecoderStep:
    """One decoder position in plain PyTorch, equal to the layers' step.

    Built once per call of `generate` or `beam_search` (under
    `torch.no_grad()`), it reads the layers' current weights then, joins
    each self attention's query, key and value projections into one
    (D, 3 N H) matrix, and computes the decoder's position table.

    Call arguments:
        token_ids: (B, 1) int ids at position `index`.
        index: int or scalar int tensor, their position.
        cache: the tuple of (B, 2, N, L, H) self-attention caches; each is
            written in place at `index`.
        cross_caches: the tuple of (B, 2, N, S, H) cross-attention caches,
            or None for blocks without cross attention.
        source_mask: (B, S) boolean source padding mask, or None.

    Returns:
        (B, V) logits of the next id, and the caches.
    """

    def __init__(self, embedding, blocks, final_norm, output_dense=None):
        self._table = embedding.token_embedding.embeddings.value  # (V, D)
        width = embedding.embedding_dim
        self._scale = math.sqrt(width) if embedding.scale_embeddings else None
        # The layer's own position codes, for every position at once.
        zeros = keras.ops.zeros((1, embedding.max_length, width), embedding.dtype)
        self._positions = embedding.position_embedding(zeros)[0]  # (L_max, D)
        self._blocks = [_BlockWeights(block) for block in blocks]
        self._final_norm = _norm_weights(final_norm)
        if output_dense is None:
            self._output = (self._table.t(), None)  # (D, V), tied
        else:
            self._output = (output_dense.kernel.value, output_dense.bias.value)

    def __call__(self, token_ids, index, cache, cross_caches=None, source_mask=None):
        index = int(index)
        ids = token_ids[:, 0]  # (B,)
        x = self._table[ids]  # (B, D)
        if self._scale is not None:
            x = x * self._scale
        x = x + self._positions[index]
        # A padding query attends to nothing: its attention outputs are 0.
        real = (ids != 0)[:, None]  # (B, 1)
        has_source = None
        if source_mask is not None:
            has_source = real & source_mask.any(dim=1, keepdim=True)  # (B, 1)
        updated = []
        for i, block in enumerate(self._blocks):
            x = block.self_attention(x, cache[i], index, real)
            if block.cross is not None:
                x = block.cross_attention(x, cross_caches[i], source_mask, has_source)
            x = block.feed_forward(x)
            updated.append(cache[i])
        x = _layer_norm(x, self._final_norm)
        return _linear(x, *self._output), tuple(updated)  # (B, V)


def _norm_weights(layer):
    """(gamma, beta, epsilon) of a layer norm; None for an identity."""
    if isinstance(layer, keras.layers.Identity):
        return None
    gamma = None if layer.gamma is None else layer.gamma.value
    beta = None if layer.beta is None else layer.beta.value
    return gamma, beta, layer.epsilon


def _layer_norm(x, weights):
    if weights is None:
        return x
    import torch  # The PyTorch backend only.

    gamma, beta, epsilon = weights
    return torch.nn.functional.layer_norm(x, x.shape[-1:], gamma, beta, epsilon)


def _flat_kernel(dense):
    """An (D, N, H) `EinsumDense` kernel as (D, N*H) and its bias (N*H,)."""
    kernel = dense.kernel.value
    kernel = kernel.reshape(kernel.shape[0], -1)
    bias = None if dense.bias is None else dense.bias.value.reshape(-1)
    return kernel, bias


def _linear(x, kernel, bias):
    import torch  # The PyTorch backend only.

    return torch.matmul(x, kernel) if bias is None else torch.addmm(bias, x, kernel)


def _activation(function):
    """The PyTorch function of a Keras activation, where one is exact."""
    import torch  # The PyTorch backend only.

    if function is keras.activations.relu:
        return torch.relu
    if function is keras.activations.linear:
        return lambda x: x
    return function  # Keras' own, which runs on PyTorch tensors.


class _BlockWeights:
    """One `TransformerDecoderBlock`'s weights, laid out for `(B, D)` rows."""

    def __init__(self, block):
        import torch  # The PyTorch backend only.

        self.norm_first = block.norm_first
        attention = block._self_attention
        self.heads = attention.num_heads
        self.head_dim = attention.key_dim
        self.score_scale = 1.0 / math.sqrt(attention.key_dim)
        projections = (attention._query_dense, attention._key_dense)
        parts = [_flat_kernel(d) for d in projections + (attention._value_dense,)]
        # One (D, 3 N H) product for the query, key and value of a step.
        self.qkv_kernel = torch.cat([kernel for kernel, _ in parts], dim=1)
        self.qkv_bias = None
        if parts[0][1] is not None:
            self.qkv_bias = torch.cat([bias for _, bias in parts])
        self.self_output = _output_weights(attention)
        self.self_norm = _norm_weights(block._self_attention_norm)
        self.cross = None
        if block._cross_attention is not None:
            cross = block._cross_attention
            self.cross = (_flat_kernel(cross._query_dense), _output_weights(cross))
            self.cross_norm = _norm_weights(block._cross_attention_norm)
        feed_forward = block._feed_forward_layer
        inner, outer = feed_forward._intermediate_dense, feed_forward._output_dense
        self.inner = (inner.kernel.value, _bias(inner))
        self.activation = _activation(inner.activation)
        self.outer = (outer.kernel.value, _bias(outer))
        self.feed_forward_norm = _norm_weights(block._feed_forward_norm)

    def _heads(self, x):
        """(B, N*H) rows as (B, N, 1, H) queries."""
        return x.reshape(x.shape[0], self.heads, 1, self.head_dim)

    def _sublayer(self, x, norm, sublayer):
        """The residual story of Eq. (7.31), pre- or post-norm."""
        residual = x
        if self.norm_first:
            x = _layer_norm(x, norm)
        x = sublayer(x) + residual
        if not self.norm_first:
            x = _layer_norm(x, norm)
        return x

    def self_attention(self, x, cache, index, real):
        """Causal self attention, writing this position's keys and values."""
        import torch  # The PyTorch backend only.

        def attend(x):
            qkv = _linear(x, self.qkv_kernel, self.qkv_bias)  # (B, 3 N H)
            batch = x.shape[0]
            qkv = qkv.reshape(batch, 3, self.heads, self.head_dim)
            cache[:, :, :, index] = qkv[:, 1:]  # (B, 2, N, H)
            # The keys up to `index` are exactly those the causal mask keeps.
            keys = cache[:, 0, :, : index + 1]  # (B, N, index + 1, H)
            values = cache[:, 1, :, : index + 1]
            context = _attend(qkv[:, 0, :, None], keys, values, None, self.score_scale)
            out = _linear(context, *self.self_output)  # (B, D)
            return torch.where(real, out, 0.0)

        return self._sublayer(x, self.self_norm, attend)

    def cross_attention(self, x, cache, source_mask, has_source):
        """Attention over the source's precomputed keys and values."""
        import torch  # The PyTorch backend only.

        query_weights, output_weights = self.cross

        def attend(x):
            queries = self._heads(_linear(x, *query_weights))  # (B, N, 1, H)
            mask = None if source_mask is None else source_mask[:, None, None, :]
            context = _attend(queries, cache[:, 0], cache[:, 1], mask, self.score_scale)
            out = _linear(context, *output_weights)  # (B, D)
            return out if has_source is None else torch.where(has_source, out, 0.0)

        return self._sublayer(x, self.cross_norm, attend)

    def feed_forward(self, x):
        def network(x):
            return _linear(self.activation(_linear(x, *self.inner)), *self.outer)

        return self._sublayer(x, self.feed_forward_norm, network)


def _attend(queries, keys, values, mask, scale):
    """Eq. (7.25) for one query per head: (B, N, 1, H) -> (B, N*H) context.

    PyTorch's fused kernel, one call for the scores, the softmax and the
    weighted sum. A source without real tokens gives NaN rows here; the
    caller zeroes them, as the layer does.
    """
    import torch  # The PyTorch backend only.

    context = torch.nn.functional.scaled_dot_product_attention(
        queries, keys, values, attn_mask=mask, scale=scale
    )  # (B, N, 1, H)
    return context.reshape(context.shape[0], -1)  # (B, N*H)


def _output_weights(attention):
    """W_c of Eq. (7.26) as a (N*V, D) matrix and its bias."""
    dense = attention._output_dense
    kernel = dense.kernel.value
    kernel = kernel.reshape(-1, kernel.shape[-1])
    bias = None if dense.bias is None else dense.bias.value
    return kernel, bias


def _bias(dense):
    return None if dense.bias is None else dense.bias.value
