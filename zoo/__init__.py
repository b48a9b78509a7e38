"""Ready builders that combine keras-seq layers with the functional API."""

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
    TRANSLATOR_PRESETS,
)
from zoo.translator import Translator, build_translator

__all__ = [
    "CLASSIFIER_PRESETS",
    "ENCODER_PRESETS",
    "LANGUAGE_MODEL_PRESETS",
    "TRANSLATOR_PRESETS",
    "Classifier",
    "LanguageModel",
    "MaskedLanguageModel",
    "Translator",
    "build_classifier",
    "build_language_model",
    "build_masked_language_model",
    "build_translator",
]
