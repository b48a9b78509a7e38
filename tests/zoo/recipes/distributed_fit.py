"""Train the tiny translator a few steps, alone or distributed; save weights.

Run in a fresh process by `test_distribution.py` (devices are configured
before a backend starts):

    python -m tests.zoo.recipes.distributed_fit {single,mirrored,data-parallel} OUT

`mirrored` splits every batch between two logical CPU devices with
`tf.distribute.MirroredStrategy`; `data-parallel` between two JAX host
devices with `keras.distribution.DataParallel`; `single` trains on one
device of the backend in `KERAS_BACKEND`. Every sentence has the same
length, so each replica's token-averaged loss is the global average and the
runs must reach the same weights.
"""

import os
import sys

STEPS = 6
BATCH = 16
LENGTH = 10
VOCABULARY = 30


def _configure(mode):
    if mode == "data-parallel":
        os.environ["KERAS_BACKEND"] = "jax"
        flags = os.environ.get("XLA_FLAGS", "")
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count=2"
        return None
    if os.environ.setdefault("KERAS_BACKEND", "tensorflow") != "tensorflow":
        return None
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
    if mode == "mirrored":
        return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    return None


def _data():
    import numpy as np

    rng = np.random.default_rng(0)
    sources = rng.integers(4, VOCABULARY, (STEPS * BATCH, LENGTH)).astype("int32")
    targets = np.concatenate(
        [np.ones((len(sources), 1), "int32"), sources[:, ::-1]], axis=1
    )
    features = {"encoder_token_ids": sources, "decoder_token_ids": targets[:, :-1]}
    return features, targets[:, 1:]


def main(mode, output):
    strategy = _configure(mode)
    import keras
    import numpy as np

    import zoo
    from keras_seq.losses import MaskedSparseCategoricalCrossentropy
    from keras_seq.metrics import MaskedAccuracy
    from zoo.recipes import runtime

    if mode == "data-parallel":
        import jax

        assert len(jax.devices()) == 2, jax.devices()
        keras.distribution.set_distribution(
            keras.distribution.DataParallel(devices=jax.devices())
        )
    keras.utils.set_random_seed(0)
    with runtime.scope(strategy):
        model = zoo.build_translator(
            "tiny", vocabulary_size=VOCABULARY, max_length=LENGTH + 2, dropout=0.0
        )
        # Plain SGD: Adam divides by the gradients' magnitude, so it would
        # turn the rounding noise of near-zero gradients (summed in another
        # order across replicas) into whole steps.
        model.compile(
            optimizer=keras.optimizers.SGD(0.5),
            loss=MaskedSparseCategoricalCrossentropy(label_smoothing=0.1),
            metrics=[MaskedAccuracy()],
        )
    features, labels = _data()
    if mode == "data-parallel":
        data = {"x": features, "y": labels, "batch_size": BATCH}
    else:
        import tensorflow as tf

        dataset = tf.data.Dataset.from_tensor_slices((features, labels))
        data = {"x": dataset.batch(BATCH)}
        runtime.build_for_strategy(model, strategy, data["x"])
    history = model.fit(**data, epochs=1, shuffle=False, verbose=0)
    replicas = strategy.num_replicas_in_sync if strategy is not None else 1
    if mode == "data-parallel":
        replicas = len(keras.distribution.distribution().device_mesh.devices)
    np.savez(
        output,
        replicas=replicas,
        loss=history.history["loss"][-1],
        **{f"weight_{i}": np.asarray(w) for i, w in enumerate(model.get_weights())},
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
