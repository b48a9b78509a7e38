"""Key/value caches for decoding with Transformer decoder blocks.

Shape legend:
    B: batch size
    N: number of heads
    L: positions the cache holds
    H: head width
"""

from keras import ops


def empty_self_attention_caches(decoder_blocks, batch_size, length, dtype):
    """Zeroed self-attention caches, one (B, 2, N, L, H) per decoder block.

    Keys then values, heads first
    (`TransformerDecoderBlock.self_attention_cache_shape`). A
    tuple of separate tensors, not one stacked tensor: a compiled decoding
    loop then updates each cache in place, where slicing a block's cache
    out of a stack and stacking the results again would copy every cache
    at every step.

    Args:
        decoder_blocks: the model's `TransformerDecoderBlock`s, built.
        batch_size: B.
        length: L, the positions to hold (every position decoded).
        dtype: the caches' dtype, the model's compute dtype.

    Returns:
        A tuple with one zeroed cache per block.
    """
    return tuple(
        ops.zeros(block.self_attention_cache_shape(batch_size, length), dtype=dtype)
        for block in decoder_blocks
    )
