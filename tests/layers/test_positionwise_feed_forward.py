import numpy as np
import pytest

from keras_seq.layers import PositionwiseFeedForward
from keras_seq.testing import assert_all_close, run_layer_test

B, T, D, F = 2, 4, 6, 10


def _random(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def test_layer_harness():
    run_layer_test(
        PositionwiseFeedForward,
        init_kwargs={"ff_dim": F, "activation": "gelu", "dropout": 0.1},
        input_data=_random(B, T, D),
        expected_output_shape=(B, T, D),
        expected_num_trainable_weights=4,
        expected_num_params=2 * D * F + F + D,  # Eq. (7.32): 2 N1 p + N1 + p.
    )


def test_output_dim():
    layer = PositionwiseFeedForward(ff_dim=F, output_dim=3)
    assert layer(_random(B, T, D)).shape == (B, T, 3)


def test_matches_numpy_and_acts_per_position():
    layer = PositionwiseFeedForward(ff_dim=F)
    x = _random(B, T, D)
    out = np.asarray(layer(x))
    w1, b1, w2, b2 = (np.asarray(w) for w in layer.get_weights())
    expected = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    assert_all_close(out, expected, atol=1e-5)
    # Each position is transformed alone: permuting positions permutes outputs.
    permuted = np.asarray(layer(x[:, ::-1]))
    assert_all_close(permuted, out[:, ::-1], atol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match="`ff_dim`"):
        PositionwiseFeedForward(ff_dim=0)
    with pytest.raises(ValueError, match="`dropout`"):
        PositionwiseFeedForward(ff_dim=4, dropout=1.0)
