"""Peak memory of one implementation, measured in a process of its own.

Run: `KERAS_BACKEND=jax python -m benchmarks.memory --implementation keras-hub`.

A process's peak resident set size (`ru_maxrss`) only grows, so each
implementation gets a fresh process: it imports its framework (the
baseline), builds the model, trains `config["steps"] + 1` steps and then
decodes one batch of 32 greedily (cached where the implementation has a
cache). Prints one JSON line: the resident size after the imports and the
peaks after training and after decoding, in MiB. The Keras processes never
import PyTorch, and the PyTorch one never imports TensorFlow or JAX.
"""

import argparse
import json
import os
import resource
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import config as config_lib  # noqa: E402

TORCH = "torch.nn.Transformer"


def _current_mib():
    with open("/proc/self/statm") as file:
        pages = int(file.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _run_torch(config, inputs, labels, source):
    # Each implementation's libraries load here, after nothing but the
    # standard library, so the baseline is its own.
    import torch  # noqa: F401

    from benchmarks import peers_torch

    baseline = _current_mib()
    model, train = peers_torch.make_trainer(config, inputs, labels)
    train()
    trained = _peak_mib()
    peers_torch.greedy(model, source, 32)
    return baseline, trained


def _run_keras(name, config, inputs, labels, source):
    # As in _run_torch: imported here, so that the baseline is its own.
    import keras
    import tensorflow  # noqa: F401  tf.data feeds every Keras backend here.

    from benchmarks import decoding, peers_keras, training

    baseline = _current_mib()
    # Compiled as the speed tables train it: XLA, or eager on PyTorch.
    jit_compile = keras.backend.backend() != "torch"
    model, train = training.keras_trainer(name, config, inputs, labels, jit_compile)
    train()
    train()
    trained = _peak_mib()
    tensor = keras.ops.convert_to_tensor(source)
    if name == training.OURS:
        model.generate(tensor, max_new_tokens=32, end_token_id=-1)
    elif name == "keras-hub":
        fn = decoding._compiled(lambda s: peers_keras.hub_greedy(model, s, 32), model)
        keras.ops.convert_to_numpy(fn(tensor))
    else:
        fn = decoding._compiled(
            lambda s: peers_keras.recompute_greedy(
                lambda x: peers_keras.recipe_encode(model, x),
                lambda t, e, m: peers_keras.recipe_decode(model, t, e, m),
                s,
                32,
            ),
            model,
        )
        keras.ops.convert_to_numpy(fn(tensor))
    return baseline, trained


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--implementation", required=True)
    parser.add_argument("--config", default="small")
    args = parser.parse_args(argv)
    config = config_lib.CONFIGS[args.config]
    inputs, labels = config_lib.training_batch(config)
    source = config_lib.source_batch(config, 32, seed=32)
    if args.implementation == TORCH:
        baseline, trained = _run_torch(config, inputs, labels, source)
    else:
        baseline, trained = _run_keras(
            args.implementation, config, inputs, labels, source
        )
    print(
        json.dumps(
            {
                "implementation": args.implementation,
                "backend": os.environ.get("KERAS_BACKEND", "tensorflow"),
                "after_imports_mib": round(baseline, 1),
                "peak_training_mib": round(trained, 1),
                "peak_mib": round(_peak_mib(), 1),
            }
        )
    )


if __name__ == "__main__":
    main()
