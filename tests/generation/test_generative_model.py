"""`GenerativeModel`: one `generate` and one `beam_search` for every family.

The decoding itself is tested per family against full teacher-forced
passes (tests/zoo/test_*_generation.py); here, that the families share the
one implementation, its defaults and its argument checks.
"""

import inspect

import keras
import numpy as np
import pytest

import zoo
from keras_seq import masks
from keras_seq.generation import (
    DEFAULT_MAX_NEW_TOKENS,
    GenerativeModel,
    generative_model,
    make_sampler,
    resolve_max_new_tokens,
)
from keras_seq.text import (
    END_ID,
    MASK_ID,
    PAD_ID,
    START_ID,
    UNK_ID,
    UNSAMPLABLE_IDS,
)
from tests.generation.loops import compiled_trip_counts, host_callbacks

FAMILIES = (zoo.Translator, zoo.LanguageModel, zoo.RNNTranslator)
BUILDERS = {
    "translator": zoo.build_translator,
    "language_model": zoo.build_language_model,
    "rnn_translator": zoo.build_rnn_translator,
}


@pytest.mark.parametrize("family", FAMILIES, ids=lambda c: c.__name__)
def test_the_families_share_one_generate_and_beam_search(family):
    assert issubclass(family, GenerativeModel)
    assert family.generate is GenerativeModel.generate
    assert family.beam_search is GenerativeModel.beam_search


def _defaults(function):
    return {
        name: parameter.default
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }


def test_defaults_agree_and_come_from_the_text_constants():
    generate = _defaults(GenerativeModel.generate)
    beam = _defaults(GenerativeModel.beam_search)
    # None: the model's own start id, the text constant unless it says
    # otherwise (an imported checkpoint's start id).
    assert generate["start_token_id"] is beam["start_token_id"] is None
    assert GenerativeModel().default_start_token_id == START_ID
    assert generate["end_token_id"] == beam["end_token_id"] == END_ID
    assert generate["max_new_tokens"] is beam["max_new_tokens"] is None
    for name in ("beam_width", "length_penalty"):
        assert generate[name] == beam[name]


def test_resolve_max_new_tokens():
    assert resolve_max_new_tokens(None) == DEFAULT_MAX_NEW_TOKENS == 64
    assert resolve_max_new_tokens(None, 31) == 31
    assert resolve_max_new_tokens(5, 31) == 5
    with pytest.raises(ValueError, match="`max_new_tokens` must be a positive"):
        resolve_max_new_tokens(0)


@pytest.mark.parametrize(
    "name, expected",
    [("translator", 31), ("language_model", 29), ("rnn_translator", 64)],
)
def test_max_new_tokens_defaults_to_what_the_model_allows(name, expected):
    model = BUILDERS[name]("tiny")  # max_length 32 for the Transformers
    ids = np.array([[5, 6, 7]], "int32")
    assert model.check_generate_input(ids) == expected
    assert model.check_generate_input(ids, 4) == 4


def test_generate_defaults_are_the_start_and_end_ids():
    keras.utils.set_random_seed(2)
    model = zoo.build_translator("tiny")
    ids = np.array([[5, 6, 7, 0], [8, 9, 10, 11]], "int32")
    default = keras.ops.convert_to_numpy(model.generate(ids))
    assert default.shape == (2, 31)
    explicit = model.generate(
        ids, 31, start_token_id=START_ID, end_token_id=END_ID, strategy="greedy"
    )
    np.testing.assert_array_equal(default, keras.ops.convert_to_numpy(explicit))


def test_the_language_model_ignores_the_start_token():
    keras.utils.set_random_seed(2)
    model = zoo.build_language_model("tiny")
    prompt = np.array([[5, 6, 7]], "int32")
    a = model.generate(prompt, 5, end_token_id=None)
    b = model.generate(prompt, 5, start_token_id=9, end_token_id=None)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b)
    )


def test_a_model_without_its_hooks_names_them():
    with pytest.raises(NotImplementedError, match="check_generate_input"):
        GenerativeModel().generate(np.ones((1, 2), "int32"))


def _counting_traces(model, monkeypatch):
    """Record each trace of the model's decoding loops (not each call)."""
    traced = []
    for name in ("_beam_search", "_sample"):
        original = getattr(model, name)

        def counting(*args, original=original, name=name, **kwargs):
            traced.append(name)
            return original(*args, **kwargs)

        monkeypatch.setattr(model, name, counting)
    return traced


@pytest.mark.skipif(
    keras.backend.backend() == "torch", reason="PyTorch decodes eagerly: no trace"
)
@pytest.mark.parametrize("name", ["translator", "language_model"])
def test_decoding_traces_once_for_inputs_of_one_shape(name, monkeypatch):
    keras.utils.set_random_seed(3)
    model = BUILDERS[name]("tiny")
    traced = _counting_traces(model, monkeypatch)
    rng = np.random.default_rng(0)
    first = {}
    for call in range(3):
        ids = rng.integers(4, 100, (2, 5)).astype("int32")
        beam = model.beam_search(ids, 6, beam_width=3, end_token_id=None)[0]
        greedy = model.generate(ids, 6, end_token_id=None)
        if call == 0:
            first = {"ids": ids, "beam": beam, "greedy": greedy}
    assert sorted(traced) == ["_beam_search", "_sample"]
    # The compiled loops give what they gave when first called.
    again = model.beam_search(first["ids"], 6, beam_width=3, end_token_id=None)[0]
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(again), keras.ops.convert_to_numpy(first["beam"])
    )
    again = model.generate(first["ids"], 6, end_token_id=None)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(again), keras.ops.convert_to_numpy(first["greedy"])
    )
    assert sorted(traced) == ["_beam_search", "_sample"]


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="XLA via jax.jit")
@pytest.mark.parametrize(
    # The sampler's loop also reads the language model's prompt (5 ids, 4
    # steps before the 6 new ones); beam search reads it before its loop.
    "name, greedy_steps",
    [("translator", 6), ("language_model", 10)],
)
def test_decoding_without_an_end_token_is_one_loop_of_known_trip_count(
    name, greedy_steps
):
    # What the benchmarks time: XLA:GPU runs such a loop without reading a
    # predicate back to the host at every step, as it must with an end
    # token (beam search then checks it every few steps on a GPU).
    keras.utils.set_random_seed(3)
    model = BUILDERS[name]("tiny")
    ids = np.random.default_rng(0).integers(4, 100, (2, 5)).astype("int32")

    def beam(ids):
        return model._beam_search(ids, 6, 3, 0.6, 1, START_ID, None)

    def greedy(ids):
        return model._sample(ids, make_sampler("greedy"), 6, START_ID, None)

    assert compiled_trip_counts(beam, ids) == [6]
    assert compiled_trip_counts(greedy, ids) == [greedy_steps]
    assert host_callbacks(beam, ids) == host_callbacks(greedy, ids) == []


@pytest.mark.parametrize("name", ["translator", "language_model"])
def test_beam_search_of_one_row_equals_that_row_in_a_batch(name):
    # One row is the case where repeating rows can yield a view whose beams
    # share memory (Keras' torch `repeat`), which an in-place cache cannot be.
    keras.utils.set_random_seed(3)
    model = BUILDERS[name]("tiny")
    ids = np.random.default_rng(1).integers(4, 100, (2, 5)).astype("int32")
    both = model.beam_search(ids, 6, beam_width=3, end_token_id=None)
    one = model.beam_search(ids[:1], 6, beam_width=3, end_token_id=None)
    for batch, single in zip(both, one):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(single),
            keras.ops.convert_to_numpy(batch)[:1],
            rtol=1e-5,
            atol=1e-5,
        )


class _FavoursUnknown(GenerativeModel, keras.Model):
    """Logits that favour [UNK] by far, then [MASK], padding and [START],
    then the id after the last one in the cycle 5, 6, ..., 11, 5, ..."""

    unsamplable_token_ids = UNSAMPLABLE_IDS
    vocabulary_size = 12

    def label_size(self):
        return self.vocabulary_size, "vocabulary_size"

    def check_generate_input(self, token_ids, max_new_tokens=None):
        return resolve_max_new_tokens(max_new_tokens, limit=8)

    def start_decoding(self, token_ids, max_new_tokens, start_token_id):
        start = keras.ops.full((keras.ops.shape(token_ids)[0], 1), 6, "int32")
        return start, (), keras.ops.zeros((keras.ops.shape(token_ids)[0],), "int32")

    def decoding_step(self, token_ids, index, context, cache):
        vocabulary = self.vocabulary_size
        special = np.zeros(vocabulary, "float32")
        special[[UNK_ID, MASK_ID, PAD_ID, START_ID]] = [50.0, 40.0, 30.0, 20.0]
        following = keras.ops.one_hot(5 + (token_ids[:, 0] - 4) % 7, vocabulary)
        logits = keras.ops.convert_to_tensor(special)[None] + 5.0 * following  # (B, V)
        return logits, cache + 1


@pytest.mark.parametrize(
    "options",
    [
        {"strategy": "greedy"},
        {"strategy": "sample", "seed": 3, "temperature": 2.0},
        {"strategy": "sample", "seed": 4, "top_p": 0.5},
        {"strategy": "sample", "seed": 5, "top_k": 2},
        {"strategy": "beam", "beam_width": 3},
    ],
    ids=lambda o: "-".join(map(str, o.values())),
)
def test_special_tokens_are_never_chosen(options):
    ids = keras.ops.convert_to_numpy(
        _FavoursUnknown().generate(
            np.ones((3, 2), "int32"), end_token_id=None, **options
        )
    )
    assert ids.shape == (3, 8)
    assert not np.isin(ids, UNSAMPLABLE_IDS).any(), ids
    if options["strategy"] != "sample":  # The next id after the last, each step.
        np.testing.assert_array_equal(ids, np.tile([7, 8, 9, 10, 11, 5, 6, 7], (3, 1)))


@pytest.mark.parametrize("strategy", ["greedy", "beam"])
def test_the_mask_of_special_tokens_is_built_once_per_call(strategy, monkeypatch):
    built = []

    def counted(token_ids, size):
        built.append((tuple(token_ids), size))
        return masks.token_logits_mask(token_ids, size)

    monkeypatch.setattr(generative_model, "token_logits_mask", counted)
    ids = _FavoursUnknown().generate(
        np.ones((3, 2), "int32"), 8, strategy=strategy, end_token_id=None
    )
    # Eight steps (run eagerly on PyTorch), one (1, V) mask.
    assert built == [(tuple(UNSAMPLABLE_IDS), 12)]
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(ids), np.tile([7, 8, 9, 10, 11, 5, 6, 7], (3, 1))
    )


def test_the_end_token_is_never_masked():
    model = _FavoursUnknown()
    model.unsamplable_token_ids = (*UNSAMPLABLE_IDS, 9)
    ids = model.generate(np.ones((1, 2), "int32"), end_token_id=9)
    assert keras.ops.convert_to_numpy(ids).tolist() == [[7, 8, 9, 0, 0, 0, 0, 0]]


@pytest.mark.parametrize(
    "build", [zoo.build_language_model, zoo.build_rnn_language_model]
)
def test_language_models_never_sample_special_tokens(build):
    keras.utils.set_random_seed(0)
    model = build("tiny")
    assert tuple(model.unsamplable_token_ids) == UNSAMPLABLE_IDS
    prompts = np.arange(10, 26, dtype="int32").reshape(8, 2)
    # A flattened distribution: an untrained model draws every id often.
    ids = model.generate(
        prompts, 12, strategy="sample", temperature=5.0, seed=1, end_token_id=None
    )
    ids = keras.ops.convert_to_numpy(ids)
    assert not np.isin(ids, UNSAMPLABLE_IDS).any(), ids
