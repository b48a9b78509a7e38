"""Public layers of keras-seq, one per module."""

from keras_seq.layers.multi_head_attention import MultiHeadAttention

__all__ = [
    "MultiHeadAttention",
]
