"""Decoding over key/value caches: greedy, sampling and (later) beam search."""

from keras_seq.generation.sampling import (
    compile_for_backend,
    make_sampler,
    run_compiled,
    start_buffer,
    strip_after_end,
    zero_after_end,
)

__all__ = [
    "compile_for_backend",
    "make_sampler",
    "run_compiled",
    "start_buffer",
    "strip_after_end",
    "zero_after_end",
]
