"""Copy keras-hub Transformer block weights into ours, sublayer by sublayer."""

import numpy as np


def _copy(target_layer, source_layer):
    target_layer.set_weights([np.asarray(w) for w in source_layer.get_weights()])


def _copy_attention(ours, hub):
    # keras.layers.MultiHeadAttention and ours share the projection layouts:
    # (D, N, H) kernels, (N, H) biases, (N, V, D) output kernel.
    _copy(ours, hub)


def copy_encoder_weights(ours, hub):
    _copy_attention(ours._self_attention, hub._self_attention_layer)
    _copy(ours._self_attention_norm, hub._self_attention_layer_norm)
    _copy_feed_forward(ours, hub)


def copy_decoder_weights(ours, hub):
    _copy_attention(ours._self_attention, hub._self_attention_layer)
    _copy(ours._self_attention_norm, hub._self_attention_layer_norm)
    if hub._cross_attention_layer is not None:
        _copy_attention(ours._cross_attention, hub._cross_attention_layer)
        _copy(ours._cross_attention_norm, hub._cross_attention_layer_norm)
    _copy_feed_forward(ours, hub)


def _copy_feed_forward(ours, hub):
    ffn = ours._feed_forward_layer
    _copy(ffn._intermediate_dense, hub._feedforward_intermediate_dense)
    _copy(ffn._output_dense, hub._feedforward_output_dense)
    _copy(ours._feed_forward_norm, hub._feedforward_layer_norm)
