"""Decoding over key/value caches: greedy, sampling and beam search.

`GenerativeModel` gives a model `generate` and `beam_search` written once;
the functions below are the machinery it runs on.
"""

from keras_seq.generation.beam import beam_search, length_penalty_factor, tile_beams
from keras_seq.generation.caches import empty_self_attention_caches
from keras_seq.generation.generative_model import (
    DEFAULT_MAX_NEW_TOKENS,
    GenerativeModel,
    resolve_max_new_tokens,
)
from keras_seq.generation.sampling import (
    compile_for_backend,
    given_buffer,
    make_sampler,
    run_compiled,
    start_buffer,
    strip_after_end,
    zero_after_end,
)

__all__ = [
    "DEFAULT_MAX_NEW_TOKENS",
    "GenerativeModel",
    "beam_search",
    "compile_for_backend",
    "empty_self_attention_caches",
    "given_buffer",
    "length_penalty_factor",
    "make_sampler",
    "resolve_max_new_tokens",
    "run_compiled",
    "start_buffer",
    "strip_after_end",
    "tile_beams",
    "zero_after_end",
]
