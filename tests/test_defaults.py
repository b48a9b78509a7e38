"""`keras_seq.defaults`: each decoding and batching default written once and
read by every signature that has it."""

import inspect

from keras_seq import defaults
from keras_seq.export import saved_model
from keras_seq.generation import DEFAULT_MAX_NEW_TOKENS, GenerativeModel, beam
from keras_seq.text import translation_preprocessor
from zoo.recipes import settings, translator
from zoo.serving import ctranslate2_model


def _default(function, name):
    return inspect.signature(function).parameters[name].default


def test_every_signature_reads_the_one_default():
    beams = (
        GenerativeModel.generate, GenerativeModel.beam_search, beam.beam_search,
        saved_model.export_translator, ctranslate2_model.CTranslate2Servable,
    )  # fmt: skip
    for function in beams:
        assert _default(function, "beam_width") == defaults.BEAM_WIDTH, function
        assert _default(function, "length_penalty") == defaults.LENGTH_PENALTY
    assert settings.TranslatorSettings.beam_width == defaults.BEAM_WIDTH
    dataset = translation_preprocessor.TranslationPreprocessor.dataset
    assert _default(dataset, "batch_tokens") == defaults.BATCH_TOKENS
    assert settings.TranslatorSettings.batch_tokens == defaults.BATCH_TOKENS
    unbounded = (
        DEFAULT_MAX_NEW_TOKENS, translation_preprocessor.UNBOUNDED_LENGTH,
        translator.RNN_MAX_LENGTH,
    )  # fmt: skip
    assert unbounded == (defaults.UNBOUNDED_LENGTH,) * 3


def test_the_defaults_import_nothing():
    source = inspect.getsource(defaults)
    assert "import " not in source.replace("imports nothing", "")
