"""`GenerativeModel.stream`: `generate`'s loop one position at a time. The
items joined are `generate`'s ids for the same arguments (greedy, a seeded
draw, the decoding controls), on every backend; a row that ended answers
0, a row without a token the end token; the checks run when `stream` is
called, and one compiled step serves every position."""

import keras
import numpy as np
import pytest

import zoo
from keras_seq.text import END_ID

SOURCE = np.array([[5, 6, 7, 8, 9], [9, 10, 0, 0, 0], [0, 0, 0, 0, 0]], "int32")
PROMPT = np.array([[1, 5, 6], [1, 7, 8]], "int32")


@pytest.fixture(scope="module")
def translator():
    keras.utils.set_random_seed(1)
    return zoo.build_translator(
        "tiny", vocabulary_size=40, model_dim=16, ff_dim=32, max_length=16
    )


@pytest.fixture(scope="module")
def language_model():
    keras.utils.set_random_seed(2)
    return zoo.build_language_model(
        "tiny", vocabulary_size=40, model_dim=16, ff_dim=32, max_length=16
    )


def _joined(items, max_new_tokens):
    """The streamed (B,) columns as `generate`'s (B, M) ids."""
    ids = np.stack(list(items), axis=1)
    return np.pad(ids, ((0, 0), (0, max_new_tokens - ids.shape[1])))


TRANSLATOR_CASES = {
    "greedy": {},
    "a seeded draw": {"strategy": "sample", "seed": 3, "top_k": 5},
    "controls": {
        "prefix_ids": [[4], [], [7, 8]],
        "min_new_tokens": 3,
        "no_repeat_ngram_size": 1,
        "suppress_token_ids": [11, 12],
    },
}


@pytest.mark.parametrize("options", TRANSLATOR_CASES.values(), ids=TRANSLATOR_CASES)
def test_a_translator_streams_what_generate_writes(translator, options):
    expected = np.asarray(translator.generate(SOURCE, 10, **options))
    items = list(translator.stream(SOURCE, 10, **options))
    assert all(item.shape == (3,) and item.dtype == np.int32 for item in items)
    np.testing.assert_array_equal(_joined(items, 10), expected)
    # The blank row answers the end token (then 0), as `generate` does.
    assert items[0][2] == END_ID and not any(item[2] for item in items[1:])
    ended = [int(np.argmax(row == END_ID)) for row in expected if END_ID in row]
    if len(ended) == len(expected):  # Every row ended: the stream stops there.
        assert len(items) == max(ended) + 1


def test_a_language_model_streams_its_sampled_continuation(language_model):
    options = {"strategy": "sample", "seed": 5, "top_p": 0.9, "end_token_id": None}
    options["repetition_penalty"] = 1.5
    expected = np.asarray(language_model.generate(PROMPT, 8, **options))
    items = list(language_model.stream(PROMPT, 8, **options))
    assert len(items) == 8  # Without an end token, exactly `max_new_tokens`.
    np.testing.assert_array_equal(np.stack(items, axis=1), expected)


def test_a_stream_reads_as_it_goes_and_compiles_one_step_once(translator):
    """Each item comes before the next step runs; on TensorFlow and JAX one
    compiled step per setting serves every position and every later call."""
    before = set(translator.__dict__.get("_generate_functions", {}))
    items = translator.stream(SOURCE[:1], 6, end_token_id=None)
    assert next(items).shape == (1,)
    assert len(list(items)) == 5
    made = set(translator.__dict__.get("_generate_functions", {})) - before
    again = list(translator.stream(SOURCE[:1], 6, end_token_id=None))
    assert len(again) == 6
    functions = translator.__dict__.get("_generate_functions", {})
    if keras.backend.backend() == "torch":  # PyTorch's steps run eagerly.
        assert not made
        return
    assert len(made) == 1 and set(functions) - before == made
    (key,) = made
    assert key[0] == "stream"
    if keras.backend.backend() == "tensorflow":
        assert functions[key].experimental_get_tracing_count() == 1


def test_the_checks_run_when_stream_is_called(translator):
    """As `generate`'s, before the first item is read."""
    for options, error, message in (
        ({"strategy": "beam"}, ValueError, r'^`strategy` must be "greedy" or "samp'),
        ({"temperature": float("nan")}, ValueError, r"^`temperature` must be"),
        ({"min_new_tokens": 11}, ValueError, r"^`min_new_tokens` must be"),
        ({"seed": -1}, ValueError, r"^`seed` must be"),
    ):
        with pytest.raises(error, match=message):
            translator.stream(SOURCE, 10, **options)
    with pytest.raises(ValueError, match="token ids"):
        translator.stream(SOURCE.astype("float32"), 10)


@pytest.mark.skipif(keras.backend.backend() != "torch", reason="PyTorch's autograd")
def test_the_steps_leave_no_gradient_mode_to_the_caller(translator):
    """Each step runs under `torch.no_grad()`, the caller's code between
    two items does not."""
    import torch

    for _ in translator.stream(SOURCE, 4):
        assert torch.is_grad_enabled()
