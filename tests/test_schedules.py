"""Tests for keras_seq.schedules: the warm-up of Vaswani et al. (2017)."""

import keras
import numpy as np
import pytest

from keras_seq.schedules import InverseSquareRootWarmup


def _paper_rate(step, model_dim, warmup_steps, scale=1.0):
    """Eq. (3) of the paper, whose steps count from 1."""
    return scale * model_dim**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


@pytest.mark.parametrize("keras_step", [0, 1, 99, 1999, 3998, 3999, 4000, 15999, 1e5])
def test_golden_values(keras_step):
    schedule = InverseSquareRootWarmup(model_dim=512, warmup_steps=4000)
    expected = _paper_rate(keras_step + 1, 512, 4000)  # Keras counts from 0.
    assert float(schedule(keras_step)) == pytest.approx(expected, rel=1e-6)


def test_known_numbers():
    schedule = InverseSquareRootWarmup(model_dim=512, warmup_steps=4000)
    peak = 512**-0.5 * 4000**-0.5  # 6.9877e-4
    assert float(schedule(0)) == pytest.approx(peak / 4000, rel=1e-6)
    assert float(schedule(1999)) == pytest.approx(peak / 2, rel=1e-6)  # Linear.
    assert float(schedule(15999)) == pytest.approx(peak / 2, rel=1e-6)  # 1/sqrt.
    assert float(schedule(3999)) == pytest.approx(6.987712e-4, rel=1e-6)


def test_peak_at_warmup():
    schedule = InverseSquareRootWarmup(model_dim=128, warmup_steps=100, scale=2.0)
    rates = np.array([float(schedule(step)) for step in range(400)])
    assert int(np.argmax(rates)) == 99  # The paper's step 100.
    assert rates[99] == pytest.approx(schedule.peak_learning_rate, rel=1e-6)
    assert schedule.peak_learning_rate == pytest.approx(2.0 / (128 * 100) ** 0.5)
    assert np.all(np.diff(rates[:100]) > 0) and np.all(np.diff(rates[99:]) < 0)


def test_accepts_a_tensor_step():
    schedule = InverseSquareRootWarmup(model_dim=64, warmup_steps=10)
    step = keras.ops.convert_to_tensor(9, "int64")
    assert float(schedule(step)) == pytest.approx(_paper_rate(10, 64, 10), rel=1e-6)


def test_config_round_trip():
    schedule = InverseSquareRootWarmup(model_dim=128, warmup_steps=100, scale=2.0)
    config = schedule.get_config()
    assert config == {"model_dim": 128, "warmup_steps": 100, "scale": 2.0}
    revived = keras.optimizers.schedules.deserialize(
        keras.optimizers.schedules.serialize(schedule)
    )
    assert isinstance(revived, InverseSquareRootWarmup)
    assert float(revived(57)) == float(schedule(57))


def test_serializes_inside_an_optimizer():
    schedule = InverseSquareRootWarmup(model_dim=128, warmup_steps=100, scale=2.0)
    optimizer = keras.optimizers.Adam(schedule, beta_1=0.9, beta_2=0.98, epsilon=1e-9)
    revived = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert isinstance(revived._learning_rate, InverseSquareRootWarmup)
    assert revived.get_config()["learning_rate"]["config"] == schedule.get_config()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"model_dim": 0}, r"`model_dim` must be a positive integer; received 0"),
        ({"model_dim": 64.0}, r"`model_dim` must be a positive integer"),
        ({"warmup_steps": 0}, r"`warmup_steps` must be a positive integer; received 0"),
        ({"warmup_steps": -5}, r"`warmup_steps`"),
        ({"warmup_steps": 1.5}, r"`warmup_steps`"),
        ({"warmup_steps": True}, r"`warmup_steps`"),
    ],
)
def test_refuses_bad_arguments(kwargs, message):
    arguments = {"model_dim": 64, "warmup_steps": 10, **kwargs}
    with pytest.raises(ValueError, match=message):
        InverseSquareRootWarmup(**arguments)
