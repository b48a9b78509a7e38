"""`RNNLanguageModel` generates: its cached step (the recurrent states) is
the full pass unrolled, on every backend."""

import numpy as np
import pytest
from keras import ops

import zoo
from keras_seq.text import UNSAMPLABLE_IDS

PROMPTS = np.array([[5, 7, 9], [3, 4, 2]], "int32")


@pytest.mark.parametrize("cell", ["lstm", "gru", "simple"])
def test_cached_steps_equal_the_full_pass(cell):
    model = zoo.build_rnn_language_model("tiny", cell=cell)
    full = np.asarray(model(PROMPTS))  # (B, T, V)
    given, context, cache = model.start_decoding(PROMPTS, 4, None)
    for index in range(PROMPTS.shape[1]):
        logits, cache = model.decoding_step(
            ops.convert_to_tensor(PROMPTS[:, index : index + 1]), index, context, cache
        )
        np.testing.assert_allclose(
            np.asarray(logits), full[:, index], rtol=1e-5, atol=1e-5
        )


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_greedy_ids_are_the_full_pass_argmax(cell):
    model = zoo.build_rnn_language_model("tiny", cell=cell)
    new = np.asarray(model.generate(PROMPTS, max_new_tokens=5, end_token_id=None))
    sequence = PROMPTS
    for _ in range(5):
        logits = np.array(model(sequence))[:, -1]  # (B, V)
        # Generation never picks a special token (id 0 included, which the
        # full pass would read as padding).
        logits[:, list(UNSAMPLABLE_IDS)] = -np.inf
        sequence = np.concatenate([sequence, logits.argmax(-1)[:, None]], 1)
    assert new.tolist() == sequence[:, PROMPTS.shape[1] :].tolist()
    beams = model.generate(
        PROMPTS, max_new_tokens=4, strategy="beam", beam_width=3, end_token_id=None
    )
    assert tuple(ops.shape(beams)) == (2, 4)


def test_a_bidirectional_model_refuses_to_generate():
    model = zoo.build_rnn_language_model("tiny", bidirectional=True)
    with pytest.raises(ValueError, match="needs a causal model"):
        model.generate(PROMPTS, max_new_tokens=2)
