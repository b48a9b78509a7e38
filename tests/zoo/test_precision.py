"""The translator trains under mixed precision.

A few hundred steps of the training recipe (smoothed masked loss, warm-up
Adam) on a toy task, from the same initial weights, under `float32`,
`mixed_float16` (with dynamic loss scaling) and `mixed_bfloat16`: no loss is
NaN or inf, and the mixed runs track the float32 run.
"""

import keras
import numpy as np
import pytest

import zoo
from zoo.recipes.translator import compile_translator

STEPS = 300
BATCH = 16
LENGTH = 12
VOCABULARY = 24
SIZE = {"model_dim": 32, "ff_dim": 64, "num_heads": 2, "dropout": 0.0}


@pytest.fixture
def restore_policy():
    yield
    keras.mixed_precision.set_global_policy("float32")


def _batches(seed=0):
    """Copy a random sequence; lengths vary so that every batch pads."""
    rng = np.random.default_rng(seed)
    sources = np.zeros((STEPS * BATCH, LENGTH), "int32")
    targets = np.zeros((STEPS * BATCH, LENGTH + 1), "int32")
    for row in range(len(sources)):
        n = rng.integers(2, LENGTH)
        tokens = rng.integers(4, VOCABULARY, n)
        sources[row, :n] = tokens
        targets[row, : n + 2] = [1, *tokens, 2]  # [START] copy [END]
    features = {"encoder_token_ids": sources, "decoder_token_ids": targets[:, :-1]}
    return features, targets[:, 1:]


def _train(policy, initial_weights):
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(0)
    model = zoo.build_translator(
        "tiny", vocabulary_size=VOCABULARY, max_length=LENGTH, **SIZE
    )
    model.set_weights(initial_weights)
    compile_translator(model, warmup_steps=60, learning_rate_scale=0.3)
    features, labels = _batches()
    losses = []
    for step in range(STEPS):
        batch = slice(step * BATCH, (step + 1) * BATCH)
        inputs = {name: ids[batch] for name, ids in features.items()}
        loss = model.train_on_batch(inputs, labels[batch], return_dict=True)["loss"]
        losses.append(float(loss))
    return model, np.array(losses)


def _initial_weights():
    keras.utils.set_random_seed(0)
    model = zoo.build_translator(
        "tiny", vocabulary_size=VOCABULARY, max_length=LENGTH, **SIZE
    )
    return model.get_weights()


@pytest.mark.slow
@pytest.mark.skipif(
    keras.backend.backend() == "torch",
    reason="PyTorch's CPU float16 and bfloat16 kernels make these 900 eager steps "
    "take about 15 minutes; tests/zoo/test_torch_training.py trains bfloat16 there",
)
def test_mixed_precision_training_tracks_float32(restore_policy):
    weights = _initial_weights()
    _, reference = _train("float32", weights)
    assert np.all(np.isfinite(reference))
    assert reference[-20:].mean() < 0.75 * reference[:5].mean(), "float32 learns"
    for policy, tolerance in (("mixed_float16", 0.1), ("mixed_bfloat16", 0.1)):
        model, losses = _train(policy, weights)
        assert model.compute_dtype == policy.split("_")[1]
        assert all(w.dtype == "float32" for w in model.trainable_weights)
        if policy == "mixed_float16":
            assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
        assert np.all(np.isfinite(losses)), f"{policy}: a NaN or inf loss"
        # The running mean of the loss follows the float32 run.
        window = 20
        ours = np.convolve(losses, np.ones(window) / window, "valid")
        theirs = np.convolve(reference, np.ones(window) / window, "valid")
        gap = np.max(np.abs(ours - theirs) / theirs)
        print(
            f"{policy}: loss {losses[:5].mean():.3f} -> "
            f"{losses[-20:].mean():.3f}; largest gap to float32 {gap:.1%}"
        )
        assert gap < tolerance, f"{policy}: loss strays {gap:.1%} from float32"


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_fully_padded_rows_stay_finite(policy, restore_policy):
    """A source of only padding leaves cross attention nothing to attend to:
    the masked softmax must give zeros, not NaN, in half precision."""
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(0)
    model = zoo.build_translator("tiny", vocabulary_size=VOCABULARY, max_length=8)
    sources = np.array([[5, 6, 7, 0, 0, 0], [0, 0, 0, 0, 0, 0]], "int32")
    targets = np.array([[1, 9, 10, 0], [1, 0, 0, 0]], "int32")
    logits = keras.ops.convert_to_numpy(
        model({"encoder_token_ids": sources, "decoder_token_ids": targets})
    ).astype("float32")
    assert np.all(np.isfinite(logits))
