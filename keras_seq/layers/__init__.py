"""Public layers of keras-seq, one per module."""

from keras_seq.layers.multi_head_attention import MultiHeadAttention
from keras_seq.layers.positionwise_feed_forward import PositionwiseFeedForward
from keras_seq.layers.transformer_decoder_block import TransformerDecoderBlock
from keras_seq.layers.transformer_encoder_block import TransformerEncoderBlock

__all__ = [
    "MultiHeadAttention",
    "PositionwiseFeedForward",
    "TransformerDecoderBlock",
    "TransformerEncoderBlock",
]
