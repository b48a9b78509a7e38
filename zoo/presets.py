"""Presets as data: each has a description, its config and its exact size.

The parameter counts are asserted by the tests, so a change to a layer that
changes a count shows up there.
"""

TRANSLATOR_PRESETS = {
    "tiny": {
        "description": "The smallest working model, for tests.",
        "params": 10_468,
        "config": {
            "source_vocabulary_size": 100,
            "target_vocabulary_size": 100,
            "num_encoder_layers": 1,
            "num_decoder_layers": 1,
            "model_dim": 16,
            "num_heads": 2,
            "ff_dim": 32,
            "dropout": 0.0,
            "attention_dropout": 0.0,
            "max_length": 32,
        },
    },
    "small": {
        "description": (
            "The demo and benchmark size: vocabularies 8,000 / 8,000, "
            "d_model 128, 4 heads, d_ff 512, 2 + 2 blocks."
        ),
        "params": 4_005_696,
        "config": {
            "source_vocabulary_size": 8000,
            "target_vocabulary_size": 8000,
            "num_encoder_layers": 2,
            "num_decoder_layers": 2,
            "model_dim": 128,
            "num_heads": 4,
            "ff_dim": 512,
            "dropout": 0.1,
            "attention_dropout": 0.1,
            "max_length": 64,
        },
    },
    "book": {
        "description": (
            "The book's model (Sec. 7.5): 6 + 6 blocks of p = 512, N1 = 2048, "
            "H = 8, m = m_v = 64 without attention biases (3,150,336 and "
            "4,199,936 parameters a block) and a 37,000-token output layer "
            "tied to the shared embedding: about 63M."
        ),
        "params": 63_045_632,
        "config": {
            "source_vocabulary_size": 37000,
            "target_vocabulary_size": 37000,
            "num_encoder_layers": 6,
            "num_decoder_layers": 6,
            "model_dim": 512,
            "num_heads": 8,
            "ff_dim": 2048,
            "attention_bias": False,
            "tie_embeddings": True,
            "dropout": 0.1,
            "attention_dropout": 0.1,
            "max_length": 256,
        },
    },
    "base": {
        "description": (
            "Transformer base of Vaswani et al. (2017): N = 6, d_model 512, "
            "d_ff 2048, h = 8, shared 37,000-token vocabulary, tied "
            "embeddings (the paper reports 65M)."
        ),
        "params": 63_082_496,
        "config": {
            "source_vocabulary_size": 37000,
            "target_vocabulary_size": 37000,
            "num_encoder_layers": 6,
            "num_decoder_layers": 6,
            "model_dim": 512,
            "num_heads": 8,
            "ff_dim": 2048,
            "tie_embeddings": True,
            "dropout": 0.1,
            "attention_dropout": 0.1,
            "max_length": 256,
        },
    },
    "big": {
        "description": (
            "Transformer big of Vaswani et al. (2017): N = 6, d_model 1024, "
            "d_ff 4096, h = 16, shared 37,000-token vocabulary, tied "
            "embeddings (the paper reports 213M)."
        ),
        "params": 214_245_376,
        "config": {
            "source_vocabulary_size": 37000,
            "target_vocabulary_size": 37000,
            "num_encoder_layers": 6,
            "num_decoder_layers": 6,
            "model_dim": 1024,
            "num_heads": 16,
            "ff_dim": 4096,
            "tie_embeddings": True,
            "dropout": 0.3,
            "attention_dropout": 0.3,
            "max_length": 256,
        },
    },
}

_TINY_ENCODER = {
    "vocabulary_size": 100,
    "num_layers": 1,
    "model_dim": 16,
    "num_heads": 2,
    "ff_dim": 32,
    "dropout": 0.0,
    "max_length": 32,
}
_SMALL_ENCODER = {
    "vocabulary_size": 8000,
    "num_layers": 2,
    "model_dim": 128,
    "num_heads": 4,
    "ff_dim": 512,
    "dropout": 0.1,
    "max_length": 128,
}

CLASSIFIER_PRESETS = {
    "tiny": {
        "description": "The smallest working model, for tests.",
        "params": 4_370,
        "config": {**_TINY_ENCODER, "num_classes": 2},
    },
    "small": {
        "description": "Sentiment classifier: 2 blocks of width 128.",
        "params": 1_437_186,
        "config": {**_SMALL_ENCODER, "num_classes": 2},
    },
}

ENCODER_PRESETS = {
    "tiny": {
        "description": "The smallest working model, for tests.",
        "params": 4_640,
        "config": dict(_TINY_ENCODER),
    },
    "small": {
        "description": "Masked language model: 2 blocks of width 128.",
        "params": 1_453_696,
        "config": dict(_SMALL_ENCODER),
    },
}

LANGUAGE_MODEL_PRESETS = {
    "tiny": {
        "description": "The smallest working model, for tests.",
        "params": 4_368,
        "config": dict(_TINY_ENCODER),
    },
    "small": {
        "description": "Shakespeare: 4 causal blocks of width 256.",
        "params": 5_273_088,
        "config": {
            **_SMALL_ENCODER,
            "num_layers": 4,
            "model_dim": 256,
            "ff_dim": 1024,
            "max_length": 256,
        },
    },
}

RNN_LANGUAGE_MODEL_PRESETS = {
    "tiny": {
        "description": "The smallest working model, for tests: 2 LSTM layers of 16.",
        "params": 7_524,
        "config": {
            "vocabulary_size": 100,
            "cell": "lstm",
            "units": 16,
            "num_layers": 2,
            "embedding_dim": 16,
            "dropout": 0.0,
        },
    },
    "small": {
        "description": "Shakespeare: 2 stacked LSTM layers of 256.",
        "params": 3_999_552,
        "config": {
            "vocabulary_size": 8000,
            "cell": "lstm",
            "units": 256,
            "num_layers": 2,
            "embedding_dim": 128,
            "dropout": 0.2,
        },
    },
}

RNN_SEQ2SEQ_PRESETS = {
    "tiny": {
        "description": "The smallest working model, for tests: one GRU of 16.",
        "params": 8_164,
        "config": {
            "source_vocabulary_size": 100,
            "target_vocabulary_size": 100,
            "cell": "gru",
            "units": 16,
            "embedding_dim": 16,
            "num_layers": 1,
            "dropout": 0.0,
        },
    },
    "small": {
        "description": (
            "Fig. 7.9 (b): 2 + 2 LSTM layers of 256, the context fed "
            "at every step, reversed source (Sutskever et al. in miniature)."
        ),
        "params": 8_253_248,
        "config": {
            "source_vocabulary_size": 8000,
            "target_vocabulary_size": 8000,
            "cell": "lstm",
            "units": 256,
            "embedding_dim": 128,
            "num_layers": 2,
            "dropout": 0.2,
            "feed_context": True,
            "reverse_source": True,
        },
    },
}

RNN_TRANSLATOR_PRESETS = {
    "tiny": {
        "description": (
            "The smallest working model, for tests: bidirectional GRU 2 x 8, "
            "GRU decoder of 16, additive attention."
        ),
        "params": 10_948,
        "config": {
            "source_vocabulary_size": 100,
            "target_vocabulary_size": 100,
            "cell": "gru",
            "units": 16,
            "encoder_units": 8,
            "embedding_dim": 16,
            "score": "additive",
            "dropout": 0.0,
        },
    },
    "small": {
        "description": (
            "Fig. 7.10: bidirectional GRU 2 x 128, GRU decoder of 256, "
            "additive (Bahdanau) attention."
        ),
        "params": 7_040_320,
        "config": {
            "source_vocabulary_size": 8000,
            "target_vocabulary_size": 8000,
            "cell": "gru",
            "units": 256,
            "encoder_units": 128,
            "embedding_dim": 128,
            "score": "additive",
            "dropout": 0.2,
        },
    },
}
