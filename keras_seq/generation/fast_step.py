"""Transformer decoding on PyTorch without Keras' per-call overhead.

Why: PyTorch runs a decoding step eagerly, and at the sizes the zoo trains
each of its forty-odd Keras layer calls spends longer in Python (argument
and mask checks, dtype policies, `keras.ops` dispatch) than in arithmetic;
the encoder's pass, once per call, pays the same for its twenty-odd.
`TorchDecoderStep` and `TorchEncoder` compute the same numbers as the
layers' `call()`s over the same weights, in a few plain PyTorch operations
per sublayer (`keras_seq.generation.torch_weights`), so the teaching layers
keep their readable `call()` and `decoding_step` stays the public,
backend-agnostic step. `GenerativeModel` runs them inside its loops on
PyTorch and the ordinary path everywhere else; the tests hold the two
equal (logits to 1e-5, ids exactly).

What the step mirrors, per step and for each (B, 1) query:

- `TokenAndPositionEmbedding(ids, start_index=index)`: the token row,
  scaled by sqrt(D) when the layer scales, plus the position code, read
  from a table that the layer's own position layer computes;
- `TransformerDecoderBlock` with caches (Fig. 7.15 (b)): pre- or
  post-norm residual sublayers, causal self attention over the keys
  written so far, cross attention over the precomputed source keys and
  values under the source padding mask, the feed-forward network;
  dropout is inactive while decoding;
- `MultiHeadAttention`'s zero output for a query that may attend to no
  key: a padding query (id 0, as a finished beam feeds), or a source with
  no real token;
- the closing norm and the output layer, tied to the token table (with
  its logits bias, if any) or not; the feed-forward activation (ReLU,
  GELU, SiLU in PyTorch's own kernels, another Keras activation as Keras
  computes it).

The encoder mirrors `TransformerEncoderBlock` (Fig. 7.15 (a)) the same way
over the whole (B, S) source, with its padding mask, and the step computes
the cross-attention caches from the encoder's output.

Both are built from the stack's flat weight spec
(`keras_seq.generation.stack_spec.flatten`, which the CTranslate2 writer
reads too) once for a set of layers and kept while their weights are
unchanged (`torch_weights.WeightsVersion`): what they derive (joined
kernels, position tables) is then not recomputed at every call of
`generate`. Models they cannot mirror exactly get `None` and decode
through their ordinary path: those `stack_spec.refusal` names (mixed
precision, quantized or LoRA projections, a custom layer norm or
attention), and heads whose `value_dim` differs from `key_dim`, whose
padded caches the step does not lay out.

Shape legend:
    B: batch size
    D: model width
    N: number of heads
    H: head width
    L: positions a self-attention cache holds
    S: source length
    V: vocabulary size
"""

import weakref

import keras

from keras_seq import masks
from keras_seq.generation import stack_spec
from keras_seq.generation import torch_weights as tw
from keras_seq.generation.loop_policy import current as current_policy

# Built steps and encoders by their first block, with the weights' version.
_BUILT = weakref.WeakKeyDictionary()


def torch_decoder_step(stack):
    """A `TorchDecoderStep` over a decoder stack, or None where it cannot be.

    Args:
        stack: a `stack_spec.Stack` of built layers: the decoder's
            `TokenAndPositionEmbedding` (also the output layer when
            `output_dense` is None: tied embeddings), its
            `TransformerDecoderBlock`s, the closing norm and the `Dense`
            output layer or None.

    Returns:
        A `TorchDecoderStep`, or None off PyTorch, while gradients are
        recorded (the step writes the caches in place), or for layers it
        does not mirror exactly (`mirror_refusal`).
    """
    return _built(TorchDecoderStep, stack)


def torch_encoder(stack):
    """A `TorchEncoder` over an encoder stack, or None where it cannot be.

    Args:
        stack: a `stack_spec.Stack` of the source's
            `TokenAndPositionEmbedding`, the `TransformerEncoderBlock`s and
            the closing norm.

    Returns:
        A `TorchEncoder`, or None as `torch_decoder_step`.
    """
    return _built(TorchEncoder, stack)


def mirror_refusal(stack):
    """Why the PyTorch step does not mirror `stack`, or None where it does.

    `stack_spec.refusal`, and heads of unequal widths: the step writes
    (B, 2, N, L, H) caches of one head width.
    """
    return stack_spec.refusal(stack, equal_head_widths=True)


def _built(kind, stack):
    """`kind(flat stack)`, reused while the weights are unchanged."""
    if not current_policy().fast_step or keras.backend.backend() != "torch":
        return None
    import torch  # The PyTorch backend only.

    if torch.is_grad_enabled() or mirror_refusal(stack) is not None:
        return None
    layers = stack.layers()
    key = (kind, *map(id, layers))
    kept = _BUILT.get(stack.blocks[0])
    if kept is not None and kept[0] == key and kept[1].current():
        return kept[2]
    variables = [variable for layer in layers for variable in layer.variables]
    version = tw.WeightsVersion(variables)
    made = kind(stack_spec.flatten(stack, "torch"))
    _BUILT[stack.blocks[0]] = (key, version, made)
    return made


class _Embedding:
    """`TokenAndPositionEmbedding` as a table lookup plus position codes."""

    def __init__(self, flat):
        self.table = flat.table  # (V, D)
        # Each row scaled once, not at every step: the same products.
        self.rows = self.table if flat.scale == 1.0 else self.table * flat.scale
        self.positions = flat.positions  # (L_max, D)

    def __call__(self, ids, positions):
        return self.rows[ids] + positions  # (..., D)


class TorchEncoder:
    """The encoder's pass in plain PyTorch, equal to the layers' `encode`.

    Call arguments:
        token_ids: (B, S) int source ids, 0 = padding.

    Returns:
        `(encoded, source_mask)`: the (B, S, D) encoder output z* and the
        (B, S) boolean padding mask.
    """

    def __init__(self, flat):
        self._embedding = _Embedding(flat)
        self._blocks = [_EncoderBlockWeights(block) for block in flat.blocks]
        self._final_norm = flat.final_norm

    def __call__(self, token_ids):
        import torch  # The PyTorch backend only.

        ids = torch.as_tensor(keras.ops.convert_to_tensor(token_ids))
        source_mask = masks.padding_mask(ids)  # (B, S)
        x = self._embedding(ids, self._embedding.positions[: ids.shape[1]])
        # Keys are masked by the source's padding; a query that is padding,
        # or has no real key at all, gets a zero attention output.
        key_mask = source_mask[:, None, None, :]  # (B, 1, 1, S)
        has_key = source_mask & source_mask.any(dim=1, keepdim=True)  # (B, S)
        for block in self._blocks:
            x = block.self_attention(x, key_mask, has_key[..., None])
            x = block.feed_forward(x)
        return tw.layer_norm(x, self._final_norm), source_mask


class _EncoderBlockWeights(tw.BlockWeights):
    """One `TransformerEncoderBlock`'s weights, for (B, S, D) sequences."""

    def __init__(self, flat):
        super().__init__(flat)
        self.attention = tw.AttentionWeights(flat.self_attention)

    def self_attention(self, x, key_mask, has_key):
        import torch  # The PyTorch backend only.

        weights = self.attention

        def attend(x):
            qkv = weights.split_heads(tw.linear(x, *weights.joined), 3)
            queries, keys, values = qkv.unbind(1)  # (B, N, S, H) each
            context = tw.attend(queries, keys, values, key_mask, weights.scale)
            out = tw.linear(context, *weights.output)  # (B, S, D)
            return torch.where(has_key, out, 0.0)

        return self.sublayer(x, self.self_norm, attend)


class TorchDecoderStep:
    """One decoder position in plain PyTorch, equal to the layers' step.

    Built from the layers' weights (under `torch.no_grad()`), it joins each
    self attention's query, key and value projections into one (D, 3 N H)
    matrix and each cross attention's key and value projections into one
    (D, 2 N H), and computes the decoder's position table.

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

    def __init__(self, flat):
        self._embedding = _Embedding(flat)
        self._blocks = [_DecoderBlockWeights(block) for block in flat.blocks]
        self._final_norm = flat.final_norm
        self._output = flat.output
        if flat.output is None:
            # (D, V), tied, and the (V,) logits bias or None.
            self._output = (self._embedding.table.t(), flat.output_bias)

    def cross_attention_caches(self, encoded):
        """Keys and values of z* (B, S, D) for every block, computed once.

        Returns:
            A tuple with one (B, 2, N, S, H) cache per block, as
            `TransformerDecoderBlock.compute_cross_attention_cache`.
        """
        return tuple(block.cross_attention_cache(encoded) for block in self._blocks)

    def __call__(self, token_ids, index, cache, cross_caches=None, source_mask=None):
        index = int(index)
        ids = token_ids[:, 0]  # (B,)
        x = self._embedding(ids, self._embedding.positions[index])  # (B, D)
        # A padding query attends to nothing: its attention outputs are 0.
        real = masks.padding_mask(token_ids)  # (B, 1)
        has_source, mask = None, None
        if source_mask is not None:
            has_source = real & source_mask.any(dim=1, keepdim=True)  # (B, 1)
            mask = source_mask[:, None, None, :]  # (B, 1, 1, S)
        for i, block in enumerate(self._blocks):
            x = block.self_attention(x, cache[i], index, real)
            if block.cross is not None:
                x = block.cross_attention(x, cross_caches[i], mask, has_source)
            x = block.feed_forward(x)
        x = tw.layer_norm(x, self._final_norm)
        return tw.linear(x, *self._output), cache  # (B, V)


class _DecoderBlockWeights(tw.BlockWeights):
    """One `TransformerDecoderBlock`'s weights, laid out for (B, D) rows."""

    def __init__(self, flat):
        super().__init__(flat)
        self.attention = tw.AttentionWeights(flat.self_attention)
        self.cross = None
        if flat.cross_attention is not None:
            self.cross = tw.AttentionWeights(flat.cross_attention)
            self.cross_norm = flat.cross_attention_norm

    def cross_attention_cache(self, encoded):
        """(B, S, D) -> the (B, 2, N, S, H) keys and values of z*."""
        weights = self.cross
        keys_values = tw.linear(encoded, *weights.joined)  # (B, S, 2 N H)
        return weights.split_heads(keys_values, 2).contiguous()

    def self_attention(self, x, cache, index, real):
        """Causal self attention, writing this position's keys and values."""
        import torch  # The PyTorch backend only.

        weights = self.attention

        def attend(x):
            qkv = tw.linear(x, *weights.joined)  # (B, 3 N H)
            batch = x.shape[0]
            qkv = qkv.reshape(batch, 3, weights.heads, weights.head_dim)
            cache[:, :, :, index] = qkv[:, 1:]  # (B, 2, N, H)
            # The keys up to `index` are exactly those the causal mask keeps.
            keys = cache[:, 0, :, : index + 1]  # (B, N, index + 1, H)
            values = cache[:, 1, :, : index + 1]
            queries = qkv[:, 0, :, None]  # (B, N, 1, H)
            context = tw.attend(queries, keys, values, None, weights.scale)
            out = tw.linear(context[:, 0], *weights.output)  # (B, D)
            return torch.where(real, out, 0.0)

        return self.sublayer(x, self.self_norm, attend)

    def cross_attention(self, x, cache, mask, has_source):
        """Attention over the source's precomputed keys and values."""
        import torch  # The PyTorch backend only.

        weights = self.cross

        def attend(x):
            queries = tw.linear(x, *weights.query)  # (B, N H)
            queries = queries.reshape(x.shape[0], weights.heads, 1, weights.head_dim)
            context = tw.attend(queries, cache[:, 0], cache[:, 1], mask, weights.scale)
            out = tw.linear(context[:, 0], *weights.output)  # (B, D)
            return out if has_source is None else torch.where(has_source, out, 0.0)

        return self.sublayer(x, self.cross_norm, attend)
