"""Fixed sine and cosine positional encoding, Eq. (7.29) and (7.30).

Shape legend:
    B: batch size
    T: sequence length
    D: feature width of the inputs
    P: width of the positional encoding (p_e in the book)
"""

import keras
import numpy as np
from keras import ops

from keras_seq.validation import check_choice, check_positive_int

MODES = ("add", "concat")
# Where each pair's sine and cosine sit: side by side (Eq. 7.29, column 2i
# and 2i + 1) or all sines, then all cosines (tensor2tensor's and Marian's
# table, the one their checkpoints were trained with).
LAYOUTS = ("interleaved", "concatenated")


def _check_even(value, name):
    if value % 2:
        raise ValueError(
            f"`{name}` must be even, since sines and cosines come in pairs "
            f"(Eq. 7.29); received {value}."
        )


def _check_start_index(start_index):
    if isinstance(start_index, (int, np.integer)) and start_index < 0:
        raise ValueError(f"`start_index` must be non-negative; received {start_index}.")


def sinusoidal_encoding(
    length,
    dim,
    max_wavelength=10000,
    start_index=0,
    dtype="float32",
    layout="interleaved",
):
    """The table of sine and cosine position codes of Eq. (7.29).

    Row `t` holds the code of position `start_index + t`; with
    `layout="interleaved"` columns alternate between a sine (even index
    `2i`) and a cosine (odd index `2i + 1`) of the same angle
    `t / M^(2i / dim)`, with `M = max_wavelength`; with
    `layout="concatenated"` column `i` holds the sine and column
    `dim / 2 + i` the cosine of that angle (the same code, its columns
    permuted, as tensor2tensor and Marian lay it out). Positions count
    from 0 (the book counts from 1), so that position 0 is `[0, 1, 0, 1, ...]`
    and the code of the first token does not depend on the table's length.

    The angles are computed in float32 whatever `dtype` is: float16 cannot
    represent positions beyond 2048 exactly, and its sines would be noise.

    Args:
        length: int or scalar integer tensor, the number of positions T.
        dim: even int, the width P of each code (p_e in the book).
        max_wavelength: float, the base M; the slowest pair of columns has
            wavelength `2 * pi * M`.
        start_index: int or scalar integer tensor, the first position.
        dtype: dtype of the returned table.
        layout: `"interleaved"` (Eq. 7.29) or `"concatenated"` (all sines,
            then all cosines).

    Returns:
        A (T, P) tensor.

    Example:
    >>> table = sinusoidal_encoding(length=3, dim=4)
    >>> [round(float(v), 4) for v in table[0]]
    [0.0, 1.0, 0.0, 1.0]

    References:
        Vaswani et al., "Attention Is All You Need", 2017, Sec. 3.5.
    """
    check_positive_int(dim, "dim")
    _check_even(dim, "dim")
    check_choice(layout, "layout", LAYOUTS)
    if max_wavelength <= 0:
        raise ValueError(
            f"`max_wavelength` must be positive; received {max_wavelength}."
        )
    _check_start_index(start_index)
    # One inverse wavelength per (sin, cos) pair: M^(-2i / P), i < P / 2.
    # Computed in float64 by numpy so that the constant is exact to float32.
    exponents = np.arange(0, dim, 2, dtype="float64") / dim
    inverse_wavelengths = np.power(float(max_wavelength), -exponents)
    inverse_wavelengths = ops.convert_to_tensor(
        inverse_wavelengths.astype("float32")
    )  # (P / 2,)
    # Integer positions first, so that `start_index + t` is exact.
    positions = ops.arange(length, dtype="int32") + ops.cast(
        start_index, "int32"
    )  # (T,)
    positions = ops.cast(positions, "float32")
    angles = positions[:, None] * inverse_wavelengths[None, :]  # (T, P / 2)
    if layout == "concatenated":
        table = ops.concatenate([ops.sin(angles), ops.cos(angles)], axis=-1)
        return ops.cast(table, dtype)  # (T, P)
    # Interleave: column 2i is the sine, column 2i + 1 the cosine.
    table = ops.stack([ops.sin(angles), ops.cos(angles)], axis=-1)
    table = ops.reshape(table, (-1, dim))  # (T, P / 2, 2) -> (T, P)
    return ops.cast(table, dtype)


@keras.saving.register_keras_serializable(package="keras_seq")
class SinusoidalPositionalEncoding(keras.layers.Layer):
    """Adds or appends the fixed sinusoidal position code of Eq. (7.29).

    The code of position `t` is `r_{2i} = sin(t / M^(2i / P))` and
    `r_{2i+1} = cos(t / M^(2i / P))` for `i < P / 2`, with
    `M = max_wavelength` (Eq. 7.29). With `mode="add"` the code has the
    width of the inputs (P = D) and is added to them, Eq. (7.30), as in the
    Transformer; with `mode="concat"` a P = `output_dim` wide code is
    appended to the features, as the book first introduces it. Positions
    count from 0, plus `start_index`. `layout="concatenated"` puts all the
    sines before all the cosines (`sinusoidal_encoding`), the table
    Marian's checkpoints were trained with.

    The layer has no weights. Padding masks of the inputs pass through.

    Args:
        max_wavelength: float, the base M of Eq. (7.29), 10,000 by default.
        mode: `"add"` (Eq. 7.30) or `"concat"`.
        output_dim: int, the width P of the appended code with
            `mode="concat"` (required, even). With `mode="add"` it must be
            `None` or the input width.
        layout: `"interleaved"` (Eq. 7.29: column 2i a sine, 2i + 1 its
            cosine) or `"concatenated"` (all sines, then all cosines).
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: (B, T, D) float tensor.
        start_index: int or scalar integer tensor, the position of the first
            input, e.g. the cache index while decoding one token at a time:
            a one-step call with `start_index=k` gets row `k` of the code.

    Returns:
        (B, T, D) with `mode="add"`, (B, T, D + output_dim) with
        `mode="concat"`, in the layer's compute dtype.

    Example:
    >>> layer = SinusoidalPositionalEncoding()
    >>> x = keras.ops.zeros((2, 5, 8))
    >>> tuple(layer(x).shape)
    (2, 5, 8)
    >>> tuple(SinusoidalPositionalEncoding(mode="concat", output_dim=4)(x).shape)
    (2, 5, 12)

    References:
        Vaswani et al., "Attention Is All You Need", 2017, Sec. 3.5.
    """

    def __init__(
        self,
        max_wavelength=10000,
        mode="add",
        output_dim=None,
        layout="interleaved",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if isinstance(max_wavelength, bool) or not max_wavelength > 0:
            raise ValueError(
                "`max_wavelength` must be a positive number; "
                f"received {max_wavelength!r}."
            )
        check_choice(mode, "mode", MODES)
        check_choice(layout, "layout", LAYOUTS)
        if mode == "concat" and output_dim is None:
            raise ValueError(
                '`output_dim` is required with mode="concat": it is the '
                "width of the appended code; received None."
            )
        if output_dim is not None:
            check_positive_int(output_dim, "output_dim")
            _check_even(output_dim, "output_dim")
        self.max_wavelength = max_wavelength
        self.mode = mode
        self.output_dim = output_dim
        self.layout = layout
        self.supports_masking = True

    def _encoding_dim(self, input_dim):
        if self.mode == "concat":
            return self.output_dim
        return input_dim

    def build(self, inputs_shape):
        if len(inputs_shape) != 3:
            raise ValueError(
                "`inputs` must have rank 3, shape (batch_size, "
                f"sequence_length, dim); received shape {tuple(inputs_shape)}."
            )
        input_dim = inputs_shape[-1]
        if input_dim is None:
            raise ValueError(
                "The last dimension of `inputs` must be known; received "
                f"shape {tuple(inputs_shape)}."
            )
        if self.mode == "add":
            if self.output_dim is not None and self.output_dim != input_dim:
                raise ValueError(
                    f'With mode="add" the code has the input width, so '
                    f"`output_dim` must be None or {input_dim}; received "
                    f"{self.output_dim}."
                )
            if input_dim % 2:
                raise ValueError(
                    'With mode="add" the input width is the code width p_e, '
                    "which must be even (Eq. 7.29); received input width "
                    f"{input_dim}."
                )
        self.built = True

    def call(self, inputs, start_index=0):
        _check_start_index(start_index)
        shape = ops.shape(inputs)
        encoding = sinusoidal_encoding(
            shape[1],
            self._encoding_dim(int(inputs.shape[-1])),
            max_wavelength=self.max_wavelength,
            start_index=start_index,
            dtype=self.compute_dtype,
            layout=self.layout,
        )  # (T, P)
        inputs = ops.cast(inputs, self.compute_dtype)
        if self.mode == "add":
            return inputs + encoding[None, :, :]  # (B, T, D)
        encoding = ops.broadcast_to(
            encoding[None, :, :], (shape[0], shape[1], self.output_dim)
        )  # (B, T, P)
        return ops.concatenate([inputs, encoding], axis=-1)  # (B, T, D + P)

    def compute_output_shape(self, inputs_shape):
        if self.mode == "add":
            return tuple(inputs_shape)
        width = inputs_shape[-1]
        width = None if width is None else width + self.output_dim
        return tuple(inputs_shape[:-1]) + (width,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "max_wavelength": self.max_wavelength,
                "mode": self.mode,
                "output_dim": self.output_dim,
                "layout": self.layout,
            }
        )
        return config
