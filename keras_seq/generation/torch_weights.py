"""Transformer sublayers in plain PyTorch over Keras layers' own weights.

The pieces `fast_step` builds the decoder step and the encoder pass from:
which layers they can mirror exactly, each layer's weights laid out for
plain PyTorch products, and the sublayers of Eq. (7.31) computed from
them. PyTorch backend only; every function imports `torch` itself, so the
module imports on every backend.

Shape legend:
    B: batch size
    T: query positions
    S: key positions
    D: model width
    N: number of heads
    H: head width
"""

import math

import keras

from keras_seq.layers.multi_head_attention import MultiHeadAttention


def mirrors(layers, blocks):
    """Whether plain PyTorch over these layers' weights computes what they do.

    Args:
        layers: the embedding, norm and dense layers besides the blocks
            (a `keras.layers.Identity` norm or None are allowed).
        blocks: `TransformerEncoderBlock`s or `TransformerDecoderBlock`s.

    Returns:
        False for mixed precision (which casts weights at every call), an
        attention other than `MultiHeadAttention`, a layer norm with RMS
        scaling or another axis, and quantized or LoRA layers, whose calls
        read other weights than the float kernels.
    """
    layers = [layer for layer in layers if layer is not None]
    norms, dense_layers = [], []
    for layer in layers:
        if isinstance(layer, keras.layers.Identity):
            continue
        if isinstance(layer, keras.layers.LayerNormalization):
            norms.append(layer)
        elif isinstance(layer, keras.layers.Dense):
            dense_layers.append(layer)
        elif hasattr(layer, "token_embedding"):
            dense_layers.append(layer.token_embedding)
        else:
            return False
    for block in blocks:
        feed_forward = block._feed_forward_layer
        dense_layers += [feed_forward._intermediate_dense, feed_forward._output_dense]
        norms += [block._self_attention_norm, block._feed_forward_norm]
        for attention in attentions(block):
            if type(attention) is not MultiHeadAttention:
                return False
            dense_layers += [
                attention._query_dense,
                attention._key_dense,
                attention._value_dense,
                attention._output_dense,
            ]
        if attentions(block)[1:]:
            norms.append(block._cross_attention_norm)
    everything = [*layers, *blocks]
    policies = {(layer.compute_dtype, layer.variable_dtype) for layer in everything}
    if len(policies) != 1 or len({*next(iter(policies))}) != 1:
        return False  # Mixed precision casts weights at every call.
    if not all(_plain_norm(norm) for norm in norms):
        return False
    return not any(
        getattr(layer, "quantization_mode", None)
        or getattr(layer, "lora_enabled", False)
        for layer in dense_layers
    )


def _plain_norm(layer):
    return (
        type(layer) is keras.layers.LayerNormalization
        and not layer.rms_scaling
        and tuple(layer.axis) in ((-1,), (2,))
    )


def attentions(block):
    """A block's self attention, then its cross attention if it has one."""
    cross = getattr(block, "_cross_attention", None)
    if cross is None:
        return [block._self_attention]
    return [block._self_attention, cross]


class WeightsVersion:
    """Whether the weights of some Keras variables are still those read.

    PyTorch counts the in-place writes to a tensor (`_version`), and
    Keras' PyTorch variables assign in place: an optimizer step, a
    `set_weights` or a checkpoint load changes the count. What was derived
    from the weights (joined kernels, position tables) is kept while no
    count has changed. The counts are read through plain `detach()`ed
    aliases, which share each parameter's counter: reading them through
    the parameters themselves dispatches every attribute read in Python.
    """

    def __init__(self, variables):
        self._tensors = [variable.value.detach() for variable in variables]
        self._seen = self._read()

    def _read(self):
        return [tensor._version for tensor in self._tensors]

    def current(self):
        return self._read() == self._seen


def norm_weights(layer):
    """(gamma, beta, epsilon) of a layer norm; None for an identity."""
    if isinstance(layer, keras.layers.Identity):
        return None
    gamma = None if layer.gamma is None else layer.gamma.value
    beta = None if layer.beta is None else layer.beta.value
    return gamma, beta, layer.epsilon


def layer_norm(x, weights):
    if weights is None:
        return x
    import torch  # The PyTorch backend only.

    gamma, beta, epsilon = weights
    return torch.nn.functional.layer_norm(x, x.shape[-1:], gamma, beta, epsilon)


def linear(x, kernel, bias):
    """x @ kernel + bias over the last axis of x (any rank)."""
    import torch  # The PyTorch backend only.

    if bias is None:
        return torch.matmul(x, kernel)
    if x.dim() == 2:
        return torch.addmm(bias, x, kernel)
    return torch.matmul(x, kernel) + bias


def dense_weights(dense):
    """A `Dense` layer's (kernel, bias), the bias None without one."""
    return dense.kernel.value, None if dense.bias is None else dense.bias.value


def _flat_kernel(dense):
    """An (D, N, H) `EinsumDense` kernel as (D, N*H) and its bias (N*H,)."""
    kernel = dense.kernel.value
    kernel = kernel.reshape(kernel.shape[0], -1)
    bias = None if dense.bias is None else dense.bias.value.reshape(-1)
    return kernel, bias


def joined_projections(*projections):
    """`EinsumDense` projections joined into one (D, k N H) product.

    One matrix product in place of k: the query, key and value of a self
    attention, or the key and value of a cross attention.
    """
    import torch  # The PyTorch backend only.

    parts = [_flat_kernel(dense) for dense in projections]
    kernel = torch.cat([kernel for kernel, _ in parts], dim=1)
    if parts[0][1] is None:
        return kernel, None
    return kernel, torch.cat([bias for _, bias in parts])


def activation_function(function):
    """The PyTorch function of a Keras activation, where one is exact."""
    import torch  # The PyTorch backend only.

    if function is keras.activations.relu:
        return torch.relu
    if function is keras.activations.linear:
        return lambda x: x
    return function  # Keras' own, which runs on PyTorch tensors.


def attend(queries, keys, values, mask, scale):
    """Eq. (7.25): (B, N, T, H) queries -> (B, T, N*H) context.

    PyTorch's fused kernel, one call for the scores, the softmax and the
    weighted sum. A query without a key to attend to gives NaN rows
    here; the caller zeroes them, as the layer does.
    """
    import torch  # The PyTorch backend only.

    context = torch.nn.functional.scaled_dot_product_attention(
        queries, keys, values, attn_mask=mask, scale=scale
    )  # (B, N, T, H)
    batch, _, length, _ = context.shape
    return context.transpose(1, 2).reshape(batch, length, -1)  # (B, T, N*H)


class AttentionWeights:
    """One `MultiHeadAttention`'s weights: its heads and W_c of Eq. (7.26)."""

    def __init__(self, attention, joined):
        self.heads = attention.num_heads
        self.head_dim = attention.key_dim
        self.scale = 1.0 / math.sqrt(attention.key_dim)
        self.query = _flat_kernel(attention._query_dense)
        dense = attention._output_dense
        kernel = dense.kernel.value  # (N, H, D)
        bias = None if dense.bias is None else dense.bias.value
        self.output = (kernel.reshape(-1, kernel.shape[-1]), bias)  # (N*H, D)
        # The projections computed together: (D, k N H).
        self.joined = joined_projections(
            *[getattr(attention, f"_{name}_dense") for name in joined]
        )

    def split_heads(self, x, parts):
        """(B, T, parts N H) -> (B, parts, N, T, H)."""
        batch, length, _ = x.shape
        x = x.reshape(batch, length, parts, self.heads, self.head_dim)
        return x.permute(0, 2, 3, 1, 4)


class BlockWeights:
    """A Transformer block's residual sublayers over its weights.

    Rows are (..., D): the decoder step passes (B, D), the encoder
    (B, S, D).
    """

    def __init__(self, block):
        self.norm_first = block.norm_first
        self.self_norm = norm_weights(block._self_attention_norm)
        feed_forward = block._feed_forward_layer
        inner, outer = feed_forward._intermediate_dense, feed_forward._output_dense
        self.inner = dense_weights(inner)
        self.activation = activation_function(inner.activation)
        self.outer = dense_weights(outer)
        self.feed_forward_norm = norm_weights(block._feed_forward_norm)

    def sublayer(self, x, norm, function):
        """The residual story of Eq. (7.31), pre- or post-norm."""
        residual = x
        if self.norm_first:
            x = layer_norm(x, norm)
        x = function(x) + residual
        if not self.norm_first:
            x = layer_norm(x, norm)
        return x

    def feed_forward(self, x):
        def network(x):
            return linear(self.activation(linear(x, *self.inner)), *self.outer)

        return self.sublayer(x, self.feed_forward_norm, network)
