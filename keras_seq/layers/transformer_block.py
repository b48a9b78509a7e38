"""What the Transformer encoder and decoder blocks share.

Both blocks of Fig. 7.15 are built from the same parts: multi-head
attention, dropout, a residual connection and layer normalization around
each sublayer (Eq. 7.31), and a position-wise feed-forward network. This
base class holds their hyperparameters, validation and factories; the
public blocks tell the residual story in their own `call()`.
"""

import keras

from keras_seq.layers import layer_spec
from keras_seq.layers.hashed_dropout import HashedDropout
from keras_seq.layers.multi_head_attention import MultiHeadAttention
from keras_seq.layers.positionwise_feed_forward import PositionwiseFeedForward
from keras_seq.validation import check_positive_int, check_rate, clone_initializer


class TransformerBlock(keras.layers.Layer):
    """Base of `TransformerEncoderBlock` and `TransformerDecoderBlock`.

    Args:
        num_heads: int, number of attention heads H.
        ff_dim: int, hidden width of the feed-forward network (N_1).
        key_dim: int, head width of queries and keys (m). Defaults to
            `model_dim // num_heads`, which `num_heads` must divide.
        value_dim: int, head width of values (m_v). Defaults to `key_dim`.
        dropout: float, dropout after each sublayer (and on the attention
            weights unless `attention_dropout` is given).
        attention_dropout: float or None, dropout on the attention weights;
            `None` takes `dropout` (as configs saved without it did). At 0
            training can take the fused attention kernel, which has no
            dropout on the weights.
        activation: activation of the feed-forward hidden layer.
        norm_first: bool. `False` normalizes after each residual sum, as in
            the book and the original paper (post-norm); `True` normalizes
            the input of each sublayer (pre-norm), which trains deep stacks
            without warm-up tricks.
        attention_bias: bool, whether attention projections have biases.
        layer_norm_epsilon: float, epsilon of the layer normalizations.
        kernel_initializer: initializer of all kernels.
        bias_initializer: initializer of all biases.
        attention_implementation: `"auto"`, `"fused"` or `"explicit"`, see
            `MultiHeadAttention`.
        **kwargs: base `keras.layers.Layer` arguments.
    """

    def __init__(
        self,
        num_heads,
        ff_dim,
        key_dim=None,
        value_dim=None,
        dropout=0.0,
        attention_dropout=None,
        activation="relu",
        norm_first=False,
        attention_bias=True,
        layer_norm_epsilon=1e-5,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        attention_implementation="auto",
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int(num_heads, "num_heads")
        check_positive_int(ff_dim, "ff_dim")
        check_positive_int(key_dim, "key_dim", allow_none=True)
        check_positive_int(value_dim, "value_dim", allow_none=True)
        check_rate(dropout, "dropout")
        if attention_dropout is not None:
            check_rate(attention_dropout, "attention_dropout")
        self.num_heads = num_heads
        self.ff_dim = ff_dim
        self.key_dim = key_dim
        self.value_dim = value_dim
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.activation = keras.activations.get(activation)
        self.norm_first = norm_first
        self.attention_bias = attention_bias
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.attention_implementation = attention_implementation
        self.supports_masking = True

    def _head_dims(self, model_dim):
        """(key_dim, value_dim) for a block of width `model_dim`."""
        key_dim = self.key_dim
        if key_dim is None:
            if model_dim % self.num_heads != 0:
                raise ValueError(
                    f"`num_heads` must divide the model width when `key_dim` "
                    f"is not given; received num_heads={self.num_heads} and "
                    f"width {model_dim} (expected a width divisible by "
                    f"{self.num_heads})."
                )
            key_dim = model_dim // self.num_heads
        return key_dim, self.value_dim or key_dim

    def _attention(self, model_dim, name):
        key_dim, value_dim = self._head_dims(model_dim)
        return MultiHeadAttention(
            num_heads=self.num_heads,
            key_dim=key_dim,
            value_dim=value_dim,
            dropout=(
                self.dropout
                if self.attention_dropout is None
                else self.attention_dropout
            ),
            use_bias=self.attention_bias,
            attention_implementation=self.attention_implementation,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            dtype=self.dtype_policy,
            name=name,
        )

    def _layer_norm(self, name):
        return keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name=name
        )

    def _dropout_layer(self, name):
        return HashedDropout(self.dropout, dtype=self.dtype_policy, name=name)

    def _feed_forward(self, name):
        return PositionwiseFeedForward(
            self.ff_dim,
            activation=self.activation,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            dtype=self.dtype_policy,
            name=name,
        )

    def spec(self):
        """What a fast path needs of this block, a `layer_spec.BlockSpec`.

        The residual placement (`norm_first`), each attention's, norm's and
        the feed-forward network's spec; `cross_attention` is None for a
        block without one. The block must be built.
        """
        cross = getattr(self, "_cross_attention", None)
        return layer_spec.BlockSpec(
            norm_first=bool(self.norm_first),
            self_attention=self._self_attention.spec(),
            self_attention_norm=layer_spec.norm_spec(self._self_attention_norm),
            cross_attention=None if cross is None else cross.spec(),
            cross_attention_norm=(
                None
                if cross is None
                else layer_spec.norm_spec(self._cross_attention_norm)
            ),
            feed_forward=self._feed_forward_layer.spec(),
            feed_forward_norm=layer_spec.norm_spec(self._feed_forward_norm),
        )

    @staticmethod
    def _check_sequence(x, name):
        TransformerBlock._check_sequence_shape(None if x is None else x.shape, name)

    @staticmethod
    def _check_sequence_shape(shape, name):
        if shape is not None and len(shape) != 3:
            raise ValueError(
                f"`{name}` must have rank 3, shape (batch_size, "
                f"sequence_length, dim); received shape {tuple(shape)}."
            )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "ff_dim": self.ff_dim,
                "key_dim": self.key_dim,
                "value_dim": self.value_dim,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "activation": keras.activations.serialize(self.activation),
                "norm_first": self.norm_first,
                "attention_bias": self.attention_bias,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "attention_implementation": self.attention_implementation,
            }
        )
        return config
