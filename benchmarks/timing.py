"""Interleaved timing and the machine's matmul rates.

The CPU these benchmarks run on is shared, so a burst of load elsewhere
would bias whichever implementation happened to run during it. Timing
round-robin (A B C A B C ...) spreads such bursts over every candidate, and
the median of the repetitions discards the worst of them.
"""

import math
import os
import re
import statistics
import time

import numpy as np


def load_average():
    """The 1-minute load average, or None where the OS has none."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def first_call_fails(fn):
    """Call `fn` once; None if it returns, else its error in one line.

    A peer that cannot run on a backend (an op the backend lacks) is then
    reported by what failed instead of ending the run.
    """
    try:
        fn()
    except Exception as error:  # noqa: BLE001  Any failure is the finding.
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(error))  # Keras' bold markers.
        lines = [
            line.strip()
            for line in text.splitlines()
            if line.strip() and not line.startswith("Exception encountered")
        ]
        return f"{type(error).__name__}: {lines[0] if lines else ''}"[:240]
    return None


def interleaved(candidates, repeats, warmup=1, min_seconds=0.0):
    """Median seconds per call of each candidate, timed round-robin.

    Args:
        candidates: dict name -> zero-argument callable that runs one
            unit of work and returns only when it is done.
        repeats: timed repetitions of each candidate.
        warmup: untimed calls of each candidate first (compilation).
        min_seconds: a repetition calls a fast candidate several times, so
            that it lasts at least this long and timer noise stays small.

    Returns:
        dict name -> {"median": s, "times": [s, ...], "cpu_median": s,
        "calls": n}, times per call; `cpu_median` is the median processor
        time of the whole process (all threads), which a busy machine
        disturbs less than the wall clock.
    """
    calls = {}
    for name, fn in candidates.items():
        for _ in range(warmup):
            fn()
        once = _seconds(fn) if min_seconds else min_seconds
        calls[name] = max(1, math.ceil(min_seconds / max(once, 1e-6)))
    times = {name: [] for name in candidates}
    cpu_times = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, fn in candidates.items():
            began, cpu_began = time.perf_counter(), time.process_time()
            for _ in range(calls[name]):
                fn()
            cpu_times[name].append((time.process_time() - cpu_began) / calls[name])
            times[name].append((time.perf_counter() - began) / calls[name])
    return {
        name: {
            "median": statistics.median(values),
            "times": values,
            "cpu_median": statistics.median(cpu_times[name]),
            "calls": calls[name],
        }
        for name, values in times.items()
    }


def _best_rate(multiply, sizes, repeats, min_seconds=0.3):
    """(best FLOP/s, best FLOPs per processor-second) over `sizes`.

    Each repetition repeats the product for at least `min_seconds`: the
    processor time of one short call is not reliable (JAX's worker threads
    had not been charged for a single 512 x 512 product when it returned,
    which gave a rate ten times the wall-clock one).
    """
    best, best_cpu = 0.0, 0.0
    for n in sizes:
        run = multiply(n)
        run()  # Warm-up: allocation, compilation.
        once = _seconds(run)
        calls = max(1, math.ceil(min_seconds / max(once, 1e-6)))
        for _ in range(repeats):
            began, cpu_began = time.perf_counter(), time.process_time()
            for _ in range(calls):
                run()
            seconds = time.perf_counter() - began
            cpu_seconds = max(time.process_time() - cpu_began, 1e-9)
            best = max(best, 2 * n**3 * calls / seconds)
            best_cpu = max(best_cpu, 2 * n**3 * calls / cpu_seconds)
    return best, best_cpu


def _seconds(fn):
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def matmul_rates(sizes=(512, 1024, 2048), repeats=5, torch_too=False, dtype="float32"):
    """Best matmul rates of this process's backend (and torch) in `dtype`.

    Square (n, n) x (n, n) products, 2 n^3 FLOPs each, best of `repeats`
    at the fastest size, on the backend's default device (a GPU where
    there is one; torch on `peers_torch.pick_device()`), in `dtype`
    (`"float32"` or `"bfloat16"`). Returns dict library -> (FLOP/s, FLOPs
    per second of processor time, all threads together).
    """
    # Lazy: run.py imports this module for its load average, without Keras.
    import keras

    if dtype not in ("float32", "bfloat16"):
        raise ValueError(
            f"`dtype` must be 'float32' or 'bfloat16'; received {dtype!r}."
        )
    backend = keras.backend.backend()
    rng = np.random.default_rng(0)
    rates = {}

    def arrays(n):
        return (
            rng.standard_normal((n, n)).astype("float32"),
            rng.standard_normal((n, n)).astype("float32"),
        )

    if backend == "tensorflow":
        import tensorflow as tf  # Backend-specific.

        product = tf.function(tf.linalg.matmul, jit_compile=True)

        def tf_multiply(n):
            a, b = (tf.cast(tf.constant(x), dtype) for x in arrays(n))
            return lambda: product(a, b).numpy()

        rates["tensorflow"] = _best_rate(tf_multiply, sizes, repeats)
    elif backend == "jax":
        import jax  # Backend-specific.

        product = jax.jit(jax.numpy.matmul)

        def jax_multiply(n):
            a, b = (jax.numpy.asarray(x, dtype=dtype) for x in arrays(n))
            return lambda: product(a, b).block_until_ready()

        rates["jax"] = _best_rate(jax_multiply, sizes, repeats)
    if torch_too:
        import torch  # Optional: benchmarks/requirements.txt.

        from benchmarks import peers_torch

        device = peers_torch.pick_device()
        torch_dtype = getattr(torch, dtype)

        def torch_multiply(n):
            a, b = (
                torch.from_numpy(x).to(device=device, dtype=torch_dtype)
                for x in arrays(n)
            )

            def run():
                torch.mm(a, b)
                peers_torch.synchronize(device)

            return run

        rates["torch"] = _best_rate(torch_multiply, sizes, repeats)
    return rates
