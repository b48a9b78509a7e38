"""`benchmarks.training`: every Keras implementation's timed step trains."""

import pytest

from benchmarks import config, training


@pytest.mark.parametrize("name", ["keras-seq", "keras-hub", "keras.io recipe"])
def test_keras_trainer_runs_the_compiled_step_and_lowers_the_loss(name):
    tiny = dict(config.CONFIGS["tiny"], steps=3, dropout=0.0)
    inputs, labels = config.training_batch(tiny)
    model, train = training.keras_trainer(name, tiny, inputs, labels, False)
    losses = [train() for _ in range(4)]
    # 12 Adam steps at 1e-4 on one batch, no dropout: the loss falls every
    # repetition.
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert int(model.optimizer.iterations) == 12
