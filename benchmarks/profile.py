"""Where the time goes: the TensorFlow profiler over a training step or a
decoding call, summed per operation.

Run: `python benchmarks/profile.py training --implementation keras-seq --xla on`
or `python benchmarks/profile.py decoding --implementation keras-hub --batch 32`
(`KERAS_BACKEND=jax` for JAX's profiler).

Traces a few calls with `tf.profiler.experimental` (or `jax.profiler`) and
reads the trace (the XSpace protobuf that TensorFlow ships) directly, so no
TensorBoard plugin is needed. Prints the operations (XLA thunks when compiled, kernels
otherwise) that took the most time per call, summed over threads, and
their share of the total.
"""

import argparse
import collections
import glob
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras  # noqa: E402
from keras import ops  # noqa: E402

from benchmarks import config as config_lib  # noqa: E402
from benchmarks import decoding, peers_torch, training  # noqa: E402

# Events that only wrap others (executors, thread pools, Python).
_WRAPPERS = (
    "ExecutorState",
    "ThunkExecutor",
    "KernelAndDeviceFunc",
    "EagerKernelExecute",
    "EagerExecute",
    "EagerLocalExecute",
    "TFE_",
    "CpuExecutable",
    "BlockUntilReady",
    "ParallelFor",
    "SlinkyThreadPool",
    "FunctionRun",
    "multi_step_on_iterator",
    "__inference",
    "Iterator",
    "tf_data",
)


def read_trace(directory):
    """dict op name -> (total seconds, count) from a profiler log dir."""
    # TensorFlow's protobufs, which a JAX profile reads too; loaded on use.
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    totals = collections.defaultdict(lambda: [0.0, 0])
    for path in glob.glob(os.path.join(directory, "**", "*.xplane.pb"), recursive=True):
        space = xplane_pb2.XSpace()
        with open(path, "rb") as file:
            space.ParseFromString(file.read())
        for plane in space.planes:
            names = {k: v.name for k, v in plane.event_metadata.items()}
            for line in plane.lines:
                if line.name == "python":
                    continue
                for event in line.events:
                    name = names.get(event.metadata_id, "?")
                    if name.startswith(_WRAPPERS):
                        continue
                    totals[name][0] += event.duration_ps / 1e12
                    totals[name][1] += 1
    return totals


def profile(fn, calls=3):
    """Trace `calls` calls of `fn` (already warmed up), TF or JAX profiler."""
    with tempfile.TemporaryDirectory() as directory:
        if keras.backend.backend() == "jax":
            import jax  # Backend-specific.

            with jax.profiler.trace(directory):
                for _ in range(calls):
                    fn()
        else:
            import tensorflow as tf  # Backend-specific.

            tf.profiler.experimental.start(directory)
            for _ in range(calls):
                fn()
            tf.profiler.experimental.stop()
        totals = read_trace(directory)
    # A compiled loop's thunk spans the operations inside it.
    return {k: v for k, v in totals.items() if not k.startswith("while")}


# Parts of a step, recognised by the layer names TensorFlow puts into its
# kernels' names (XLA thunks carry no layer names, so profile with
# `--xla off` to group). The first match wins.
GROUPS = (
    ("loss", ("compile_loss", "loss")),
    ("output layer", ("logits",)),
    ("dropout", ("dropout", "stateless_random")),
    ("layer norm", ("layer_norm", "layernorm", "_norm")),
    ("attention", ("attention",)),
    ("feed-forward", ("feed_forward", "feedforward", "dense_proj", "intermediate")),
    ("embeddings", ("embedding",)),
    ("optimizer", ("adam", "Assign", "optimizer")),
)


def grouped(totals):
    """Sum op times by part of the model (`GROUPS`), the rest as "other"."""
    sums = collections.defaultdict(lambda: [0.0, 0])
    for name, (seconds, count) in totals.items():
        lowered = name.lower()
        group = next(
            (g for g, keys in GROUPS if any(k.lower() in lowered for k in keys)),
            "other",
        )
        sums[group][0] += seconds
        sums[group][1] += count
    return sums


def _short(name):
    # "StatefulPartitionedCall/translator/logits/MatMul:_MklMatMul" -> tail.
    return name if len(name) < 90 else "..." + name[-87:]


def summary(totals, calls, top=25):
    """Markdown table of the `top` operations, per call."""
    everything = sum(seconds for seconds, _ in totals.values()) or 1.0
    ranked = sorted(totals.items(), key=lambda item: -item[1][0])[:top]
    lines = ["| operation | ms per call | share |", "|---|---|---|"]
    for name, (seconds, _) in ranked:
        lines.append(
            f"| `{_short(name)}` | {1e3 * seconds / calls:.2f} "
            f"| {100 * seconds / everything:.1f}% |"
        )
    return "\n".join(lines)


def _training_fn(args, config):
    inputs, labels = config_lib.training_batch(config)
    if args.implementation == training.TORCH:
        _, train = peers_torch.make_trainer(config, inputs, labels)
        return train
    _, train = training.keras_trainer(
        args.implementation, config, inputs, labels, args.xla == "on"
    )
    return train


def _decoding_fn(args, config):
    models = {
        name: training.build_keras(name, config)
        for name in (training.OURS, "keras-hub", "keras.io recipe")
    }
    functions = decoding._keras_candidates(models, decoding.NEW_TOKENS, 4)
    fn = functions[(args.implementation, args.method)]
    source = ops.convert_to_tensor(config_lib.source_batch(config, args.batch))
    return lambda: ops.convert_to_numpy(fn(source))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("training", "decoding"))
    parser.add_argument("--implementation", default="keras-seq")
    parser.add_argument("--config", default="small")
    parser.add_argument("--xla", choices=("on", "off"), default="on")
    parser.add_argument("--method", default="cached greedy")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--group", action="store_true", help="sum by part of the model")
    args = parser.parse_args(argv)
    config = dict(config_lib.CONFIGS[args.config], steps=1)
    if args.what == "training":
        fn = _training_fn(args, config)
    else:
        fn = _decoding_fn(args, config)
    fn()
    fn()  # Warm-up: compilation, allocation.
    totals = profile(fn, args.calls)
    if args.group:
        totals = grouped(totals)
    print(summary(totals, args.calls, args.top))


if __name__ == "__main__":
    main()
