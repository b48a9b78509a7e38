"""`TrainedModel.translate`'s decoding controls and scores, and
`TrainedModel.score`: `generate`'s controls with text where it takes ids,
checked before any work."""

import math

import keras
import numpy as np
import pytest

WORDS = [f"w{i}" for i in range(1, 25)] + ["."]
SOURCES = ["w1 w2 w3.", "w4 w5.", "w6 w7 w8 w9 w10.", "w2."]


@pytest.fixture(scope="module")
def trained():
    """A tiny translator of random weights (seeded) and its preprocessor,
    as `TrainedModel.of` holds a model built in Python."""
    import zoo
    from keras_seq import text
    from zoo.recipes.trained import TrainedModel

    vocabulary = list(text.RESERVED_TOKENS) + WORDS
    preprocessor = text.TranslationPreprocessor(
        text.make_tokenizer(vocabulary), max_length=16
    )
    keras.utils.set_random_seed(3)
    model = zoo.build_translator("tiny", vocabulary_size=len(vocabulary), max_length=16)
    return TrainedModel.of("translator", model, preprocessor)


def _written(scored):
    """The tokens of a `Scored` translation before its end token."""
    return [t for t in scored.tokens if t != "[END]"]


@pytest.mark.parametrize("beam_width", [1, 3])
def test_a_translation_scores_what_score_gives_it(trained, beam_width):
    """Without controls, each token's returned log-probability is the
    teacher-forced one of the same output (greedy and the best beam)."""
    plain = trained.translate(SOURCES, beam_width=beam_width, max_new_tokens=8)
    scored = trained.translate(
        SOURCES, beam_width=beam_width, max_new_tokens=8, return_scores=True
    )
    assert [s.text for s in scored] == plain
    again = trained.score(SOURCES, [s.text for s in scored])
    for given, forced in zip(scored, again):
        assert all(v <= 0 for v in given.log_probs)
        if given.tokens[-1] != "[END]":  # Ran out of room: score adds [END].
            forced = forced._replace(
                tokens=forced.tokens[:-1], log_probs=forced.log_probs[:-1]
            )
        assert given.tokens == forced.tokens
        np.testing.assert_allclose(given.log_probs, forced.log_probs, atol=1e-4)
        assert math.isclose(given.log_prob, sum(given.log_probs))


def test_a_pair_scores_the_same_alone_and_in_a_batch(trained):
    targets = ["w3 w3.", "w9", "", "w1 w2 w3 w4 w5 w6."]
    together = trained.score(SOURCES, targets)
    for source, target, batched in zip(SOURCES, targets, together):
        alone = trained.score(source, target)
        assert alone.text == target and alone.tokens == batched.tokens
        assert alone.tokens[-1] == "[END]"
        np.testing.assert_allclose(alone.log_probs, batched.log_probs, atol=1e-5)
    # A target is its tokens, then [END]: "" is [END] alone.
    assert together[2].tokens == ["[END]"]
    assert together[0].tokens == ["w3", "w3", ".", "[END]"]


def test_a_forced_prefix_starts_every_translation(trained):
    outputs = trained.translate(
        SOURCES, beam_width=1, max_new_tokens=8, target_prefix="w24 w23",
        return_scores=True,
    )  # fmt: skip
    for output in outputs:
        assert output.tokens[:2] == ["w24", "w23"]
        assert output.text.startswith("w24 w23")
    # One prefix per text; "" forces nothing.
    each = trained.translate(
        SOURCES[:2], beam_width=3, max_new_tokens=8, target_prefix=["w20", ""]
    )
    assert each[0].startswith("w20")
    assert each[1] == trained.translate(SOURCES[1], beam_width=3, max_new_tokens=8)


def test_suppressed_tokens_and_blocked_ngrams_are_never_written(trained):
    plain = trained.translate(
        SOURCES, beam_width=1, max_new_tokens=10, return_scores=True
    )
    written = sorted({t for s in plain for t in _written(s)})
    assert written, "the untrained model writes some word"
    suppressed = trained.translate(
        SOURCES, beam_width=1, max_new_tokens=10, suppress=written,
        return_scores=True,
    )  # fmt: skip
    assert not {t for s in suppressed for t in s.tokens} & set(written)
    for beam_width in (1, 3):
        blocked = trained.translate(
            SOURCES, beam_width=beam_width, max_new_tokens=10,
            no_repeat_ngram_size=1, return_scores=True,
        )  # fmt: skip
        for output in blocked:
            assert len(set(output.tokens)) == len(output.tokens), output.tokens


def test_min_new_tokens_holds_the_end_token_back(trained):
    outputs = trained.translate(
        SOURCES, beam_width=1, max_new_tokens=10, min_new_tokens=7,
        return_scores=True,
    )  # fmt: skip
    for output in outputs:
        assert len(_written(output)) >= 7, output.tokens


@pytest.mark.parametrize(
    "options, message",
    [
        ({"repetition_penalty": float("nan")}, r"^`repetition_penalty` must be"),
        ({"repetition_penalty": 0.0}, r"^`repetition_penalty` must be"),
        ({"min_new_tokens": 99}, r"^`min_new_tokens` must be"),
        ({"no_repeat_ngram_size": -1}, r"^`no_repeat_ngram_size` must be"),
        ({"suppress": ["nowhere"]}, r"^`suppress` names 'nowhere', which is no"),
        ({"suppress": "w1"}, r"^`suppress` must be a list of str"),
        ({"suppress_unknown": "yes"}, r"^`suppress_unknown` must be"),
        ({"return_scores": 1}, r"^`return_scores` must be"),
        ({"target_prefix": ["w1"]}, r"^`target_prefix` must hold one str per text"),
        ({"target_prefix": 5}, r"^`target_prefix` must be a str or a list of str"),
        ({"target_prefix": ["w1", 2]}, r"^`target_prefix` must hold str; received int"),
    ],
)
def test_a_control_out_of_range_is_refused_in_one_line(trained, options, message):
    with pytest.raises((TypeError, ValueError), match=message) as raised:
        trained.translate(SOURCES[:2], **options)
    assert "\n" not in str(raised.value)


def test_score_refuses_what_it_cannot_score(trained):
    with pytest.raises(ValueError, match=r"^`targets` must hold one str per source"):
        trained.score(SOURCES, ["w1"])
    with pytest.raises(TypeError, match=r"^`sources` must be a list of str"):
        trained.score("w1", ["w1"])
    with pytest.raises(ValueError, match=r"^`batch_size` must be"):
        trained.score(SOURCES, SOURCES, batch_size=0)


def test_the_streamed_pieces_join_to_the_greedy_translation(trained):
    for source in SOURCES:
        for options in ({}, {"target_prefix": "w24 w23", "no_repeat_ngram_size": 2}):
            pieces = list(trained.stream(source, max_new_tokens=8, **options))
            expected = trained.translate(
                [source], beam_width=1, max_new_tokens=8, **options
            )[0]
            assert "".join(pieces) == expected
            assert len(pieces) == len(expected.split()), pieces  # Word by word.
    assert list(trained.stream(" ")) == []  # A blank sentence streams nothing.


@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"beam_width": 4}, TypeError, r"^`stream` decodes greedily or samples"),
        ({"return_scores": True}, TypeError, r"^`stream` decodes greedily or"),
        ({"repetition_penalty": 0.0}, ValueError, r"^`repetition_penalty` must be"),
        ({"suppress": ["nowhere"]}, ValueError, r"^`suppress` names 'nowhere'"),
        ({"target_prefix": ["w1"]}, TypeError, r"^`target_prefix` must be a str for"),
        ({"max_new_tokens": 99}, ValueError, r"^`max_new_tokens` must be"),
    ],
)
def test_stream_refuses_what_it_cannot_do_when_called(trained, options, error, message):
    with pytest.raises(error, match=message):
        trained.stream(SOURCES[0], **options)
    with pytest.raises(TypeError, match=r"^`text` must be a str"):
        trained.stream(SOURCES)


def test_a_language_model_streams_its_prompt_and_continuation():
    import zoo
    from keras_seq import text
    from zoo.recipes.trained import TrainedModel

    vocabulary = list(text.RESERVED_TOKENS) + WORDS
    preprocessor = text.LanguageModelPreprocessor(
        text.make_tokenizer(vocabulary), max_length=16
    )
    keras.utils.set_random_seed(4)
    model = zoo.build_language_model(
        "tiny", vocabulary_size=len(vocabulary), max_length=16
    )
    language_model = TrainedModel.of("language-model", model, preprocessor)
    options = {"max_new_tokens": 8, "seed": 7, "no_repeat_ngram_size": 2}
    pieces = list(language_model.stream("w1 w2", **options))
    assert "".join(pieces) == language_model.generate("w1 w2", **options)
    assert pieces[0].startswith("w1") and len(pieces) > 2
    with pytest.raises(ValueError, match=r"^`top_p` must be in"):
        language_model.stream("w1", top_p=2.0)
    classifier = TrainedModel.of("classifier", None, preprocessor)
    with pytest.raises(ValueError, match=r"classifier; stream needs a translator"):
        classifier.stream("w1")
