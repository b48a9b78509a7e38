"""Tiny exported models for the serving tests, made once per session.

Random weights are enough here: the tests compare what the server answers
with what the SavedModel's signatures give when called directly.
"""

import keras

import zoo
from keras_seq import export, text

WORDS = [f"w{i}" for i in range(30)]
VOCABULARY = list(text.RESERVED_TOKENS) + WORDS + [".", "!", "?"]
BEAM_WIDTH = 2


def _translator():
    keras.utils.set_random_seed(0)
    tokenizer = text.make_tokenizer(VOCABULARY)
    model = zoo.build_translator(
        "tiny", vocabulary_size=len(VOCABULARY), model_dim=16, ff_dim=32
    )
    return model, text.TranslationPreprocessor(tokenizer, max_length=model.max_length)


def export_translator(root, version=1):
    """A tiny translator under `root/<version>/`; returns the version path."""
    model, preprocessor = _translator()
    return export.export_translator(
        model,
        preprocessor,
        root,
        version=version,
        max_new_tokens=6,
        beam_width=BEAM_WIDTH,
    )


def export_translator_ctranslate2(root, quantization="float32"):
    """The same translator as a CTranslate2 export, `root/ctranslate2`."""
    from keras_seq.export.ctranslate2 import export_ctranslate2

    model, preprocessor = _translator()
    preprocessor.save(root / "preprocessor")
    return export_ctranslate2(
        model, root / "preprocessor", root / "ctranslate2", quantization
    )


def export_classifier(root):
    keras.utils.set_random_seed(0)
    tokenizer = text.make_tokenizer(VOCABULARY)
    model = zoo.build_classifier("tiny", vocabulary_size=len(VOCABULARY))
    preprocessor = text.ClassificationPreprocessor(tokenizer, 16)
    return export.export_classifier(
        model, preprocessor, root, class_names=["negative", "positive"]
    )


def export_language_model(root):
    keras.utils.set_random_seed(0)
    tokenizer = text.make_tokenizer(VOCABULARY)
    model = zoo.build_language_model("tiny", vocabulary_size=len(VOCABULARY))
    preprocessor = text.LanguageModelPreprocessor(tokenizer, model.max_length)
    return export.export_language_model(model, preprocessor, root, max_new_tokens=4)
