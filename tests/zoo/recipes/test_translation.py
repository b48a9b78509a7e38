"""`zoo.recipes.translation`: translating texts and the training recipe."""

import keras
import numpy as np
import pytest


def test_translate_texts_gives_blank_sentences_an_empty_translation():
    import zoo
    from keras_seq import text
    from zoo.recipes.translation import translate_texts

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


def test_train_translator_returns_the_mean_of_the_last_epochs(tmp_path, monkeypatch):
    from keras_seq.data import TranslationCorpus
    from zoo.recipes import translation as recipe

    words = [("ich", "i"), ("du", "you"), ("er", "he"), ("wir", "we")]
    pairs = [(f"{a} sehe {b}.", f"{c} see {d}.") for a, c in words for b, d in words]
    corpus = TranslationCorpus(train=pairs * 4, validation=pairs[:4], test=pairs[:4])
    ends = []

    class Keep(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            ends.append([np.array(v) for v in self.model.trainable_variables])

    # The raw epoch-end weights, recorded by a callback that `fit` runs first.
    fit = keras.Model.fit

    def fit_and_keep(model, *args, callbacks=(), **kwargs):
        return fit(model, *args, callbacks=[Keep(), *callbacks], **kwargs)

    monkeypatch.setattr(keras.Model, "fit", fit_and_keep)
    result = recipe.train_translator(
        corpus, str(tmp_path), preset="tiny", epochs=3, vocabulary_size=60,
        average_last_epochs=2, bleu_sample=4, verbose=0,
    )  # fmt: skip
    assert len(ends) == 3 and result.averaged_epochs == 2
    model = result.model
    for variable, last, before in zip(model.trainable_variables, ends[-1], ends[-2]):
        np.testing.assert_allclose(np.array(variable), (last + before) / 2, rtol=1e-5)
    assert not np.allclose(np.array(model.trainable_variables[0]), ends[-1][0])


@pytest.mark.parametrize("value", [0, 2.0, None])
def test_train_translator_refuses_a_bad_average_count(tmp_path, value):
    from keras_seq.data import TranslationCorpus
    from zoo.recipes import translation as recipe

    corpus = TranslationCorpus(train=[("a.", "b.")], validation=[], test=[])
    with pytest.raises(ValueError, match="`average_last_epochs` must be a positive"):
        recipe.train_translator(corpus, str(tmp_path), average_last_epochs=value)
    assert not any(tmp_path.iterdir()), "refused before anything is written"


def test_early_stopping_on_validation_bleu(tmp_path, monkeypatch):
    from keras_seq.data import TranslationCorpus
    from zoo.recipes import translation as recipe

    pairs = [(f"ich sehe {w}.", f"i see {w}.") for w in "abcdefgh"]
    corpus = TranslationCorpus(train=pairs * 2, validation=pairs[:3], test=pairs[:3])
    scores = iter([5.0, 6.0, 5.5, 6.0, 4.0, 9.0, 9.0, 9.0])  # best: epoch 2
    monkeypatch.setattr(recipe, "corpus_bleu", lambda *a, **k: next(scores))
    result = recipe.train_translator(
        corpus, str(tmp_path), preset="tiny", epochs=8, vocabulary_size=40,
        bleu_sample=3, verbose=0, early_stopping_patience=3, token_dropout=0.1,
    )  # fmt: skip
    # Epochs 3, 4 and 5 do not beat epoch 2's 6.0 (a tie is no gain): stop.
    assert len(result.history["loss"]) == 5
    assert [bleu for _, _, bleu in result.bleu_history] == [5, 6, 5.5, 6, 4]


def test_a_bad_patience_is_refused_before_anything_is_written(tmp_path):
    from zoo.recipes import translation as recipe

    with pytest.raises(ValueError, match="`early_stopping_patience`"):
        recipe.train_translator(None, str(tmp_path), early_stopping_patience=0)
    assert not any(tmp_path.iterdir()), "refused before anything is written"


def test_test_bleu_is_cased_first_with_the_lowercased_beside(monkeypatch):
    import sacrebleu

    from zoo.recipes import translation as recipe

    references = ["I see you.", "We like her.", "He knows them."]
    hypotheses = ["i see you.", "We like her.", "he knows them."]
    monkeypatch.setattr(recipe, "translate_texts", lambda *a, **k: hypotheses)
    scores = recipe.evaluate_translator(None, None, list(zip(references, references)))
    assert scores["bleu"] == sacrebleu.corpus_bleu(hypotheses, [references]).score
    assert scores["bleu"] == pytest.approx(61.6049, abs=1e-3)  # two words miss
    assert scores["bleu_lowercase"] == pytest.approx(100.0)
    named = recipe.bleu_scores(scores, 4)
    assert list(named) == ["bleu_beam4", "bleu_beam4_lowercase"]
    assert named["bleu_beam4"] == scores["bleu"]
    assert list(recipe.bleu_scores(scores, 1)) == [
        "bleu_greedy",
        "bleu_greedy_lowercase",
    ]


@pytest.mark.parametrize("lowercase", [False, True])
def test_a_run_keeps_case_unless_it_lowercases(tmp_path, lowercase):
    """The vocabularies learn the text as the tokenizers read it: cased by
    default, lowercased with `lowercase=True`; the preprocessor says which."""
    from keras_seq.data import TranslationCorpus
    from zoo.recipes import translation as recipe

    pairs = [(f"Ich sehe {w}.", f"I see {w}.") for w in "abcdefgh"]
    corpus = TranslationCorpus(train=pairs * 2, validation=pairs[:2], test=pairs[:2])
    result = recipe.train_translator(
        corpus, str(tmp_path), preset="tiny", epochs=1, vocabulary_size=40,
        bleu_sample=2, verbose=0, lowercase=lowercase,
    )  # fmt: skip
    preprocessor = result.preprocessor
    assert preprocessor.settings()["lowercase"] is lowercase
    source = preprocessor.source_tokenizer.get_vocabulary()
    target = preprocessor.target_tokenizer.get_vocabulary()
    assert ("Ich" in source, "I" in target) == (not lowercase, not lowercase)
    assert ("ich" in source, "i" in target) == (lowercase, lowercase)
    ids = preprocessor.tokenize_target(["I see a.", "i see a."]).to_list()
    assert (ids[0] == ids[1]) is lowercase
    expected = "i see a." if lowercase else "I see a."
    assert preprocessor.detokenize([[2, *ids[0], 3]]) == [expected]
