"""Decoding over key/value caches: greedy, sampling and beam search."""

from keras_seq.generation.beam import beam_search, length_penalty_factor, tile_beams
from keras_seq.generation.sampling import (
    compile_for_backend,
    make_sampler,
    run_compiled,
    start_buffer,
    strip_after_end,
    zero_after_end,
)

__all__ = [
    "beam_search",
    "length_penalty_factor",
    "tile_beams",
    "compile_for_backend",
    "make_sampler",
    "run_compiled",
    "start_buffer",
    "strip_after_end",
    "zero_after_end",
]
