"""Every measurement of one Keras backend, in one process.

Run by `benchmarks/run.py` once per backend (`KERAS_BACKEND` is fixed per
process); writes one JSON file. Inside, implementations are timed
round-robin (`timing.interleaved`).
"""

import argparse
import json
import logging
import os
import platform
import sys
import time
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks import config as config_lib  # noqa: E402
from benchmarks import decoding, peers_torch, serving, timing, training  # noqa: E402
from zoo.recipes import allocator  # noqa: E402


def _quiet():
    warnings.filterwarnings("ignore")
    logging.getLogger("absl").setLevel(logging.ERROR)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf  # Backend-specific: this worker may run JAX.

        tf.get_logger().setLevel(logging.ERROR)


def _versions(with_torch):
    versions = {
        "python": platform.python_version(),
        "keras": keras.__version__,
        "keras_hub": keras_hub.__version__,
        "numpy": np.__version__,
    }
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf  # Backend-specific: this worker may run JAX.

        versions["tensorflow"] = tf.__version__
    elif keras.backend.backend() == "jax":
        import jax  # Backend-specific: this worker may run TensorFlow.

        versions["jax"] = jax.__version__
    if with_torch or keras.backend.backend() == "torch":
        import torch  # Optional: benchmarks/requirements.txt.

        versions["torch"] = torch.__version__
    return versions


def _device(with_torch):
    """What each library computes on: {library: description}."""
    devices = {}
    if keras.backend.backend() == "jax":
        import jax  # Backend-specific: this worker may run TensorFlow.

        device = jax.devices()[0]
        devices["jax"] = f"{device.platform}: {device.device_kind}"
    elif keras.backend.backend() == "torch":
        from keras.src.backend.torch.core import get_device  # Keras' own choice.

        devices["keras on torch"] = str(get_device())
    else:
        import tensorflow as tf  # Backend-specific: this worker may run JAX.

        gpus = tf.config.list_logical_devices("GPU")
        devices["tensorflow"] = f"gpu: {gpus[0].name}" if gpus else "cpu"
    if with_torch:
        import torch  # Optional: benchmarks/requirements.txt.

        device = peers_torch.pick_device()
        name = torch.cuda.get_device_name(device) if device.type == "cuda" else ""
        devices["torch"] = f"{device.type}: {name}" if name else device.type
    return devices


def _log(message):
    print(f"[{keras.backend.backend()}] {message}", file=sys.stderr, flush=True)


def run(args):
    """All stages asked for; returns the JSON-ready result."""
    backend = keras.backend.backend()
    with_torch = args.torch and peers_torch.available()
    result = {
        "backend": backend,
        "versions": _versions(with_torch),
        "load": {"start": timing.load_average()},
        "repeats": args.repeats,
        "seconds": {},
    }
    began = time.perf_counter()
    stages = set(args.stages.split(","))
    result["device"] = _device(with_torch)
    if "matmul" in stages:
        for dtype in args.matmul_dtypes:
            _log(f"{dtype} matmul rate")
            result.setdefault("matmul_by_dtype", {})[dtype] = timing.matmul_rates(
                sizes=tuple(args.matmul_sizes), torch_too=with_torch, dtype=dtype
            )
        if "float32" in args.matmul_dtypes:
            result["matmul"] = result["matmul_by_dtype"]["float32"]
    for name in args.configs:
        if "training" not in stages:
            break
        config = config_lib.CONFIGS[name]
        _log(f"training, {name}")
        stage_began = time.perf_counter()
        result.setdefault("training", {})[name] = training.measure(
            config,
            args.repeats,
            implementations=tuple(args.implementations),
            with_torch=with_torch,
            xla=args.xla or config["xla"],
        )
        result["seconds"][f"training {name}"] = time.perf_counter() - stage_began
    config = config_lib.CONFIGS[args.decoding_config]
    if "decoding" in stages:
        _log(f"decoding, {args.decoding_config}")
        stage_began = time.perf_counter()
        result["decoding_agrees"] = decoding.check_agreement(config)
        result["new_tokens"] = args.new_tokens
        decoded = decoding.measure(
            config,
            args.repeats,
            batch_sizes=tuple(args.batch_sizes),
            new_tokens=args.new_tokens,
            with_torch=with_torch,
            min_seconds=args.min_seconds,
        )
        # JSON keys are strings: "implementation | method".
        result["decoding"] = {
            batch: {" | ".join(key): row for key, row in rows.items()}
            for batch, rows in decoded.items()
        }
        result["seconds"]["decoding"] = time.perf_counter() - stage_began
    # The time per token early and late in a translation: on PyTorch the
    # cache is a tensor written step by step outside any compiler (XLA
    # updates its loop's buffers in place by itself).
    if "positions" in stages and backend == "torch":
        _log(f"decoding positions, {args.decoding_config}")
        stage_began = time.perf_counter()
        result["positions"] = decoding.measure_positions(
            config,
            max(args.repeats, 9),
            batch_sizes=tuple(args.batch_sizes),
            positions=tuple(args.positions),
            min_seconds=args.min_seconds,
        )
        result["seconds"]["positions"] = time.perf_counter() - stage_began
    if "serving" in stages and backend == "tensorflow":
        _log("serving")
        stage_began = time.perf_counter()
        result["serving"] = serving.measure(
            config,
            args.repeats,
            batch_sizes=tuple(args.batch_sizes),
            new_tokens=args.new_tokens,
            min_seconds=args.min_seconds,
        )
        result["seconds"]["serving"] = time.perf_counter() - stage_began
    result["load"]["end"] = timing.load_average()
    result["seconds"]["total"] = time.perf_counter() - began
    return result


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--configs", nargs="*", default=["small"])
    parser.add_argument("--decoding-config", default="small")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--new-tokens", type=int, default=decoding.NEW_TOKENS)
    parser.add_argument("--min-seconds", type=float, default=0.3)
    parser.add_argument(
        "--positions",
        type=int,
        nargs=2,
        default=list(decoding.POSITIONS),
        help="PyTorch: the early and late position whose step is timed",
    )
    parser.add_argument(
        "--matmul-sizes", type=int, nargs="+", default=[512, 1024, 2048]
    )
    parser.add_argument(
        "--matmul-dtypes",
        nargs="+",
        choices=("float32", "bfloat16"),
        default=["float32"],
    )
    parser.add_argument(
        "--xla",
        choices=("both", "on", "off"),
        default=None,
        help="TensorFlow; default: the configuration's",
    )
    parser.add_argument(
        "--implementations",
        nargs="*",
        default=[training.OURS, *training.KERAS_PEERS],
        help="the Keras implementations to train",
    )
    parser.add_argument(
        "--stages", default="matmul,training,decoding,positions,serving"
    )
    parser.add_argument("--torch", action=argparse.BooleanOptionalAction, default=True)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    _quiet()
    # As every `keras-seq` command does; process-wide, so every
    # implementation timed here, PyTorch's included, runs with it.
    tuned = allocator.tune_allocator()
    result = run(args)
    result["allocator_tuned"] = tuned
    with open(args.output, "w", encoding="utf-8") as file:
        json.dump(result, file, indent=1)


if __name__ == "__main__":
    main()
