"""A trainable table of position embeddings, one row per position.

Shape legend:
    B: batch size
    T: sequence length
    D: feature width
    L: the longest supported sequence (`max_length`)
"""

import keras
import numpy as np
from keras import ops

from keras_seq.validation import check_positive_int


def check_static_length(length, start_index, max_length, name="inputs"):
    """Refuse positions past `max_length` when they are known statically.

    Args:
        length: the static sequence length T; anything but an integer
            (`None`, a symbolic dimension) is not checked.
        start_index: the first position; only checked when it is a Python
            or numpy integer (a tensor is not known until run time).
        max_length: the number of positions L the layer supports.
        name: the argument to name in the message.

    Raises:
        ValueError: if `start_index + T > max_length` or `start_index < 0`.
    """
    if not isinstance(start_index, (int, np.integer)):
        return
    if start_index < 0:
        raise ValueError(f"`start_index` must be non-negative; received {start_index}.")
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)):
        return  # Unknown (None), or a symbolic dimension of a JAX trace.
    last = int(start_index) + int(length)
    if last > max_length:
        raise ValueError(
            f"`{name}` reaches past `max_length`: positions up to "
            f"max_length={max_length} are supported; received sequence "
            f"length {length} starting at position {start_index}, which "
            f"needs {last} positions."
        )


@keras.saving.register_keras_serializable(package="keras_seq")
class LearnedPositionalEmbedding(keras.layers.Layer):
    """Trainable position embeddings, the `W_3 e_t` term of Eq. (7.28).

    A (max_length, D) table whose row `t` is the embedding of position `t`:
    multiplying the one-hot position vector `e_t` by a learned matrix, as
    `W_3 e_t` does in Eq. (7.28), is looking up that row. The layer returns
    the embeddings of the input's positions, broadcast to the input's shape;
    add them to token embeddings to get position-aware inputs (BERT, GPT-2).
    The widths D of the table and the inputs are the same, so the addition
    keeps the model width, like Eq. (7.30) does for the fixed code.

    Args:
        max_length: int, the number of positions L the table holds; longer
            sequences are refused.
        initializer: initializer of the table.
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: (B, T, D) tensor. Only its shape is used.
        start_index: int or scalar integer tensor, the position of the first
            input, e.g. the cache index while decoding: a one-step call with
            `start_index=k` returns row `k` of the table. Statically known
            positions past `max_length` raise a `ValueError`; tensor start
            indices cannot be checked before run time and must keep
            `start_index + T <= max_length`.

    Returns:
        (B, T, D) position embeddings in the layer's compute dtype.

    Example:
    >>> x = keras.ops.zeros((2, 5, 8))
    >>> positions = LearnedPositionalEmbedding(max_length=16)(x)
    >>> tuple(positions.shape)
    (2, 5, 8)
    >>> embedded = x + positions

    References:
        Devlin et al., "BERT: Pre-training of Deep Bidirectional
        Transformers for Language Understanding", 2019.
    """

    def __init__(self, max_length, initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        if isinstance(max_length, np.integer):
            max_length = int(max_length)  # A length read from a numpy shape.
        check_positive_int(max_length, "max_length")
        self.max_length = max_length
        self.initializer = keras.initializers.get(initializer)
        self.supports_masking = True

    def build(self, inputs_shape):
        if len(inputs_shape) != 3:
            raise ValueError(
                "`inputs` must have rank 3, shape (batch_size, "
                f"sequence_length, dim); received shape {tuple(inputs_shape)}."
            )
        dim = inputs_shape[-1]
        if dim is None:
            raise ValueError(
                "The last dimension of `inputs` must be known; received "
                f"shape {tuple(inputs_shape)}."
            )
        check_static_length(inputs_shape[1], 0, self.max_length)
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.max_length, dim),
            initializer=self.initializer,
            trainable=True,
        )  # (L, D)
        self.built = True

    def call(self, inputs, start_index=0):
        check_static_length(inputs.shape[1], start_index, self.max_length)
        shape = ops.shape(inputs)
        dim = int(inputs.shape[-1])
        embeddings = ops.cast(self.embeddings, self.compute_dtype)  # (L, D)
        # A dynamic slice, not a gather, so that a traced `start_index` keeps
        # the output length static (JAX needs static slice sizes).
        start = ops.cast(start_index, "int32")
        positions = ops.slice(embeddings, (start, 0), (shape[1], dim))  # (T, D)
        return ops.broadcast_to(positions[None, :, :], shape)  # (B, T, D)

    def compute_output_spec(self, inputs, start_index=0):
        # Symbolic calls use `compute_output_shape` and skip `call`.
        check_static_length(inputs.shape[1], start_index, self.max_length)
        return super().compute_output_spec(inputs, start_index=start_index)

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "max_length": self.max_length,
                "initializer": keras.initializers.serialize(self.initializer),
            }
        )
        return config
