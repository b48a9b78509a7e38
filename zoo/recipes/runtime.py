"""Where and how a recipe trains: distribution strategy, precision, determinism.

The C library's allocator setting, which needs no TensorFlow, is in
`zoo.recipes.allocator`.

The command line's `--strategy`, `--precision` and `--deterministic` land
here, so every recipe trains the same way under each of them:

- `none`: the default device.
- `mirrored`: `tf.distribute.MirroredStrategy`, one replica per local device
  (GPUs, or the CPU); each batch is split between the replicas and their
  gradients are summed.
- `multi-worker`: `tf.distribute.MultiWorkerMirroredStrategy`, one process per
  machine, the cluster read from the `TF_CONFIG` environment variable (see
  docs/precision-and-distribution.md, "Several machines").

On the JAX backend, `keras.distribution.DataParallel` plays the part of the
mirrored strategy; it is set globally and needs no scope.
"""

import contextlib

import keras
import tensorflow as tf

from zoo.recipes.allocator import tune_allocator  # noqa: F401  (re-exported)
from zoo.recipes.settings import PRECISIONS, STRATEGIES  # noqa: F401


def make_strategy(name):
    """Makes the `tf.distribute` strategy called `name`.

    A multi-worker strategy must exist before TensorFlow runs any op, so
    call this first.

    Args:
        name: one of `STRATEGIES`, or None (the same as `"none"`).

    Returns:
        A `tf.distribute.Strategy`, or None for `"none"`.
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
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    _average_scalar_logs_across_workers()
    return strategy


def _average_scalar_logs_across_workers():
    """Let Keras 3 average scalar logs across workers.

    Keras' TensorFlow trainer averages every step's logs with
    `strategy.reduce("MEAN", value, axis=0)` under a multi-worker strategy,
    which fails on the scalar loss and metrics ("Invalid reduction dimension
    0 for input with 0 dimensions", tensorflow/tensorflow#72388), so no
    model trains. Scalars are averaged over replicas with `axis=None`
    instead; everything else goes to Keras' own function unchanged.
    """
    # Private and TensorFlow-only: loaded only when a multi-worker strategy
    # is made.
    from keras.src.backend.tensorflow import trainer

    keras_reduce = getattr(trainer.reduce_per_replica, "keras_reduce", None)
    keras_reduce = keras_reduce or trainer.reduce_per_replica

    def reduce_per_replica(values, strategy, reduction):
        if reduction not in ("auto", "mean") or not isinstance(
            strategy, tf.distribute.MultiWorkerMirroredStrategy
        ):
            return keras_reduce(values, strategy, reduction)

        def average(value):
            axis = None if value.shape.rank == 0 else 0
            return strategy.reduce("MEAN", value, axis=axis)

        return tf.nest.map_structure(average, values)

    reduce_per_replica.keras_reduce = keras_reduce
    trainer.reduce_per_replica = reduce_per_replica


def scope(strategy):
    """The context in which to build a model for `strategy`.

    Args:
        strategy: a `tf.distribute.Strategy` or None.

    Returns:
        `strategy.scope()`, or a no-op context for None.
    """
    return strategy.scope() if strategy is not None else contextlib.nullcontext()


def set_precision(precision):
    """Sets Keras' global dtype policy.

    Args:
        precision: one of `PRECISIONS`; `mixed_float16` adds loss scaling
            in the optimizer.
    """
    if precision not in PRECISIONS:
        raise ValueError(
            f"`precision` must be one of {PRECISIONS}; received {precision!r}."
        )
    keras.mixed_precision.set_global_policy(precision)


def make_deterministic(seed):
    """Seeds every generator and makes TensorFlow's ops deterministic.

    With this, the same command gives bit-identical weights, and a run
    killed and resumed (`checkpoint_callbacks`) ends where an uninterrupted
    one does.

    Args:
        seed: int, for Python, numpy and the backend.
    """
    keras.utils.set_random_seed(seed)
    if keras.backend.backend() == "tensorflow":
        tf.config.experimental.enable_op_determinism()


def build_for_strategy(model, strategy, dataset):
    """Builds the compiled metrics and loss from a real batch, under `strategy`.

    Under a `tf.distribute` strategy, Keras builds them before the first
    step from a batch averaged over the replicas (`strategy.reduce("MEAN")`),
    which turns integer token ids into floats that the models refuse.
    Building them here, from one batch of `dataset` with its own dtypes,
    leaves Keras nothing to build. Keras would still average a batch first,
    and a multi-worker strategy cannot average a dict of inputs, so that
    step, with nothing left for it to do, is skipped. No-op without a
    strategy.

    Args:
        model: a compiled `keras.Model`.
        strategy: a `tf.distribute.Strategy` or None.
        dataset: the training `tf.data.Dataset`.
    """
    if strategy is None:
        return
    batch = next(iter(dataset))
    # Private, and kept: the averaging to skip is Keras' own private step
    # (`_maybe_symbolic_build`, run whenever the model has a strategy), so
    # no public call avoids it; and `_symbolic_build` builds the model, the
    # compiled loss and metrics from symbolic tensors without running a
    # batch, which calling them in public would do (and count in the
    # metrics).
    with strategy.scope():
        model._symbolic_build(data_batch=batch)
    model._maybe_symbolic_build = _nothing_to_build


def _nothing_to_build(iterator=None, data_batch=None):
    return None


def for_workers(dataset, strategy, shard=True):
    """Sets how a multi-worker strategy splits `dataset` between workers.

    Training data (`shard=True`): each worker takes every n-th batch, after
    the batches are cut to a multiple of the n workers (a worker with one
    batch more would wait for the others forever). Evaluation data
    (`shard=False`): every worker reads every batch, so their metrics agree.

    Args:
        dataset: a batched `tf.data.Dataset`.
        strategy: a `tf.distribute.Strategy` or None.
        shard: bool, split the batches (training) or not (evaluation).

    Returns:
        The dataset to fit on; `dataset` itself without a multi-worker
        strategy.
    """
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return dataset
    resolver = strategy.cluster_resolver
    cluster = resolver.cluster_spec() if resolver else None
    workers = cluster.num_tasks("worker") if cluster and "worker" in cluster.jobs else 1
    # Sharded here, by batch, rather than by tf.data's auto-sharding, which
    # cannot see through the bucketing and lets every worker read it all.
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.OFF
    )
    batches = int(dataset.cardinality())
    if shard and workers > 1:
        if batches > 0:
            dataset = dataset.take(batches - batches % workers)
        dataset = dataset.shard(workers, resolver.task_id)
    return dataset.with_options(options)
