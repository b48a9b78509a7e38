"""Ready builders that combine keras-seq layers with the functional API."""

import keras

from keras_seq.layers import AttentionDecoder
from zoo.encoders import (
    Classifier,
    MaskedLanguageModel,
    build_classifier,
    build_masked_language_model,
)
from zoo.language_model import LanguageModel, build_language_model
from zoo.presets import (
    CLASSIFIER_PRESETS,
    ENCODER_PRESETS,
    LANGUAGE_MODEL_PRESETS,
    RNN_LANGUAGE_MODEL_PRESETS,
    RNN_SEQ2SEQ_PRESETS,
    RNN_TRANSLATOR_PRESETS,
    TRANSLATOR_PRESETS,
)
from zoo.rnn import (
    RNNLanguageModel,
    RNNSeq2Seq,
    build_rnn_language_model,
    build_rnn_seq2seq,
)
from zoo.rnn_translator import RNNTranslator, build_rnn_translator
from zoo.translator import Translator, build_translator

__all__ = [
    "CLASSIFIER_PRESETS",
    "ENCODER_PRESETS",
    "LANGUAGE_MODEL_PRESETS",
    "RNN_LANGUAGE_MODEL_PRESETS",
    "RNN_SEQ2SEQ_PRESETS",
    "RNN_TRANSLATOR_PRESETS",
    "TRANSLATOR_PRESETS",
    "Classifier",
    "LanguageModel",
    "MaskedLanguageModel",
    "RNNLanguageModel",
    "RNNSeq2Seq",
    "RNNTranslator",
    "Translator",
    "build_classifier",
    "build_language_model",
    "build_masked_language_model",
    "build_rnn_language_model",
    "build_rnn_seq2seq",
    "build_rnn_translator",
    "build_translator",
]

# `.keras` files name each class by its registered name; these layers were
# registered under "zoo" before they moved into the library, and files
# saved then must still load.
keras.saving.get_custom_objects().setdefault("zoo>AttentionDecoder", AttentionDecoder)
