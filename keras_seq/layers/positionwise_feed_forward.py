"""The position-wise feed-forward network of a Transformer block.

Shape legend:
    B: batch size
    T: sequence length
    D: model width
    F: hidden width (`ff_dim`, N_1 in the book)
"""

import keras

from keras_seq.layers import layer_spec
from keras_seq.layers.hashed_dropout import HashedDropout
from keras_seq.validation import check_positive_int, check_rate, clone_initializer


@keras.saving.register_keras_serializable(package="keras_seq")
class PositionwiseFeedForward(keras.layers.Layer):
    """Two dense layers applied to every position independently.

    `W2 S(W1 a + b1) + b2` with `W1` (D, F) and `W2` (F, D): the
    `2 N_1 p + N_1 + p` parameters of Eq. (7.32). The same weights act at
    every time step, so the block mixes features, never positions.

    Args:
        ff_dim: int, hidden width F (N_1 in Eq. 7.32).
        activation: activation of the hidden layer.
        dropout: float, dropout on the hidden activations.
        output_dim: int, output width. Defaults to the input width.
        kernel_initializer: initializer of both kernels.
        bias_initializer: initializer of both biases.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: (B, T, D) tensor.
        training: bool, whether dropout is active.

    Returns:
        (B, T, output_dim) tensor; the input mask propagates.

    Example:
    >>> ffn = PositionwiseFeedForward(ff_dim=32)
    >>> tuple(ffn(keras.ops.ones((2, 3, 8))).shape)
    (2, 3, 8)

    References:
        Vaswani et al., "Attention Is All You Need", 2017, Sec. 3.3.
    """

    def __init__(
        self,
        ff_dim,
        activation="relu",
        dropout=0.0,
        output_dim=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int(ff_dim, "ff_dim")
        check_rate(dropout, "dropout")
        self.ff_dim = ff_dim
        self.activation = keras.activations.get(activation)
        self.dropout = dropout
        self.output_dim = output_dim
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def _dense(self, units, activation, name):
        return keras.layers.Dense(
            units,
            activation=activation,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            dtype=self.dtype_policy,
            name=name,
        )

    def build(self, inputs_shape):
        output_dim = self.output_dim or inputs_shape[-1]
        self._intermediate_dense = self._dense(
            self.ff_dim, self.activation, "intermediate_dense"
        )
        self._intermediate_dense.build(inputs_shape)
        self._dropout_layer = HashedDropout(self.dropout, dtype=self.dtype_policy)
        self._output_dense = self._dense(output_dim, None, "output_dense")
        self._output_dense.build(tuple(inputs_shape[:-1]) + (self.ff_dim,))
        self.built = True

    def call(self, inputs, training=None):
        if len(inputs.shape) < 2:
            raise ValueError(
                "`inputs` must have rank >= 2, shape (..., dim); received "
                f"shape {tuple(inputs.shape)}."
            )
        x = self._intermediate_dense(inputs)  # (B, T, F)
        x = self._dropout_layer(x, training=training)
        return self._output_dense(x)  # (B, T, D)

    def spec(self):
        """What a fast path needs of this layer, a `layer_spec.FeedForwardSpec`.

        The activation is the one the hidden dense applies, which is what
        the layer computes.
        """
        activation = self._intermediate_dense.activation
        return layer_spec.FeedForwardSpec(
            layer_spec.projection_spec(self._intermediate_dense),
            layer_spec.projection_spec(self._output_dense),
            activation,
            keras.activations.serialize(activation),
        )

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[:-1]) + (self.output_dim or inputs_shape[-1],)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "ff_dim": self.ff_dim,
                "activation": keras.activations.serialize(self.activation),
                "dropout": self.dropout,
                "output_dim": self.output_dim,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config
