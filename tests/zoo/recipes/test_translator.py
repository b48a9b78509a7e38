"""`zoo.recipes.translator`: the translators' training, scoring and its
budget."""

import types

import keras
import numpy as np
import pytest


def _train_recording_epoch_ends(tmp_path, monkeypatch, bleu, **changes):
    """A tiny run (3 epochs unless `changes` say) whose validation BLEU
    calls return `bleu` in turn; the result and the raw weights of each
    epoch end."""
    from keras_seq.data import TranslationCorpus
    from zoo.recipes import translator as recipe

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
    scores = iter(bleu)
    monkeypatch.setattr(recipe, "corpus_bleu", lambda *a, **k: next(scores))
    changes = {"epochs": 3, **changes}
    result = recipe.train_translator(
        corpus, str(tmp_path), preset="tiny", vocabulary_size=60,
        average_last_epochs=2, bleu_sample=4, verbose=0, **changes,
    )  # fmt: skip
    assert next(scores, None) is None, "every score was asked for"
    return result, ends


# Validation BLEU of epochs 1-3, then of the mean of epochs 2 and 3: a tie
# keeps the mean.
@pytest.mark.parametrize("average_bleu", [3.0, 4.0])
def test_train_translator_returns_the_mean_of_the_last_epochs(
    tmp_path, monkeypatch, average_bleu
):
    result, ends = _train_recording_epoch_ends(
        tmp_path, monkeypatch, [1.0, 2.0, 3.0, average_bleu]
    )
    assert len(ends) == 3 and result.averaged_epochs == 2
    assert result.averaging == {
        "epochs": 2, "kept": "average", "bleu_last": 3.0, "bleu_average": average_bleu
    }  # fmt: skip
    assert result.record()["averaging"]["kept"] == "average"
    model = result.model
    for variable, last, before in zip(model.trainable_variables, ends[-1], ends[-2]):
        np.testing.assert_allclose(np.array(variable), (last + before) / 2, rtol=1e-5)
    assert not np.allclose(np.array(model.trainable_variables[0]), ends[-1][0])


def test_averaging_that_scores_lower_on_validation_is_not_kept(tmp_path, monkeypatch):
    result, ends = _train_recording_epoch_ends(
        tmp_path, monkeypatch, [1.0, 2.0, 3.0, 2.9]
    )
    assert result.averaged_epochs == 1
    assert result.averaging == {
        "epochs": 2, "kept": "last", "bleu_last": 3.0, "bleu_average": 2.9
    }  # fmt: skip
    for variable, last in zip(result.model.trainable_variables, ends[-1]):
        np.testing.assert_array_equal(np.array(variable), last)


def test_validation_every_few_epochs_still_scores_the_last(tmp_path, monkeypatch):
    # Of 4 epochs every 3rd is scored, and the first and the last: not
    # epoch 2. The last weights' score is epoch 4's, and the mean of epochs
    # 3 and 4 is scored once more.
    result, ends = _train_recording_epoch_ends(
        tmp_path, monkeypatch, [1.0, 2.0, 3.0, 2.5], epochs=4, bleu_every=3
    )
    assert len(ends) == 4
    assert [epoch for _, epoch, _ in result.bleu_history] == [1, 3, 4]
    assert result.averaging["kept"] == "last" and result.averaged_epochs == 1


@pytest.mark.parametrize("value", [0, 2.0, None])
def test_train_translator_refuses_a_bad_average_count(tmp_path, value):
    from keras_seq.data import TranslationCorpus
    from zoo.recipes import translator as recipe

    corpus = TranslationCorpus(train=[("a.", "b.")], validation=[], test=[])
    with pytest.raises(ValueError, match="`average_last_epochs` must be a positive"):
        recipe.train_translator(corpus, str(tmp_path), average_last_epochs=value)
    assert not any(tmp_path.iterdir()), "refused before anything is written"


def test_early_stopping_on_validation_bleu(tmp_path, monkeypatch):
    from keras_seq.data import TranslationCorpus
    from zoo.recipes import translator as recipe

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
    from zoo.recipes import translator as recipe

    with pytest.raises(ValueError, match="`early_stopping_patience`"):
        recipe.train_translator(None, str(tmp_path), early_stopping_patience=0)
    assert not any(tmp_path.iterdir()), "refused before anything is written"


def test_test_bleu_is_cased_first_with_the_lowercased_beside(monkeypatch):
    import sacrebleu

    from zoo.recipes import translator as recipe

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
    from zoo.recipes import translator as recipe

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


def test_scoring_cost_estimates_the_scoring_after_training():
    from zoo.recipes.translator import ScoringCost

    # 4 beams on 600 sentences, then greedily on 600; one rescoring.
    cost = ScoringCost([(4, 600), (1, 600)], rescorings=1)
    assert cost.minutes() == 0.0, "nothing measured yet"
    # The first validation (300 sentences) compiled its loop: until a
    # second one, its whole 30 s stands for compiling and for decoding.
    cost.measured(30.0, 300)
    beam = 1 + 3 * ScoringCost.COMPILE_PER_BEAM, 1 + 3 * ScoringCost.STEP_PER_BEAM
    first = 30 + (30 * beam[0] + 60 * beam[1]) + (30 + 60)
    assert cost.minutes() == pytest.approx(first / 60)
    # A second, compiled one: 6 s of decoding, so compiling cost 24 s.
    cost.measured(6.0, 300)
    second = 6 + (24 * beam[0] + 12 * beam[1]) + (24 + 12)
    assert cost.minutes() == pytest.approx(second / 60)
    # A later validation decodes for longer (the model ends its sentences
    # later): the latest cost stands, not the cheapest; compiling stays the
    # first decoding's excess over the second.
    cost.measured(9.0, 300)
    third = 9 + (24 * beam[0] + 18 * beam[1]) + (24 + 18)
    assert cost.minutes() == pytest.approx(third / 60)


@pytest.mark.parametrize("minutes,before_fit", [(None, 0), (60.0, 2)])
def test_a_budget_times_the_validation_decoding_before_training(
    tmp_path, monkeypatch, minutes, before_fit
):
    # `--minutes` needs the scoring's cost from the first batch on: the
    # validation loop is compiled and then timed before `fit`.
    from keras_seq.data import TranslationCorpus
    from zoo.recipes import translator as recipe

    pairs = [(f"ich sehe {w}.", f"i see {w}.") for w in "abcdefgh"]
    corpus = TranslationCorpus(train=pairs * 2, validation=pairs[:3], test=pairs[:3])
    calls, at_start = [], []
    translate = recipe.translate_texts
    monkeypatch.setattr(
        recipe, "translate_texts", lambda *a, **k: calls.append(1) or translate(*a, **k)
    )
    fit = keras.Model.fit

    class Start(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            at_start.append(len(calls))

    def fit_and_look(model, *args, callbacks=(), **kwargs):
        return fit(model, *args, callbacks=[Start(), *callbacks], **kwargs)

    monkeypatch.setattr(keras.Model, "fit", fit_and_look)
    recipe.train_translator(
        corpus, str(tmp_path), preset="tiny", epochs=1, vocabulary_size=40,
        bleu_sample=3, verbose=0, minutes=minutes,
    )  # fmt: skip
    assert at_start == [before_fit] and len(calls) == before_fit + 1


def test_train_names_the_tokenizer_it_learns():
    from zoo.recipes import translator as translator_recipe
    from zoo.recipes.settings import TranslatorSettings

    corpus = types.SimpleNamespace(train=[("a", "b")] * 1200)
    said = {
        kind: translator_recipe.RECIPE.learning_words(
            corpus, TranslatorSettings(tokenizer=kind)
        )
        for kind in ("wordpiece", "sentencepiece")
    }
    assert said == {
        "wordpiece": "WordPiece vocabularies on 1,200 pairs",
        "sentencepiece": "SentencePiece vocabularies on 1,200 pairs",
    }
