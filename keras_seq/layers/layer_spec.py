"""What a fast path needs to know of the Transformer layers, in public.

The layers' `call()`s read as the book's equations; a path that computes
the same numbers another way (PyTorch's decoding step, the CTranslate2
writer) needs their weights and the options that change the arithmetic.
Each Transformer layer hands them out through its `spec()` method as the
small frozen records below, so that no code outside `keras_seq.layers`
reads a layer's private sublayers. The records hold Keras variables, not
copies: a reader converts them (`variable.value` on PyTorch, NumPy for an
export) and sees later weight updates.

Each record also says what would keep a plain re-implementation from
giving the layer's numbers (`refusal`: `"<option>=<value>"`, or None):
a quantized or LoRA projection, a layer norm with RMS scaling or over
other axes, mixed precision in a token table (which casts the weights at
every call), an attention subclass. `keras_seq.generation.stack_spec`
gathers them for a whole stack, and checks its layers' dtype policies
once for all of them.

Shape legend:
    D: input width
    N: number of heads
    H: head width of queries and keys (`key_dim`)
    V: head width of values (`value_dim`)
    F: feed-forward hidden width
"""

import dataclasses

import keras


@dataclasses.dataclass(frozen=True)
class ProjectionSpec:
    """A `Dense` or `EinsumDense` projection: kernel, bias, refusal.

    Attributes:
        kernel: the kernel variable, (D, N, H) for attention projections,
            (N, V, D) for the attention output, (D_in, D_out) for a dense.
        bias: the bias variable, or None.
        refusal: None, or `"<option>=<value>"` that a plain product of the
            float kernel would not reproduce.
    """

    kernel: object
    bias: object
    refusal: object = None


@dataclasses.dataclass(frozen=True)
class NormSpec:
    """A `keras.layers.LayerNormalization`, or an identity (all None).

    Attributes:
        gamma: the scale variable, or None.
        beta: the offset variable, or None.
        epsilon: float, or None for an identity.
        refusal: None, or the option (`"rms_scaling=True"`, ...) that makes
            it other than the plain layer norm over the last axis.
    """

    gamma: object = None
    beta: object = None
    epsilon: object = None
    refusal: object = None

    @property
    def identity(self):
        return self.epsilon is None and self.refusal is None


@dataclasses.dataclass(frozen=True)
class AttentionSpec:
    """A `MultiHeadAttention` (Eq. 7.25-7.26): heads and projections.

    Attributes:
        num_heads: N.
        key_dim: H, the width of queries and keys; scores scale by
            1/sqrt(H).
        value_dim: V, the width of values.
        query, key, value: (D, N, H), (D, N, H), (D, N, V) projections.
        output: the (N, V, D) projection W_c.
        refusal: None, or why a plain re-implementation differs.
    """

    num_heads: int
    key_dim: int
    value_dim: int
    query: ProjectionSpec
    key: ProjectionSpec
    value: ProjectionSpec
    output: ProjectionSpec
    refusal: object = None


@dataclasses.dataclass(frozen=True)
class FeedForwardSpec:
    """A `PositionwiseFeedForward` (Eq. 7.32): `W2 S(W1 a + b1) + b2`.

    Attributes:
        inner: the (D, F) projection W1.
        outer: the (F, D) projection W2.
        activation: the Keras activation function S.
        activation_name: its serialized name (`"relu"`, `"gelu"`, ...).
    """

    inner: ProjectionSpec
    outer: ProjectionSpec
    activation: object
    activation_name: str


@dataclasses.dataclass(frozen=True)
class BlockSpec:
    """A Transformer encoder or decoder block (Fig. 7.15, Eq. 7.31).

    Attributes:
        norm_first: pre-norm (True) or post-norm (False) residuals.
        self_attention: `AttentionSpec`.
        self_attention_norm: `NormSpec`.
        cross_attention: `AttentionSpec`, or None (an encoder block, or a
            decoder block without a source).
        cross_attention_norm: `NormSpec`, or None.
        feed_forward: `FeedForwardSpec`.
        feed_forward_norm: `NormSpec`.
    """

    norm_first: bool
    self_attention: AttentionSpec
    self_attention_norm: NormSpec
    cross_attention: object
    cross_attention_norm: object
    feed_forward: FeedForwardSpec
    feed_forward_norm: NormSpec


@dataclasses.dataclass(frozen=True)
class EmbeddingSpec:
    """A `TokenAndPositionEmbedding` (Eq. 7.28-7.30).

    Attributes:
        table: the (V, D) token table, also the tied output layer.
        scale: the factor of a token row (sqrt(D) or 1.0).
        positional: `"sinusoidal"` or `"learned"`.
        max_length: the positions the layer encodes.
        position_table: a function of no arguments giving the (L, D) code
            the layer adds at every position, as the layer computes it.
        refusal: None, or why a table lookup differs (a quantized table).
        sinusoidal_layout: `"interleaved"` or `"concatenated"`, how the
            sinusoidal table lays out its sines and cosines (already in
            `position_table`).
        output_bias: the (V,) bias variable the tied output layer adds to
            its logits, or None.
    """

    table: object
    scale: float
    positional: str
    max_length: int
    position_table: object
    refusal: object = None
    sinusoidal_layout: str = "interleaved"
    output_bias: object = None


def projection_spec(layer):
    """The `ProjectionSpec` of a built `Dense` or `EinsumDense`."""
    mode = getattr(layer, "quantization_mode", None)
    refusal = None
    if mode:
        refusal = f"quantization_mode={mode!r}"
    elif getattr(layer, "lora_enabled", False):
        refusal = "lora_enabled=True"
    return ProjectionSpec(layer.kernel, layer.bias, refusal)


def norm_spec(layer):
    """The `NormSpec` of a built layer norm, or of an identity (None too).

    Anything else than `keras.layers.LayerNormalization` over the last
    axis without RMS scaling is described by its refusal.
    """
    if layer is None or isinstance(layer, keras.layers.Identity):
        return NormSpec()
    if type(layer) is not keras.layers.LayerNormalization:
        return NormSpec(refusal=f"norm={type(layer).__name__}")
    refusal = None
    if layer.rms_scaling:
        refusal = "rms_scaling=True"
    elif tuple(layer.axis) not in ((-1,), (2,)):
        # The blocks normalize (B, T, D) sequences: axis 2 is the last one.
        refusal = f"axis={tuple(layer.axis)}"
    return NormSpec(layer.gamma, layer.beta, layer.epsilon, refusal)
