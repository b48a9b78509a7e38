"""Training throughput: ours and the peers on the same batches.

Every Keras implementation trains through `model.fit` on a `tf.data`
dataset that repeats one in-memory batch (so no input pipeline can be the
bottleneck), with Adam(1e-4, 0.9, 0.98, 1e-9) and a padding-masked sparse
cross-entropy: ours with its own loss and label smoothing 0.1
(`keras_seq.losses`), the Keras peers with Keras' `ignore_class=0` loss.
PyTorch trains the same way in an eager loop. One timed repetition is
`config["steps"]` steps; the figures are target tokens per second (real
tokens, padding left out) and model FLOP/s (`config.training_flops`).
"""

import keras

from benchmarks import config as config_lib
from benchmarks import peers_keras, peers_torch, timing

OURS = "keras-seq"
KERAS_PEERS = ("keras-hub", "keras.io recipe")
TORCH = "torch.nn.Transformer"


def build_keras(name, config):
    """A freshly built Keras translator of implementation `name`."""
    keras.utils.set_random_seed(0)
    if name == OURS:
        import zoo

        return zoo.build_translator(
            config["preset"], tie_embeddings=False, **config_lib.model_kwargs(config)
        )
    if name == "keras-hub":
        return peers_keras.build_hub_translator(config)
    if name == "keras.io recipe":
        return peers_keras.build_recipe_translator(config)
    raise ValueError(f"Unknown implementation {name!r}.")


def _loss(name):
    if name == OURS:
        from keras_seq.losses import MaskedSparseCategoricalCrossentropy

        return MaskedSparseCategoricalCrossentropy(label_smoothing=0.1)
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)


def keras_trainer(name, config, inputs, labels, jit_compile):
    """A zero-argument function that runs `config["steps"]` fit steps."""
    import tensorflow as tf

    model = build_keras(name, config)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-4, beta_1=0.9, beta_2=0.98, epsilon=1e-9),
        loss=_loss(name),
        jit_compile=jit_compile,
    )
    dataset = tf.data.Dataset.from_tensors((inputs, labels)).repeat()

    def train():
        history = model.fit(
            dataset, epochs=1, steps_per_epoch=config["steps"], verbose=0
        )
        return history.history["loss"][-1]

    return model, train


def candidates(config, implementations, xla_modes, with_torch):
    """dict label -> (implementation, XLA flag, train function)."""
    inputs, labels = config_lib.training_batch(config)
    found = {}
    for name in implementations:
        for jit_compile in xla_modes:
            label = name if len(xla_modes) == 1 else f"{name}, XLA {jit_compile}"
            _, train = keras_trainer(name, config, inputs, labels, jit_compile)
            found[label] = (name, jit_compile, train)
    if with_torch:
        _, train = peers_torch.make_trainer(config, inputs, labels)
        found[TORCH] = (TORCH, None, train)
    return found


def measure(
    config,
    repeats,
    implementations=(OURS, *KERAS_PEERS),
    with_torch=True,
    xla="both",
):
    """Training figures of every implementation, timed round-robin.

    On TensorFlow each Keras implementation runs with XLA on and off
    (`xla="both"`; the peers get whichever helps them), or as `xla` says
    (`"on"`, `"off"`); on JAX everything is jitted.
    """
    backend = keras.backend.backend()
    xla_modes = {"both": (True, False), "on": (True,), "off": (False,)}[xla]
    if backend != "tensorflow":
        xla_modes = (True,)
    found = candidates(config, implementations, xla_modes, with_torch)
    medians = timing.interleaved(
        {label: entry[2] for label, entry in found.items()}, repeats, warmup=1
    )
    tokens = config_lib.target_tokens_per_step(config) * config["steps"]
    flops = config_lib.training_flops(config) * config["steps"]
    rows = {}
    for label, (name, jit_compile, _) in found.items():
        seconds = medians[label]["median"]
        rows[label] = {
            "implementation": name,
            "xla": jit_compile,
            "step_ms": 1e3 * seconds / config["steps"],
            "cpu_step_ms": 1e3 * medians[label]["cpu_median"] / config["steps"],
            "tokens_per_s": tokens / seconds,
            "flops_per_s": flops / seconds,
            "times": medians[label]["times"],
        }
    return rows
