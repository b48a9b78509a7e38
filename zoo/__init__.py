"""Ready builders that combine keras-seq layers with the functional API.

`import zoo` starts no Keras: the builders load on first use of any public
name (PEP 562), so `keras-seq --help` starts without TensorFlow. Touching
any of them imports every builder module, which registers each model class
a `.keras` file may name; where Keras is already imported, `import zoo`
does so at once, as an eager package would.
"""

import importlib
import sys

_MODULES = {
    "zoo.api": ("import_transformers", "train"),
    "zoo.encoders": (
        "Classifier",
        "MaskedLanguageModel",
        "build_classifier",
        "build_masked_language_model",
    ),
    "zoo.language_model": ("LanguageModel", "build_language_model"),
    "zoo.recipes.model_dir": ("load_model_dir",),
    "zoo.recipes.trained": ("TrainedModel",),
    "zoo.presets": (
        "CLASSIFIER_PRESETS",
        "ENCODER_PRESETS",
        "LANGUAGE_MODEL_PRESETS",
        "RNN_LANGUAGE_MODEL_PRESETS",
        "RNN_SEQ2SEQ_PRESETS",
        "RNN_TRANSLATOR_PRESETS",
        "TRANSLATOR_PRESETS",
    ),
    "zoo.rnn": (
        "RNNLanguageModel",
        "RNNSeq2Seq",
        "build_rnn_language_model",
        "build_rnn_seq2seq",
    ),
    "zoo.rnn_translator": ("RNNTranslator", "build_rnn_translator"),
    "zoo.translator": ("Translator", "build_translator"),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}
# The application's names hold no model class, and loading them starts
# TensorFlow's text pipelines, which a TensorFlow-free process lacks.
_APPLICATION = ("zoo.recipes.model_dir", "zoo.recipes.trained")

__all__ = sorted(_HOME)


def load_models():
    """Imports every builder module, registering the model classes (and
    keras-seq's layers, losses, metrics and schedules).

    `keras.saving.load_model` finds a zoo model's class only once its
    module was imported; loaders call this first.
    """
    for module in _MODULES:
        if module not in _APPLICATION:
            importlib.import_module(module)
    import keras

    import keras_seq

    keras_seq.register_all()

    from keras_seq.layers import AttentionDecoder

    # This layer was registered under "zoo" before it moved into the
    # library, and files saved then must still load.
    keras.saving.get_custom_objects().setdefault(
        "zoo>AttentionDecoder", AttentionDecoder
    )


def __getattr__(name):
    if name not in _HOME:
        raise AttributeError(f"module 'zoo' has no attribute {name!r}")
    load_models()
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_HOME))


if "keras" in sys.modules:
    load_models()
