"""Masked mean pooling: one vector per sequence from its real tokens.

Shape legend:
    B: batch size
    T: sequence length
    D: feature width
"""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_seq")
class MaskedMeanPooling(keras.layers.Layer):
    """Mean over the real (unmasked) positions: (B, T, D) -> (B, D).

    Example:
    >>> x = keras.ops.array([[[1.0], [3.0], [100.0]]])  # (1, 3, 1)
    >>> mask = keras.ops.array([[True, True, False]])  # The last is padding.
    >>> keras.ops.convert_to_numpy(MaskedMeanPooling()(x, mask=mask)).tolist()
    [[2.0]]
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        # No weights: built from the start, as Keras' weightless layers are,
        # so that a model holding one it never called can still be quantized.
        self.built = True

    def call(self, inputs, mask=None):
        if mask is None:
            return ops.mean(inputs, axis=1)
        weights = ops.cast(mask, inputs.dtype)[:, :, None]  # (B, T, 1)
        total = ops.sum(inputs * weights, axis=1)
        count = ops.maximum(ops.sum(weights, axis=1), 1.0)
        return total / count

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, inputs_shape):
        return (inputs_shape[0], inputs_shape[2])
