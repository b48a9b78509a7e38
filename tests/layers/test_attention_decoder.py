import numpy as np
import pytest
from keras import ops

from keras_seq.layers import AttentionDecoder
from keras_seq.testing import assert_all_close, run_layer_test

B, T, S, E, H, C = 2, 4, 5, 3, 8, 6


def _random(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def _inputs():
    return _random(B, T, E), _random(B, S, C, seed=1), _random(B, H, seed=2)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_layer_harness(cell):
    inputs, encoder_outputs, state = _inputs()
    run_layer_test(
        AttentionDecoder,
        init_kwargs={"units": H, "cell": cell, "score": "general"},
        input_data={
            "inputs": inputs,
            "encoder_outputs": encoder_outputs,
            "initial_state": state,
        },
        expected_output_shape=(B, T, H + C),
        run_precision_checks=False,
    )


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_steps_equal_the_scanned_call(cell):
    """Eq. (7.22) one step at a time gives the outputs of the whole loop."""
    layer = AttentionDecoder(H, cell=cell, score="additive")
    inputs, encoder_outputs, hidden = _inputs()
    mask = np.arange(S)[None] < np.array([[S], [3]])
    outputs, weights = layer(
        inputs,
        encoder_outputs,
        hidden,
        encoder_outputs_mask=mask,
        return_attention_weights=True,
    )
    state = layer.get_initial_state(ops.convert_to_tensor(hidden))
    for t in range(T):
        state, output, step_weights = layer.step(
            state, inputs[:, t], encoder_outputs, mask
        )
        assert_all_close(output, np.asarray(outputs)[:, t], atol=1e-5)
        assert_all_close(step_weights, np.asarray(weights)[:, t], atol=1e-6)
    weights = np.asarray(weights)
    assert np.all(weights[1, :, 3:] == 0)  # Padded source positions.
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)


def test_errors_and_config():
    with pytest.raises(ValueError, match="`cell`"):
        AttentionDecoder(8, cell="simple")
    with pytest.raises(ValueError, match="`score`"):
        AttentionDecoder(8, score="cosine")
    with pytest.raises(ValueError, match="`units`"):
        AttentionDecoder(0)
    with pytest.raises(ValueError, match="`attention_units`"):
        AttentionDecoder(8, attention_units=0)
    layer = AttentionDecoder(8, cell="lstm", score="general", attention_units=4)
    revived = AttentionDecoder.from_config(layer.get_config())
    assert revived.get_config() == layer.get_config()
    with pytest.raises(ValueError, match=r"`units` \(8\) must equal"):
        AttentionDecoder(8, score="dot")(
            np.zeros((2, 3, 4), "float32"),
            np.zeros((2, 5, 6), "float32"),
            np.zeros((2, 8), "float32"),
        )
