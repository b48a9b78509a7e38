"""Training the translator on PyTorch: eager `fit` with no host read of the
token ids per step, `jit_compile` refused, mixed bfloat16, and a run
interrupted mid-epoch that resumes from its backup to the weights of an
uninterrupted run.

TensorFlow and JAX trace their training steps; their resumption and mixed
precision are tested in tests/zoo/recipes/test_resume.py and
tests/zoo/test_precision.py.
"""

import csv

import keras
import numpy as np
import pytest

import zoo
from keras_seq.callbacks import checkpoint_callbacks
from zoo.recipes import runtime
from zoo.recipes.translator import compile_translator

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="PyTorch's eager training steps; TensorFlow and JAX trace theirs",
)

VOCABULARY = 24
LENGTH = 10
SIZE = {"model_dim": 32, "ff_dim": 64, "num_heads": 2}


def _copy_task(rows, seed=0):
    """Copy a random sequence; lengths vary so that every batch pads."""
    rng = np.random.default_rng(seed)
    sources = np.zeros((rows, LENGTH), "int32")
    targets = np.zeros((rows, LENGTH + 1), "int32")
    for row in range(rows):
        n = rng.integers(2, LENGTH - 1)
        tokens = rng.integers(5, VOCABULARY, n)
        sources[row, :n] = tokens
        targets[row, : n + 2] = [1, *tokens, 2]  # [START] copy [END]
    features = {"encoder_token_ids": sources, "decoder_token_ids": targets[:, :-1]}
    return features, targets[:, 1:]


def _translator(seed=0, warmup_steps=20, **overrides):
    keras.utils.set_random_seed(seed)
    model = zoo.build_translator(
        "tiny", vocabulary_size=VOCABULARY, max_length=LENGTH, **SIZE, **overrides
    )
    return compile_translator(model, warmup_steps, learning_rate_scale=0.5)


class _HostReads:
    """Counts reads of integer and boolean torch tensors with a shape on the
    host (each epoch's DataLoader draws its scalar seed with `.item()`)."""

    METHODS = ("__array__", "numpy", "item", "tolist", "__int__", "__index__")

    def __init__(self, monkeypatch):
        import torch

        self.count = 0
        for name in self.METHODS + ("__bool__",):
            original = getattr(torch.Tensor, name)
            monkeypatch.setattr(torch.Tensor, name, self._counting(original))

    def _counting(self, original):
        def read(tensor, *args, **kwargs):
            if not tensor.dtype.is_floating_point and tensor.dim():
                self.count += 1
            return original(tensor, *args, **kwargs)

        return read


def test_fit_is_eager_and_reads_no_ids_on_the_host(monkeypatch):
    import tensorflow as tf

    model = _translator()
    assert model.jit_compile is False, "`auto` trains eagerly on PyTorch"
    features, labels = _copy_task(64)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(16)
    reads = _HostReads(monkeypatch)
    history = model.fit(dataset, validation_data=dataset, epochs=2, verbose=0)
    monkeypatch.undo()
    # 4 training and 4 validation batches a epoch: any read per step shows.
    assert reads.count == 0
    assert np.all(np.isfinite(history.history["loss"]))
    # An id past the vocabulary still fails, in the pipeline, before a step.
    features["encoder_token_ids"][0, 0] = VOCABULARY
    bad = tf.data.Dataset.from_tensor_slices((features, labels)).batch(16)
    with pytest.raises(tf.errors.InvalidArgumentError, match="encoder_token_ids"):
        model.fit(bad, epochs=1, verbose=0)


def test_jit_compile_is_refused_in_one_line():
    model = zoo.build_translator("tiny", vocabulary_size=VOCABULARY, max_length=8)
    with pytest.raises(ValueError) as refused:
        compile_translator(model, jit_compile=True)
    message = str(refused.value)
    assert "\n" not in message and "jit_compile=True" in message
    assert "torch" in message.lower() and "tensorflow" in message.lower()
    compile_translator(model, jit_compile=False)
    assert model.jit_compile is False
    # A file saved where "auto" meant XLA loads and trains eagerly here.
    config = model.get_compile_config()
    model.compile_from_config({**config, "jit_compile": True})
    assert model.compiled and model.jit_compile is False


def test_mixed_bfloat16_loss_is_finite_and_falls():
    runtime.set_precision("mixed_bfloat16")
    model = _translator(warmup_steps=8, dropout=0.0)
    assert model.compute_dtype == "bfloat16"
    assert all(w.dtype == "float32" for w in model.trainable_weights)
    features, labels = _copy_task(16 * 8)
    history = model.fit(features, labels, batch_size=16, epochs=5, verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses)), losses
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] < 0.9 * losses[0], losses


class _Interrupt(keras.callbacks.Callback):
    """Raises after `batches` training batches, as a kill would stop a run."""

    def __init__(self, batches):
        super().__init__()
        self.batches = batches
        self.seen = 0

    def on_train_batch_end(self, batch, logs=None):
        self.seen += 1
        if self.seen == self.batches:
            raise KeyboardInterrupt("interrupted mid-epoch")


def _fit(output_dir, epochs, *callbacks):
    output_dir.mkdir(exist_ok=True)
    keras.utils.clear_session()
    model = _translator()
    features, labels = _copy_task(48)
    return model, model.fit(
        features, labels, batch_size=16, epochs=epochs, shuffle=False, verbose=0,
        callbacks=[*callbacks, *checkpoint_callbacks(str(output_dir))],
    )  # fmt: skip


def _losses(output_dir):
    with open(output_dir / "history.csv", encoding="utf-8") as file:
        return [(row["epoch"], row["loss"]) for row in csv.DictReader(file)]


def test_backup_and_restore_resumes_to_the_uninterrupted_weights(tmp_path):
    straight, _ = _fit(tmp_path / "straight", 3)
    # 3 batches a epoch: stopped in the middle of the second epoch.
    with pytest.raises(KeyboardInterrupt):
        _fit(tmp_path / "resumed", 3, _Interrupt(5))
    assert (tmp_path / "resumed" / "backup").is_dir()
    resumed, history = _fit(tmp_path / "resumed", 3)
    assert len(history.history["loss"]) == 2, "epochs 2 and 3 only"
    assert not (tmp_path / "resumed" / "backup").exists()
    assert int(resumed.optimizer.iterations) == int(straight.optimizer.iterations)
    for a, b in zip(straight.get_weights(), resumed.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert _losses(tmp_path / "resumed") == _losses(tmp_path / "straight")
