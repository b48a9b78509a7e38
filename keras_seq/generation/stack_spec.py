"""A Transformer stack as one flat weight spec, for every fast path.

PyTorch's decoding step (`fast_step`) and the CTranslate2 writer
(`keras_seq.export.ctranslate2`) compute what the layers compute over the
same weights, laid out for plain matrix products. Both take them from
here: `flatten(stack, arrays)` reads the layers' public specs
(`keras_seq.layers.layer_spec`) and joins each self attention's query, key
and value kernels into one (D, 2NH + NV) product, each cross attention's
key and value kernels into one (D, NH + NV), flattens W_c to (NV, D),
reads the position table the embedding's own position layer computes,
the norms with their epsilon, the activation, and the output layer (None
when it is tied to the token table, whose logits bias, if any, the
embedding's spec holds). The position table is the one the layer computes,
so its layout (interleaved or concatenated sines and cosines, or learned
rows) reaches every path without a case of its own. `refusal(stack, ...)` says, in one
`"<option>=<value>"`, why a stack cannot be mirrored, so that a fast path
falls back to the layers and an export refuses in one line.

Shape legend:
    D: model width
    N: number of heads
    H: head width of queries and keys
    V: head width of values
    F: feed-forward width
    L: positions of the embedding
    K: vocabulary size
"""

import dataclasses
import math

import keras
import numpy as np

from keras_seq.layers import layer_spec


@dataclasses.dataclass(frozen=True)
class Stack:
    """The layers of a Transformer encoder or decoder, in order.

    Attributes:
        embedding: the built `TokenAndPositionEmbedding` of the input.
        blocks: the built `TransformerEncoderBlock`s or
            `TransformerDecoderBlock`s.
        final_norm: the `LayerNormalization` after the blocks, or a
            `keras.layers.Identity` (post-norm stacks).
        output_dense: the `Dense` logits layer, or None (tied to the
            token table, or an encoder).
    """

    embedding: object
    blocks: tuple
    final_norm: object
    output_dense: object = None

    def layers(self):
        every = (self.embedding, *self.blocks, self.final_norm, self.output_dense)
        return [layer for layer in every if layer is not None]


@dataclasses.dataclass(frozen=True)
class FlatAttention:
    """One attention's products: `fused` (D, 2NH + NV) for a self
    attention, (D, NH + NV) keys and values for a cross attention;
    `query` (D, NH); `output` (NV, D). Each is a (kernel, bias or None)."""

    num_heads: int
    key_dim: int
    value_dim: int
    scale: float
    query: tuple
    fused: tuple
    output: tuple


@dataclasses.dataclass(frozen=True)
class FlatNorm:
    gamma: object
    beta: object
    epsilon: float


@dataclasses.dataclass(frozen=True)
class FlatBlock:
    """One block: norms None where they are identities."""

    norm_first: bool
    self_attention: FlatAttention
    self_attention_norm: object
    cross_attention: object
    cross_attention_norm: object
    inner: tuple  # (D, F) kernel and bias
    outer: tuple  # (F, D) kernel and bias
    activation: object
    activation_name: str
    feed_forward_norm: object


@dataclasses.dataclass(frozen=True)
class FlatStack:
    """A whole stack: `table` (K, D), `scale` of a token row, `positions`
    (L, D), the blocks, `final_norm` (None: identity) and `output` (D, K)
    kernel and bias, None when tied to `table`; `output_bias` (K,) the tied
    output's logits bias, or None."""

    table: object
    scale: float
    positions: object
    blocks: tuple
    final_norm: object
    output: object
    output_bias: object = None


_ARRAYS = ("torch", "numpy")


def _reader(arrays):
    if arrays == "torch":
        import torch  # The PyTorch backend only.

        return (lambda variable: variable.value), (lambda xs: torch.cat(xs, dim=-1))

    def read(variable):
        return np.asarray(keras.ops.convert_to_numpy(variable), dtype="float32")

    return read, (lambda xs: np.concatenate(xs, axis=-1))


def _specs(stack):
    return (
        stack.embedding.spec(),
        [block.spec() for block in stack.blocks],
        layer_spec.norm_spec(stack.final_norm),
        None
        if stack.output_dense is None
        else layer_spec.projection_spec(stack.output_dense),
    )


def _attentions(block):
    return [a for a in (block.self_attention, block.cross_attention) if a]


def refusal(stack, equal_head_widths=False, activations=None):
    """Why plain products over `stack`'s weights would not give its
    numbers, as `"<option>=<value>"`, or None.

    Args:
        stack: a `Stack`.
        equal_head_widths: refuse `value_dim` other than `key_dim` (a path
            whose attention has one head width).
        activations: the activation names a path computes, or None for any
            Keras activation.
    """
    embedding, blocks, final_norm, output = _specs(stack)
    found = [embedding.refusal, final_norm.refusal]
    found.append(None if output is None else output.refusal)
    # Mixed precision casts the weights at every call; the blocks' sublayers
    # take their block's policy.
    layers = stack.layers()
    dtypes = {(layer.compute_dtype, layer.variable_dtype) for layer in layers}
    if len(dtypes) != 1 or len(set(next(iter(dtypes)))) != 1:
        names = sorted({layer.dtype_policy.name for layer in layers})
        found.append(f"dtype_policy={names[0] if len(names) == 1 else names!r}")
    for block in blocks:
        norms = [block.self_attention_norm, block.feed_forward_norm]
        norms.append(block.cross_attention_norm)
        found += [norm.refusal for norm in norms if norm is not None]
        feed_forward = block.feed_forward
        found += [feed_forward.inner.refusal, feed_forward.outer.refusal]
        if activations is not None and feed_forward.activation_name not in activations:
            found.append(f"activation={feed_forward.activation_name!r}")
        for attention in _attentions(block):
            found.append(attention.refusal)
            if equal_head_widths and attention.value_dim != attention.key_dim:
                found.append(
                    f"value_dim={attention.value_dim} (key_dim={attention.key_dim})"
                )
    return next((reason for reason in found if reason), None)


def _norm(spec, read):
    if spec is None or spec.identity:
        return None
    gamma = None if spec.gamma is None else read(spec.gamma)
    beta = None if spec.beta is None else read(spec.beta)
    return FlatNorm(gamma, beta, spec.epsilon)


def _projection(spec, read):
    """A (D, ..., out) kernel as (D, prod(out)), its bias flat."""
    kernel = read(spec.kernel)
    kernel = kernel.reshape(kernel.shape[0], -1)
    bias = None if spec.bias is None else read(spec.bias).reshape(-1)
    return kernel, bias


def _joined(specs, read, concat):
    parts = [_projection(spec, read) for spec in specs]
    kernel = concat([kernel for kernel, _ in parts])
    if parts[0][1] is None:
        return kernel, None
    return kernel, concat([bias for _, bias in parts])


def _attention(spec, read, concat, self_attention):
    joined = (spec.query, spec.key, spec.value) if self_attention else (spec.key,)
    if not self_attention:
        joined += (spec.value,)
    kernel = read(spec.output.kernel)  # (N, V, D)
    bias = None if spec.output.bias is None else read(spec.output.bias)
    return FlatAttention(
        num_heads=spec.num_heads,
        key_dim=spec.key_dim,
        value_dim=spec.value_dim,
        scale=1.0 / math.sqrt(spec.key_dim),
        query=_projection(spec.query, read),
        fused=_joined(joined, read, concat),
        output=(kernel.reshape(-1, kernel.shape[-1]), bias),  # (NV, D)
    )


def _block(spec, read, concat):
    cross = spec.cross_attention
    feed_forward = spec.feed_forward
    return FlatBlock(
        norm_first=spec.norm_first,
        self_attention=_attention(spec.self_attention, read, concat, True),
        self_attention_norm=_norm(spec.self_attention_norm, read),
        cross_attention=None
        if cross is None
        else _attention(cross, read, concat, False),
        cross_attention_norm=_norm(spec.cross_attention_norm, read),
        inner=_projection(feed_forward.inner, read),
        outer=_projection(feed_forward.outer, read),
        activation=feed_forward.activation,
        activation_name=feed_forward.activation_name,
        feed_forward_norm=_norm(spec.feed_forward_norm, read),
    )


def flatten(stack, arrays):
    """The `FlatStack` of `stack`, as PyTorch tensors or NumPy arrays.

    Args:
        stack: a `Stack` that `refusal` accepts.
        arrays: `"torch"` (the variables' own tensors and products of them,
            PyTorch backend only) or `"numpy"` (float32 copies).
    """
    if arrays not in _ARRAYS:
        raise ValueError(
            f"`arrays` must be one of {list(_ARRAYS)}; received {arrays!r}."
        )
    read, concat = _reader(arrays)
    embedding, blocks, final_norm, output = _specs(stack)
    positions = embedding.position_table()  # (L, D)
    if arrays == "numpy":
        positions = np.asarray(keras.ops.convert_to_numpy(positions), dtype="float32")
    return FlatStack(
        table=read(embedding.table),
        scale=embedding.scale,
        positions=positions,
        blocks=tuple(_block(block, read, concat) for block in blocks),
        final_norm=_norm(final_norm, read),
        output=None if output is None else _projection(output, read),
        output_bias=(
            None
            if output is not None or embedding.output_bias is None
            else read(embedding.output_bias)
        ),
    )
