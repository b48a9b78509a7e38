"""Where and how a recipe trains: distribution strategy, precision, determinism.

The command line's `--strategy`, `--precision` and `--deterministic` land
here, so every recipe trains the same way under each of them:

- `none`: the default device.
- `mirrored`: `tf.distribute.MirroredStrategy`, one replica per local device
  (GPUs, or the CPU); each batch is split between the replicas and their
  gradients are summed.
- `multi-worker`: `tf.distribute.MultiWorkerMirroredStrategy`, one process per
  machine, the cluster read from the `TF_CONFIG` environment variable (see
  README, "Training on several machines").

On the JAX backend, `keras.distribution.DataParallel` plays the part of the
mirrored strategy; it is set globally and needs no scope.
"""

import contextlib

import keras

STRATEGIES = ("none", "mirrored", "multi-worker")
PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")


def make_strategy(name):
    """The `tf.distribute` strategy called `name`, or None for `"none"`.

    A multi-worker strategy must exist before TensorFlow runs any op, so
    call this first.
    """
    if name in (None, "none"):
        return None
    if name not in STRATEGIES:
        raise ValueError(f"`strategy` must be one of {STRATEGIES}; received {name!r}.")
    if keras.backend.backend() != "tensorflow":
        raise ValueError(
            f"`strategy={name!r}` needs the TensorFlow backend (KERAS_BACKEND="
            f"tensorflow); received backend {keras.backend.backend()!r}. On JAX, "
            "use keras.distribution.DataParallel."
        )
    import tensorflow as tf

    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    return tf.distribute.MultiWorkerMirroredStrategy()


def scope(strategy):
    """`strategy.scope()`, or a no-op context for no strategy."""
    return strategy.scope() if strategy is not None else contextlib.nullcontext()


def set_precision(precision):
    """Set Keras' global dtype policy (`mixed_float16` adds loss scaling)."""
    if precision not in PRECISIONS:
        raise ValueError(
            f"`precision` must be one of {PRECISIONS}; received {precision!r}."
        )
    keras.mixed_precision.set_global_policy(precision)


def make_deterministic(seed):
    """Seed every generator and make TensorFlow's ops deterministic.

    With this, the same command gives bit-identical weights, and a run
    killed and resumed (`checkpoint_callbacks`) ends where an uninterrupted
    one does.
    """
    keras.utils.set_random_seed(seed)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        tf.config.experimental.enable_op_determinism()
