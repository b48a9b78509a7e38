"""Public layers of keras-seq, one per module."""

from keras_seq.layers.attention_decoder import AttentionDecoder
from keras_seq.layers.hashed_dropout import HashedDropout
from keras_seq.layers.learned_positional_embedding import (
    LearnedPositionalEmbedding,
)
from keras_seq.layers.masked_mean_pooling import MaskedMeanPooling
from keras_seq.layers.multi_head_attention import MultiHeadAttention
from keras_seq.layers.positionwise_feed_forward import PositionwiseFeedForward
from keras_seq.layers.score_attention import ScoreAttention
from keras_seq.layers.sinusoidal_positional_encoding import (
    SinusoidalPositionalEncoding,
)
from keras_seq.layers.token_and_position_embedding import (
    TokenAndPositionEmbedding,
)
from keras_seq.layers.transformer_decoder_block import TransformerDecoderBlock
from keras_seq.layers.transformer_encoder_block import TransformerEncoderBlock

__all__ = [
    "AttentionDecoder",
    "HashedDropout",
    "LearnedPositionalEmbedding",
    "MaskedMeanPooling",
    "MultiHeadAttention",
    "PositionwiseFeedForward",
    "ScoreAttention",
    "SinusoidalPositionalEncoding",
    "TokenAndPositionEmbedding",
    "TransformerDecoderBlock",
    "TransformerEncoderBlock",
]
