"""Transformer sublayers in plain PyTorch over a flat weight spec.

The pieces `fast_step` builds the decoder step and the encoder pass from:
the sublayers of Eq. (7.31) computed from a `stack_spec.FlatStack` (the
layers' own weights, joined and flattened once by
`keras_seq.generation.stack_spec`, which also decides what can be
mirrored). PyTorch backend only; every function imports `torch` itself,
so the module imports on every backend.

Shape legend:
    B: batch size
    T: query positions
    S: key positions
    D: model width
    N: number of heads
    H: head width
"""

import keras


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


def layer_norm(x, norm):
    """A `stack_spec.FlatNorm` over the last axis; None is an identity."""
    if norm is None:
        return x
    import torch  # The PyTorch backend only.

    return torch.nn.functional.layer_norm(
        x, x.shape[-1:], norm.gamma, norm.beta, norm.epsilon
    )


def linear(x, kernel, bias):
    """x @ kernel + bias over the last axis of x (any rank)."""
    import torch  # The PyTorch backend only.

    if bias is None:
        return torch.matmul(x, kernel)
    if x.dim() == 2:
        return torch.addmm(bias, x, kernel)
    return torch.matmul(x, kernel) + bias


def activation_function(function):
    """The PyTorch function of a Keras activation, where one is exact."""
    import torch  # The PyTorch backend only.

    if function is keras.activations.relu:
        return torch.relu
    if function is keras.activations.silu:
        return torch.nn.functional.silu
    if function is keras.activations.gelu:
        # Keras' default GELU is the exact (erf) one, as PyTorch's default.
        return torch.nn.functional.gelu
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
    """One attention's flat weights: its heads and W_c of Eq. (7.26)."""

    def __init__(self, flat):
        self.heads = flat.num_heads
        self.head_dim = flat.key_dim
        self.scale = flat.scale
        self.query = flat.query  # (D, N H)
        self.output = flat.output  # (N H, D)
        # The projections computed together: (D, k N H).
        self.joined = flat.fused

    def split_heads(self, x, parts):
        """(B, T, parts N H) -> (B, parts, N, T, H)."""
        batch, length, _ = x.shape
        x = x.reshape(batch, length, parts, self.heads, self.head_dim)
        return x.permute(0, 2, 3, 1, 4)


class BlockWeights:
    """A Transformer block's residual sublayers over its flat weights.

    Rows are (..., D): the decoder step passes (B, D), the encoder
    (B, S, D).
    """

    def __init__(self, flat):
        self.norm_first = flat.norm_first
        self.self_norm = flat.self_attention_norm
        self.inner = flat.inner
        self.activation = activation_function(flat.activation)
        self.outer = flat.outer
        self.feed_forward_norm = flat.feed_forward_norm

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
