"""`zoo.recipes.inference`: what a trained model does with strings."""

import keras
import pytest


def test_translate_texts_gives_blank_sentences_an_empty_translation():
    import zoo
    from keras_seq import text
    from zoo.recipes.inference import translate_texts

    vocabulary = list(text.RESERVED_TOKENS) + ["w1", "w2", "."]
    preprocessor = text.TranslationPreprocessor(
        text.make_tokenizer(vocabulary), max_length=32
    )
    keras.utils.set_random_seed(0)
    model = zoo.build_translator("tiny", vocabulary_size=len(vocabulary))
    translations = translate_texts(
        model, preprocessor, ["", "   ", "w1 w2.", "\t"], max_new_tokens=4
    )
    assert translations[0] == translations[1] == translations[3] == ""
    assert len(translations) == 4 and isinstance(translations[2], str)


def test_the_list_apis_refuse_one_str():
    """One str would be read as its characters."""
    from zoo.recipes import inference

    for call in (inference.translate_texts, inference.classify_texts):
        with pytest.raises(TypeError, match=r"^`texts` must be a list of str"):
            call(None, None, "w1 w2.")
