"""Per-token scores: `return_scores` of `generate` and `beam_search`, and
`score`, the teacher-forced log-probabilities of a given output.

What they must agree on: a hypothesis's per-token log-probabilities add up
to its score (times its length penalty); `score` of a model's own greedy
output equals the scores `generate` returned; and both equal CTranslate2's
(`score_batch`, `return_scores`) on the same exported weights.
"""

import keras
import numpy as np
import pytest

import zoo
from keras_seq.generation import GenerativeModel, length_penalty_factor
from keras_seq.text import END_ID, START_ID
from tests.generation.test_controls import (
    CT2_LENGTH,
    CT2_SOURCES,
    CT2_VOCABULARY,
    _ct2_translator,
    _numpy,
    _until_end,
)

SOURCES = np.array(
    [[5, 6, 7, 0, 0], [8, 9, 10, 11, 12], [13, 0, 0, 0, 0], [14, 15, 16, 17, 0]],
    "int32",
)
PROMPTS = np.array([[5, 6, 7], [8, 9, 10], [11, 12, 13], [30, 31, 32]], "int32")
NAMES = ["translator", "language_model", "rnn_translator"]


@pytest.fixture(scope="module")
def models():
    keras.utils.set_random_seed(5)
    built = {
        "translator": zoo.build_translator("tiny", max_length=16),
        "language_model": zoo.build_language_model("tiny", max_length=24),
        "rnn_translator": zoo.build_rnn_translator("tiny"),
    }
    # An output bias that favours the end token a little, so that the
    # translators' rows end at different lengths (the language model's
    # output layer is its token table).
    for name in ("translator", "rnn_translator"):
        bias = next(v for v in built[name].weights if v.path == "logits/bias")
        values = _numpy(bias).copy()
        values[END_ID] += 3.0
        bias.assign(values)
    return built


def _inputs(name):
    return PROMPTS if name == "language_model" else SOURCES


def _lengths(ids):
    """Each hypothesis's length n, its end token included: (B, R)."""
    ids = np.asarray(ids)
    ends = ids == END_ID
    return np.where(ends.any(-1), ends.argmax(-1) + 1, ids.shape[-1])


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


@pytest.mark.parametrize("alpha", [0.0, 0.6])
@pytest.mark.parametrize(
    "controls",
    [{}, {"prefix_ids": [[40], [], [41, 42], [43]], "no_repeat_ngram_size": 2}],
    ids=["plain", "controls"],
)
@pytest.mark.parametrize("name", NAMES)
def test_summed_token_scores_equal_the_hypothesis_score(models, name, controls, alpha):
    ids, scores, token_scores = models[name].beam_search(
        _inputs(name), 10, beam_width=3, length_penalty=alpha, num_return=3,
        return_scores=True, **controls,
    )  # fmt: skip
    ids, scores, token_scores = map(_numpy, (ids, scores, token_scores))
    assert token_scores.shape == ids.shape
    assert np.all(token_scores[ids == 0] == 0.0)
    assert np.all(token_scores[ids != 0] < 0.0)
    factor = _numpy(length_penalty_factor(_lengths(ids), alpha))
    np.testing.assert_allclose(token_scores.sum(-1), scores * factor, atol=1e-4)
    if name != "language_model":
        assert np.any(_lengths(ids) < 10)  # Some ended early.


def test_the_rnn_translators_attention_score_leaves_its_score_method(models):
    """Its `score` hyperparameter (the attention's score function) is kept
    as `attention_score`, in the config still under `score`."""
    model = models["rnn_translator"]
    assert type(model).score is GenerativeModel.score
    assert model.get_config()["score"] == model.attention_score == "additive"
    rebuilt = type(model).from_config(model.get_config())
    assert rebuilt.get_config() == model.get_config()


@pytest.mark.parametrize("strategy", ["greedy", "sample"])
@pytest.mark.parametrize("name", NAMES)
def test_score_of_the_models_own_output_equals_generates_scores(models, name, strategy):
    model = models[name]
    ids, scores = model.generate(
        _inputs(name), 10, strategy=strategy, seed=4, return_scores=True
    )
    ids, scores = _numpy(ids), _numpy(scores)
    assert np.all(scores[ids == 0] == 0.0)
    np.testing.assert_allclose(
        _numpy(model.score(_inputs(name), ids)), scores, atol=1e-4
    )


@pytest.mark.parametrize("name", NAMES)
def test_beam_generates_the_best_hypothesis_scores(models, name):
    model = models[name]
    ids, scores = model.generate(
        _inputs(name), 10, strategy="beam", beam_width=3, return_scores=True
    )
    best, _, token_scores = model.beam_search(
        _inputs(name), 10, beam_width=3, return_scores=True
    )
    np.testing.assert_array_equal(_numpy(ids), _numpy(best)[:, 0])
    np.testing.assert_allclose(_numpy(scores), _numpy(token_scores)[:, 0], atol=1e-6)
    # Beam search's tokens are scored by the model as `score` scores them.
    np.testing.assert_allclose(
        _numpy(model.score(_inputs(name), _numpy(ids))), _numpy(scores), atol=1e-4
    )


def test_sampling_scores_are_those_of_the_tempered_distribution(models):
    model = models["translator"]
    ids, scores = model.generate(
        SOURCES, 8, strategy="sample", seed=2, temperature=2.0, return_scores=True
    )
    ids, scores = _numpy(ids), _numpy(scores)
    # One step by hand: the first token's log-probability at temperature 2.
    given, context, cache = model.start_decoding(SOURCES, 8, START_ID)
    logits, _ = model.decoding_step(given, 0, context, cache)
    logits = _numpy(logits).astype("float64")
    logits[:, list(model.unsamplable_token_ids)] = -np.inf
    log_probs = _log_softmax(logits / 2.0)
    want = np.take_along_axis(log_probs, ids[:, :1], -1)[:, 0]
    np.testing.assert_allclose(scores[:, 0], want, atol=1e-4)


def test_score_ignores_padding_and_other_rows(models):
    model = models["translator"]
    targets = np.array([[20, 21, 22, END_ID], [23, 24, 0, 0]], "int32")
    both = _numpy(model.score(SOURCES[:2], targets))
    assert np.all(both[1, 2:] == 0.0)
    alone = _numpy(model.score(SOURCES[1:2], targets[1:2, :2]))
    np.testing.assert_allclose(both[1, :2], alone[0], atol=1e-5)


def test_a_language_model_scores_its_whole_text(models):
    model = models["language_model"]
    text = np.array([[5, 6, 7, 8, 9], [10, 11, 12, 0, 0]], "int32")
    whole = _numpy(model.score(text))
    assert whole.shape == (2, 4)
    np.testing.assert_allclose(
        whole, _numpy(model.score(text[:, :1], text[:, 1:])), atol=1e-6
    )
    assert np.all(whole[1, 2:] == 0.0)


def test_score_refuses_what_it_cannot_score(models):
    model = models["translator"]
    with pytest.raises(ValueError, match="`target_ids` is required"):
        model.score(SOURCES)
    with pytest.raises(ValueError, match="one row per row of `token_ids`"):
        model.score(SOURCES, np.ones((3, 2), "int32"))
    with pytest.raises(ValueError, match="`max_new_tokens` must be in"):
        model.score(SOURCES, np.ones((4, 16), "int32"))
    with pytest.raises(TypeError, match="`target_ids` must be an array"):
        model.score(SOURCES, [[5, 6]])


# CTranslate2 on the same weights.


@pytest.fixture(scope="module")
def ct2_pair(tmp_path_factory):
    ctranslate2 = pytest.importorskip("ctranslate2")
    from keras_seq.export.ctranslate2 import export_ctranslate2
    from keras_seq.text import TranslationPreprocessor, make_tokenizer

    directory = tmp_path_factory.mktemp("ct2_scores")
    tokenizer = make_tokenizer(CT2_VOCABULARY)
    TranslationPreprocessor(tokenizer, max_length=CT2_LENGTH).save(directory / "pre")
    model = _ct2_translator(2, end_bias=2.0, unknown_bias=1.0)
    export_ctranslate2(model, directory / "pre", directory / "ct2")
    return model, ctranslate2.Translator(str(directory / "ct2"))


def _words(rows):
    return [[CT2_VOCABULARY[i] for i in row if i] for row in rows]


def test_score_equals_ctranslate2_score_batch(ct2_pair):
    model, translator = ct2_pair
    ids = _numpy(model.generate(CT2_SOURCES, CT2_LENGTH - 1))
    rows = [_until_end(row) for row in ids.tolist()]
    got = _numpy(model.score(CT2_SOURCES, ids))
    # CTranslate2 scores the target and then the end token it appends.
    targets = [row[:-1] if row[-1] == END_ID else row for row in rows]
    results = translator.score_batch(_words(CT2_SOURCES), _words(targets))
    for row, result, ours in zip(rows, results, got):
        theirs = result.log_probs if row[-1] == END_ID else result.log_probs[:-1]
        np.testing.assert_allclose(ours[: len(row)], theirs, atol=2e-4)


@pytest.mark.parametrize("prefix", [False, True], ids=["plain", "prefix"])
def test_greedy_scores_equal_ctranslate2_return_scores(ct2_pair, prefix):
    """CTranslate2's score of a greedy output (length penalty 0) is the sum
    of its log-probabilities after the target prefix; ours scores the
    forced ids too."""
    model, translator = ct2_pair
    prefixes = [[5, 6], [7], [], [8, 9, 10]] if prefix else [[]] * 4
    ids, scores = model.generate(
        CT2_SOURCES, CT2_LENGTH - 1, return_scores=True,
        prefix_ids=prefixes if prefix else None,
    )  # fmt: skip
    ids, scores = _numpy(ids), _numpy(scores)
    results = translator.translate_batch(
        _words(CT2_SOURCES),
        target_prefix=_words(prefixes) if prefix else None,
        beam_size=1,
        max_decoding_length=CT2_LENGTH - 1,
        min_decoding_length=0,
        length_penalty=0.0,
        suppress_sequences=[["[PAD]"], ["[START]"], ["[MASK]"]],
        return_scores=True,
        return_end_token=True,
    )
    for row, result, forced, ours in zip(ids, results, prefixes, scores):
        assert _until_end(row) == [
            CT2_VOCABULARY.index(t) for t in result.hypotheses[0]
        ]
        np.testing.assert_allclose(
            ours[len(forced) :].sum(), result.scores[0], atol=1e-4
        )
