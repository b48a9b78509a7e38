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


def export_translator(root, version=1):
    """A tiny translator under `root/<version>/`; returns the version path."""
    keras.utils.set_random_seed(0)
    tokenizer = text.make_tokenizer(VOCABULARY)
    model = zoo.build_translator(
        "tiny", vocabulary_size=len(VOCABULARY), model_dim=16, ff_dim=32
    )
    return export.export_translator(
        model,
        text.TranslationPreprocessor(tokenizer, max_length=model.max_length),
        root,
        version=version,
        max_new_tokens=6,
        beam_width=BEAM_WIDTH,
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
