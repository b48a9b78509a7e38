"""`keras_seq.generation.caches`: one cache layout for every Transformer."""

import keras
import numpy as np

import zoo
from keras_seq.generation import empty_self_attention_caches


def test_one_zeroed_heads_first_cache_per_block():
    model = zoo.build_language_model("tiny", num_layers=2, num_heads=2)
    caches = empty_self_attention_caches(model.decoder_blocks, 3, 7, "float32")
    assert isinstance(caches, tuple) and len(caches) == 2
    for cache in caches:
        assert tuple(cache.shape) == (3, 2, 2, 7, 8)  # (B, 2, N, L, H)
        assert not np.any(keras.ops.convert_to_numpy(cache))


def test_the_translator_and_the_language_model_share_the_layout():
    translator = zoo.build_translator("tiny", num_decoder_layers=2)
    language_model = zoo.build_language_model("tiny", num_layers=2)
    shapes = [
        [tuple(c.shape) for c in model.empty_self_attention_caches(2, 5)]
        for model in (translator, language_model)
    ]
    assert shapes[0] == shapes[1] == [(2, 2, 2, 5, 8)] * 2
