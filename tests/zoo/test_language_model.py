"""Cached generation of the decoder-only language model."""

import keras
import numpy as np
import pytest

import zoo
from keras_seq.losses import MaskedSparseCategoricalCrossentropy
from keras_seq.testing import assert_all_close
from keras_seq.text import UNSAMPLABLE_IDS

END = 3


@pytest.fixture(scope="module")
def model():
    """A tiny model trained briefly on a repeating pattern, so that its
    greedy path is not degenerate."""
    keras.utils.set_random_seed(4)
    model = zoo.build_language_model("tiny", tie_embeddings=False)
    pattern = np.tile(np.arange(10, 40), 20)
    windows = np.stack([pattern[i : i + 17] for i in range(0, 400, 3)])
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=MaskedSparseCategoricalCrossentropy(),
    )
    model.fit(windows[:, :-1], windows[:, 1:], epochs=4, batch_size=32, verbose=0)
    return model


def _samplable(logits):
    """Logits with the ids the model never outputs at -inf (as generation
    masks them), as float64."""
    logits = np.array(logits, "float64")
    logits[..., list(UNSAMPLABLE_IDS)] = -np.inf
    return logits


def _full_recompute(model, prompt, steps):
    """Greedy decoding by one full forward pass per step, no cache; the
    tokens are padded to one length so every pass has one shape (one trace
    on JAX), and causal attention keeps the padding out of earlier logits.
    The special tokens are never chosen (`unsamplable_token_ids`)."""
    length = prompt.shape[1]
    tokens = np.zeros((prompt.shape[0], length + steps - 1), "int32")
    tokens[:, :length] = prompt
    step_logits = []
    for t in range(steps):
        logits = keras.ops.convert_to_numpy(model(tokens))[:, length - 1 + t]
        step_logits.append(logits)
        if t + 1 < steps:
            tokens[:, length + t] = _samplable(logits).argmax(-1)
    ids = np.stack([_samplable(logits).argmax(-1) for logits in step_logits], 1)
    return ids.astype("int32"), np.stack(step_logits, 1)


def test_cached_steps_equal_full_recompute(model):
    prompt = np.array([[10, 11, 12], [25, 26, 27]], "int32")
    expected, expected_logits = _full_recompute(model, prompt, 6)
    assert len(np.unique(expected)) > 2
    given, context, cache = model.start_decoding(prompt, 6, None)
    np.testing.assert_array_equal(given, prompt)
    assert context == ()
    assert isinstance(cache, tuple) and len(cache) == len(model.decoder_blocks)
    assert tuple(cache[0].shape) == (2, 2, 2, 9, 8)  # (B, 2, N, P + 6, H)
    tokens = np.concatenate([prompt, expected], 1)
    for index in range(8):
        step_ids = tokens[:, index : index + 1]
        logits, cache = model.decoding_step(step_ids, index, context, cache)
        if index >= 2:
            assert_all_close(logits, expected_logits[:, index - 2], atol=1e-4)


@pytest.mark.parametrize("tie", [False, True])
def test_generate_greedy_equals_full_recompute(model, tie):
    if tie:
        keras.utils.set_random_seed(1)
        model = zoo.build_language_model("tiny")  # Tied, untrained.
    prompt = np.array([[10, 11, 12], [25, 26, 27]], "int32")
    expected, _ = _full_recompute(model, prompt, 6)
    generated = keras.ops.convert_to_numpy(
        model.generate(prompt, max_new_tokens=6, end_token_id=None)
    )
    np.testing.assert_array_equal(generated, expected)


def test_generate_stops_at_end_and_samples_with_a_seed(model):
    prompt = np.array([[10, 11, 12]], "int32")
    free, _ = _full_recompute(model, prompt, 6)
    end = int(free[0, 2])
    stopped = keras.ops.convert_to_numpy(
        model.generate(prompt, max_new_tokens=6, end_token_id=end)
    )
    first = list(stopped[0]).index(end)
    assert first <= 2 and np.all(stopped[0, first + 1 :] == 0)
    # Top-k sampling with k = 1 is greedy decoding.
    top_1 = keras.ops.convert_to_numpy(
        model.generate(
            prompt, max_new_tokens=6, strategy="sample", top_k=1, end_token_id=None
        )
    )
    np.testing.assert_array_equal(top_1, free)


def test_generate_refuses_bad_input(model):
    with pytest.raises(ValueError, match="max_length"):
        model.generate(np.ones((1, 10), "int32"), max_new_tokens=40)
    with pytest.raises(ValueError, match="token_ids"):
        model.generate(np.ones((1, 3), "float32"))


@pytest.mark.parametrize("prompt_length", [1, 3])
def test_beam_search_width_one_and_scores(model, prompt_length):
    # A one-token prompt has no tokens before the beams split (it once
    # failed to compile under XLA on TensorFlow).
    prompt = np.array([[10, 11, 12], [25, 26, 27]], "int32")[:, -prompt_length:]
    greedy, _ = _full_recompute(model, prompt, 6)
    one = keras.ops.convert_to_numpy(
        model.generate(
            prompt, max_new_tokens=6, strategy="beam", beam_width=1, end_token_id=None
        )
    )
    np.testing.assert_array_equal(one, greedy)
    ids, scores = model.beam_search(
        prompt, 6, beam_width=3, num_return=3, length_penalty=0.0, end_token_id=None
    )
    ids, scores = keras.ops.convert_to_numpy(ids), keras.ops.convert_to_numpy(scores)
    for row in range(2):
        for rank in range(3):
            tokens = np.concatenate([prompt[row], ids[row, rank]])[None]
            logits = keras.ops.convert_to_numpy(model(tokens[:, :-1]))[0]
            # Renormalised over the tokens beam search may choose.
            logits = _samplable(logits)
            log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
            new = ids[row, rank]
            start = prompt_length - 1
            total = sum(log_probs[start + t, token] for t, token in enumerate(new))
            assert scores[row, rank] == pytest.approx(total, abs=1e-3)
    assert np.all(np.diff(scores, axis=1) <= 1e-6)
