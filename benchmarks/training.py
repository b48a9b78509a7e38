"""Training throughput: ours and the peers on the same batches.

Every Keras implementation runs the compiled training step that
`model.fit` runs, called through `model.train_on_batch` on one batch held
as backend tensors (so no input pipeline can be the bottleneck), with
Adam(1e-4, 0.9, 0.98, 1e-9) and a padding-masked sparse cross-entropy:
ours with its own loss and label smoothing 0.1 (`keras_seq.losses`), the
Keras peers with Keras' `ignore_class=0` loss. PyTorch trains the same way
in an eager loop on tensors it holds.

Each configuration's `policy` (`"float32"`, or `"mixed_bfloat16"` for
the accelerator's tables) applies to every implementation: the Keras
models are built under it, PyTorch runs its forward pass and loss under
bfloat16 autocast. Every row keeps the last step's loss, and a NaN loss
is reported as such.

Not one short `model.fit` per repetition: on the 2-core AMD machine a
`fit` call of a few steps sometimes ended on a multiple of 512 ms of wall
clock (5 steps of about 475 ms of work took 2.56 s, on JAX 5.11 s) while
its processor time did not change, a wait at the start or end of the call
(its `tf.data` iterator) that `train_on_batch` does not have.

One timed repetition is `config["steps"]` steps; the figures are target
tokens per second (real tokens, padding left out) and model FLOP/s
(`config.training_flops`).

Every implementation trains on the configuration's batch, padded to its
fixed length as the peers' recipes pad. Ours also trains on the batch its
own pipeline makes of the same pairs (`keras_seq.text` pads each batch to
its length bucket, 24 columns instead of 32 for `small`), in a row of its
own: same real tokens, fewer computed columns, and FLOPs counted over the
columns it computes.
"""

import math

import keras

from benchmarks import config as config_lib
from benchmarks import peers_keras, peers_torch, timing

OURS = "keras-seq"
# Ours again, fed as its own pipeline feeds it: each batch padded to its
# length bucket, not to the configuration's fixed length.
BUCKETED = "bucketed"
KERAS_PEERS = ("keras-hub", "keras.io recipe")
TORCH = "torch.nn.Transformer"


def build_keras(name, config):
    """A freshly built Keras translator of implementation `name`."""
    keras.utils.set_random_seed(0)
    if name == OURS:
        # Lazy: memory.py's baseline leaves out each implementation's library.
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
        from keras_seq.losses import MaskedSparseCategoricalCrossentropy  # As zoo.

        return MaskedSparseCategoricalCrossentropy(label_smoothing=0.1)
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)


def keras_trainer(name, config, inputs, labels, jit_compile):
    """A zero-argument function that runs `config["steps"]` training steps.

    The model is built under the configuration's dtype `policy`
    (`"float32"` by default, or `"mixed_bfloat16"`); the function returns
    the last step's loss as a float, NaN included.
    """
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(config.get("policy", "float32"))
    try:
        model = build_keras(name, config)
    finally:
        keras.config.set_dtype_policy(previous)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-4, beta_1=0.9, beta_2=0.98, epsilon=1e-9),
        loss=_loss(name),
        jit_compile=jit_compile,
    )
    inputs = {key: keras.ops.convert_to_tensor(value) for key, value in inputs.items()}
    labels = keras.ops.convert_to_tensor(labels)

    def train():
        for _ in range(config["steps"]):
            logs = model.train_on_batch(inputs, labels, return_dict=True)
        return float(logs["loss"])

    return model, train


def candidates(config, implementations, xla_modes, with_torch):
    """dict label -> (implementation, XLA flag, batch length, train function).

    Every implementation trains on the configuration's fixed-length batch;
    ours also on the same batch cut to its length bucket
    (`config.bucketed_training_batch`), when that is shorter.
    """
    inputs, labels = config_lib.training_batch(config)
    length = config["length"]
    bucket = config_lib.bucket_length(config)
    feeds = [(length, inputs, labels)]
    if bucket < length:
        feeds.append((bucket, *config_lib.bucketed_training_batch(config)))
    found = {}
    for name in implementations:
        for jit_compile in xla_modes:
            for n, x, y in feeds if name == OURS else feeds[:1]:
                label = name if len(xla_modes) == 1 else f"{name}, XLA {jit_compile}"
                label += f", {BUCKETED}" if n < length else ""
                _, train = keras_trainer(name, config, x, y, jit_compile)
                found[label] = (name, jit_compile, n, train)
    if with_torch:
        _, train = peers_torch.make_trainer(config, inputs, labels)
        found[TORCH] = (TORCH, None, length, train)
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
    (`"on"`, `"off"`); on JAX everything is jitted; on PyTorch every
    Keras model runs eagerly, as Keras runs PyTorch by default
    (`jit_compile=True` there is `torch.compile`, which recompiled Keras'
    layer hooks past its limit on every step).

    An implementation whose first step raises is not timed: its row is
    `{"implementation": ..., "failed": "Error: message"}`.
    """
    backend = keras.backend.backend()
    xla_modes = {"both": (True, False), "on": (True,), "off": (False,)}[xla]
    if backend == "jax":
        xla_modes = (True,)
    elif backend == "torch":
        xla_modes = (False,)
    found, failed = {}, {}
    for label, entry in candidates(
        config, implementations, xla_modes, with_torch
    ).items():
        message = timing.first_call_fails(entry[3])  # The warm-up call.
        if message:
            failed[label] = {"implementation": entry[0], "failed": message}
        else:
            found[label] = entry
    losses = {}

    def keeping_loss(label, train):
        def run():
            losses[label] = train()

        return run

    medians = timing.interleaved(
        {label: keeping_loss(label, entry[3]) for label, entry in found.items()},
        repeats,
        warmup=0,
    )
    tokens = config_lib.target_tokens_per_step(config) * config["steps"]
    rows = {}
    for label, (name, jit_compile, length, _) in found.items():
        seconds = medians[label]["median"]
        flops = config_lib.training_flops(config, length) * config["steps"]
        rows[label] = {
            "implementation": name,
            "xla": jit_compile,
            "length": length,
            "step_ms": 1e3 * seconds / config["steps"],
            "cpu_step_ms": 1e3 * medians[label]["cpu_median"] / config["steps"],
            "tokens_per_s": tokens / seconds,
            "flops_per_s": flops / seconds,
            "times": medians[label]["times"],
            # The last step's loss: a NaN means the step's speed is not a
            # training speed, and the tables say so.
            "loss": _json_float(losses[label]),
            "loss_is_nan": math.isnan(losses[label]),
            "policy": config.get("policy", "float32"),
        }
    rows.update(failed)
    return rows


def _json_float(value):
    """`value`, or None for NaN and infinities, which JSON does not have."""
    return value if math.isfinite(value) else None
