"""Run every benchmark and write the results tables.

Run: `python -m benchmarks.run [--repeats 5] [--backends tensorflow jax]`.

One process per Keras backend (`benchmarks/worker.py`, the backend is fixed
per process) measures, with ours and the peers timed round-robin inside
it: the float32 matmul rate, training throughput (`small` and `base`),
decoding (cached and recomputed greedy, beam search) and, on TensorFlow,
SavedModel serving. Decoding is then timed again in fresh processes
(`--decoding-processes`, 3 in all by default) and each row reports the
median over the processes: on a shared machine the same decoding code
varies from one process to the next by more than the implementations
differ within one (figures in benchmarks/README.md). Then one short process per
implementation and backend measures peak memory (`benchmarks/memory.py`). Writes
`benchmarks/results/benchmarks.md` (the tables) and
`benchmarks.json` (every repetition). `--quick` runs tiny sizes once, for
the smoke test.

`--accelerator` writes the GPU tables instead, on the JAX backend only (a
GPU machine may have no TensorFlow): the device's own bfloat16 and float32
matmul rates, training `base` at batch 256 x 64 in mixed_bfloat16 and at
64 x 32 in float32 (each implementation in a process of its own), and
greedy and beam decoding of `small` at batch 1 and 64 with the processor
time of each call beside its wall time. It writes
`benchmarks/results/accelerator.md` and `accelerator.json` beside the CPU
tables, and refuses in one line where JAX sees no accelerator.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import report, timing  # noqa: E402
from benchmarks.config import CONFIGS  # noqa: E402

IMPLEMENTATIONS = ("keras-seq", "keras-hub", "keras.io recipe")
TORCH = "torch.nn.Transformer"
QUICK = [
    "--decoding-config", "tiny", "--repeats", "1",
    "--batch-sizes", "1", "2", "--new-tokens", "4", "--min-seconds", "0",
    "--matmul-sizes", "64", "--xla", "off", "--positions", "2", "6",
]  # fmt: skip


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as file:
            for line in file:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine():
    """The processor, its logical CPUs, the platform and the first GPU."""
    return {
        "cpu": _cpu_model(),
        "logical_cpus": os.cpu_count(),
        "platform": platform.platform(),
        "gpu": _gpu_name(),
    }


def _gpu_name():
    """The GPU that `nvidia-smi` lists first, or "none (CPU only)".

    Asked of the driver's tool rather than a framework, so that this parent
    process imports none of them.
    """
    try:
        done = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return "none (CPU only)"
    names = [
        line.split(":", 1)[-1].split("(UUID")[0].strip()
        for line in done.stdout.splitlines()
        if line.startswith("GPU")
    ]
    return names[0] if done.returncode == 0 and names else "none (CPU only)"


def _environment(backend):
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
    # PyTorch's OpenMP threads spin while they wait for work by default,
    # which on a CPU shared with other processes steals it from the work.
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_worker(backend, worker_args, directory, in_process=False, env=None):
    """Run `benchmarks.worker` on one backend; returns its JSON.

    `in_process` runs it in this process, whose backend must be `backend`
    (the smoke test does, to save a second import of TensorFlow). `env`
    adds variables to the worker's environment.
    """
    output = os.path.join(directory, f"{backend}.json")
    if in_process:
        # Lazy: only --in-process loads Keras into this parent process.
        import keras

        from benchmarks import worker

        if keras.backend.backend() != backend:
            raise ValueError(
                f"`--in-process` needs KERAS_BACKEND={backend}; this process "
                f"runs {keras.backend.backend()}."
            )
        return worker.run(
            worker.build_parser().parse_args(["--output", output, *worker_args])
        )
    command = [sys.executable, "-m", "benchmarks.worker", "--output", output]
    subprocess.run(
        command + worker_args,
        cwd=ROOT,
        env=dict(_environment(backend), **(env or {})),
        check=True,
    )
    with open(output, encoding="utf-8") as file:
        return json.load(file)


def merge_decoding(runs):
    """Decoding rows of several processes, each the median over them.

    Args:
        runs: the `"decoding"` results of each process, {batch: {key:
            row}} with `ms`, `cpu_ms`, `tokens_per_s` and `times`.

    Returns:
        The same structure: `ms` and `cpu_ms` the median of the processes'
        medians, `tokens_per_s` from that `ms`, `times` every repetition
        of every process, and `process_ms` each process's median.
    """
    merged = {}
    for batch, rows in runs[0].items():
        merged[batch] = {}
        for key, first in rows.items():
            found = [run[batch].get(key, {}) for run in runs]
            found = [row for row in found if "ms" in row]
            if "ms" not in first or not found:
                merged[batch][key] = first  # It failed: `{"failed": ...}`.
                continue
            ms = statistics.median(row["ms"] for row in found)
            merged[batch][key] = {
                "ms": ms,
                "cpu_ms": statistics.median(row["cpu_ms"] for row in found),
                # Tokens per call are the same in every process.
                "tokens_per_s": first["tokens_per_s"] * first["ms"] / ms,
                "times": [t for row in found for t in row["times"]],
                "process_ms": [row["ms"] for row in found],
            }
    return merged


def run_decoding_again(args, backend, configs, directory, worker):
    """Time decoding in `args.decoding_processes - 1` more processes.

    Replaces `worker["decoding"]` by the median over all the processes
    (`merge_decoding`); the first process is the one that ran every stage.
    """
    if "decoding" not in worker or args.decoding_processes < 2:
        return
    runs = [worker["decoding"]]
    worker_args = _worker_args(args, configs, stages="decoding")
    for index in range(1, args.decoding_processes):
        print(
            f"== {backend}: decoding again, process {index + 1} of "
            f"{args.decoding_processes}",
            file=sys.stderr,
            flush=True,
        )
        runs.append(run_worker(backend, worker_args, directory)["decoding"])
    worker["decoding"] = merge_decoding(runs)
    worker["decoding_processes"] = len(runs)


def run_memory(backend, implementation, config):
    """Peak memory of one implementation, in a process of its own."""
    command = [sys.executable, "-m", "benchmarks.memory"]
    command += ["--implementation", implementation, "--config", config]
    done = subprocess.run(
        command,
        cwd=ROOT,
        env=_environment(backend),
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _split_configs(args):
    """(configs timed round-robin, configs timed one process each).

    Isolated configurations are only trained, so without the training
    stage there are none: `--stages decoding` starts no `base` processes.
    """
    names = args.configs or (["tiny"] if args.quick else ["small", "base"])
    shared = [n for n in names if not CONFIGS[n].get("isolated")]
    isolated = [n for n in names if CONFIGS[n].get("isolated")]
    if "training" not in args.stages.split(","):
        isolated = []
    return shared, isolated


def _isolated_for(args, backend, isolated):
    """The isolated configurations `backend` trains.

    On PyTorch only those named by `--configs`: Keras runs it eagerly, and
    `base` there takes many minutes a process while the `small` rows
    already compare the same code paths.
    """
    return isolated if backend != "torch" or args.configs else []


def output_stem(backends):
    """The results' file name: `torch` for a run of that backend alone.

    Its tables then sit beside the TensorFlow and JAX ones
    (`benchmarks.md`) instead of replacing them.
    """
    return "torch" if list(backends) == ["torch"] else "benchmarks"


def _worker_args(args, configs, stages=None):
    worker_args = QUICK if args.quick else []
    worker_args = worker_args + ["--stages", stages or args.stages]
    if args.repeats is not None:
        worker_args += ["--repeats", str(args.repeats)]
    worker_args += ["--configs", *configs]
    if not args.torch:
        worker_args.append("--no-torch")
    if args.implementations:
        worker_args += ["--implementations", *args.implementations]
    return worker_args


def run_isolated(args, backend, name, directory, torch_too, on_rows=None):
    """Training rows of `name`, each implementation in a process of its own.

    `on_rows(rows)`, where given, receives the rows so far after each
    process. PyTorch's process leaves the GPU's memory to PyTorch: JAX, imported
    there with Keras, would otherwise reserve most of it on first use.
    """
    rows = {}
    implementations = args.implementations or list(IMPLEMENTATIONS)
    jobs = [([i], False) for i in implementations]
    if torch_too:
        jobs.append(([], True))
    for implementations, with_torch in jobs:
        worker_args = ["--stages", "training", "--configs", name]
        worker_args += ["--implementations", *implementations]
        worker_args += [] if with_torch else ["--no-torch"]
        if args.repeats is not None:
            worker_args += ["--repeats", str(args.repeats)]
        label = implementations[0] if implementations else TORCH
        print(f"== {backend}: {name}, {label} alone", file=sys.stderr, flush=True)
        env = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"} if with_torch else None
        result = run_worker(backend, worker_args, directory, env=env)
        rows.update(result["training"][name])
        if on_rows:
            on_rows(dict(rows))
    return rows


def _torch_available():
    try:
        import torch  # noqa: F401  Optional: benchmarks/requirements.txt.
    except ImportError:
        return False
    return True


# The accelerator's tables: (configurations trained, decoding configuration,
# decoding batch sizes, matmul sizes); `--quick` runs the tiny ones.
ACCELERATOR = {
    "full": (["base-256x64-bf16", "base-64x32"], "small", [1, 64], [8192]),
    "quick": (["tiny-bf16", "tiny"], "tiny", [1, 2], [256]),
}
PROBE = (
    "import jax; d = jax.devices()[0]; "
    "print(d.platform, len(jax.devices()), d.device_kind, sep='|')"
)


def find_accelerator():
    """The accelerator JAX computes on, as a string, or None (CPU only).

    Asked in a process of its own: JAX reserves most of a GPU's memory in
    the process that first uses it, and the workers need it.
    """
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=_environment("jax"),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return None
    platform_name, count, kind = done.stdout.strip().splitlines()[-1].split("|", 2)
    if platform_name == "cpu":
        return None
    return f"{count} x {kind} ({platform_name})"


def accelerator_jobs(args):
    """The worker runs of `--accelerator`: [(stage, configuration, args)].

    Training runs each implementation in a process of its own
    (`run_isolated`); the matmul rates and decoding run in one process
    each, decoding without PyTorch (its cacheless recomputation is not a
    row of the GPU tables).
    """
    trained, decoded, batches, sizes = ACCELERATOR["quick" if args.quick else "full"]
    repeats = [] if args.repeats is None else ["--repeats", str(args.repeats)]
    torch_flag = ["--torch" if args.torch else "--no-torch"]
    jobs = [
        (
            "matmul",
            None,
            ["--stages", "matmul", "--matmul-dtypes", "bfloat16", "float32"]
            + ["--matmul-sizes", *map(str, sizes)]
            + repeats
            + torch_flag,
        )
    ]
    if "training" in args.stages.split(","):
        jobs += [("training", name, None) for name in trained]
    if "decoding" in args.stages.split(","):
        decoding = ["--stages", "decoding", "--decoding-config", decoded]
        decoding += ["--batch-sizes", *map(str, batches), "--no-torch"] + repeats
        if args.quick:
            decoding += ["--new-tokens", "4", "--min-seconds", "0"]
        jobs.append(("decoding", decoded, decoding))
    return jobs


REFUSAL = (
    "benchmarks.run --accelerator: no accelerator found (JAX sees only the "
    "CPU, or is not installed); run it on a GPU machine, or without "
    "--accelerator for the CPU tables."
)


def run_accelerator(args, argv, accelerator):
    """`--accelerator` on `accelerator` (`find_accelerator()`): the GPU tables."""
    began = time.perf_counter()
    results = {
        "started": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": "python -m benchmarks.run "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": dict(machine(), gpu=accelerator),
        "accelerator": accelerator,
        "backend": "jax",
        "training": {},
    }
    jobs = accelerator_jobs(args)

    def write(done):
        # After every process, so that a run cut short (a time limit on the
        # GPU machine) leaves the tables of what it finished.
        results["wall_seconds"] = time.perf_counter() - began
        results["complete"] = done == len(jobs)
        _write_results(
            args.output_dir,
            "accelerator",
            results,
            report.render_accelerator,
            echo=results["complete"],
        )

    with tempfile.TemporaryDirectory() as directory:
        for done, (stage, name, worker_args) in enumerate(jobs, 1):
            print(f"== accelerator: {stage} {name or ''}", file=sys.stderr, flush=True)
            if stage == "training":

                def keep(rows, name=name, done=done):
                    results["training"][name] = rows
                    write(done - 1)

                results["training"][name] = run_isolated(
                    args, "jax", name, directory, args.torch, on_rows=keep
                )
                write(done)
                continue
            worker = run_worker("jax", worker_args, directory)
            results.setdefault("versions", {}).update(worker["versions"])
            results.setdefault("device", {}).update(worker["device"])
            if stage == "matmul":
                results["matmul"] = worker["matmul_by_dtype"]
            else:
                results["decoding"] = worker["decoding"]
                results["decoding_agrees"] = worker["decoding_agrees"]
                results["new_tokens"] = worker["new_tokens"]
                results["decoding_config"] = name
            write(done)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=None, help="default 5")
    parser.add_argument(
        "--backends", nargs="+", default=None, help="default: tensorflow jax"
    )
    parser.add_argument("--configs", nargs="+", default=None, help="small base")
    parser.add_argument(
        "--stages", default="matmul,training,decoding,positions,serving"
    )
    parser.add_argument(
        "--output-dir", default=os.path.join(ROOT, "benchmarks", "results")
    )
    parser.add_argument(
        "--decoding-processes",
        type=int,
        default=3,
        help="processes whose decoding medians are combined (1 in --quick)",
    )
    parser.add_argument("--memory", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--torch", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, once")
    parser.add_argument(
        "--implementations", nargs="+", default=None, help="Keras ones to train"
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the (single) backend in this process",
    )
    parser.add_argument(
        "--accelerator",
        action="store_true",
        help="the GPU tables (JAX): accelerator.md and accelerator.json",
    )
    args = parser.parse_args(argv)
    if args.accelerator:
        if args.backends not in (None, ["jax"]):
            parser.error(
                "--accelerator runs the JAX backend only; received --backends "
                + " ".join(args.backends)
                + "."
            )
        if args.in_process:
            parser.error(
                "--accelerator runs every job in a process of its own; "
                "leave out --in-process."
            )
        if args.configs or args.implementations:
            parser.error(
                "--accelerator runs its own configurations and every "
                "implementation; leave out --configs and --implementations."
            )
    args.backends = args.backends or ["tensorflow", "jax"]
    accelerator = find_accelerator() if args.accelerator else None
    if args.accelerator and accelerator is None:
        print(REFUSAL, file=sys.stderr)
        return 2
    if args.quick:
        args.decoding_processes = 1
    if args.decoding_processes < 1:
        parser.error(
            "--decoding-processes must be at least 1; "
            f"received {args.decoding_processes}."
        )
    if args.torch and not _torch_available():
        # The PyTorch peer is part of every published table: say so loudly
        # rather than write tables that silently lack it.
        print(
            "warning: torch is not installed, so torch.nn.Transformer is left "
            "out; install it with `.venv/bin/pip install -r "
            "benchmarks/requirements.txt` (or pass --no-torch)",
            file=sys.stderr,
        )
        args.torch = False
    if args.accelerator:
        return run_accelerator(args, argv, accelerator)

    began = time.perf_counter()
    results = {
        "started": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": "python benchmarks/run.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine(),
        "load": {"start": timing.load_average()},
        "backends": {},
        "memory": [],
    }
    shared, isolated = _split_configs(args)
    with tempfile.TemporaryDirectory() as directory:
        for backend in args.backends:
            print(f"== {backend}", file=sys.stderr, flush=True)
            worker = run_worker(
                backend, _worker_args(args, shared), directory, args.in_process
            )
            if not args.in_process:
                run_decoding_again(args, backend, shared, directory, worker)
            # PyTorch does not depend on the Keras backend: alone, it runs once.
            for name in _isolated_for(args, backend, isolated):
                rows = run_isolated(
                    args,
                    backend,
                    name,
                    directory,
                    args.torch and backend == args.backends[0],
                )
                worker.setdefault("training", {})[name] = rows
            results["backends"][backend] = worker
    if args.memory:
        config = "tiny" if args.quick else "small"
        for backend in args.backends:
            for implementation in IMPLEMENTATIONS:
                print(f"== memory: {implementation}, {backend}", file=sys.stderr)
                results["memory"].append(run_memory(backend, implementation, config))
        if args.torch:
            results["memory"].append(run_memory(args.backends[0], TORCH, config))
    results["load"]["end"] = timing.load_average()
    results["wall_seconds"] = time.perf_counter() - began
    results["stem"] = output_stem(args.backends)
    return _write_results(args.output_dir, results["stem"], results, report.render)


def _write_results(output_dir, stem, results, render, echo=True):
    """Writes `<stem>.json` and the tables `<stem>.md`; 0.

    With `echo`, the tables are printed too.
    """
    os.makedirs(output_dir, exist_ok=True)
    with open(os.path.join(output_dir, f"{stem}.json"), "w") as file:
        json.dump(results, file, indent=1)
    text = render(results)
    with open(os.path.join(output_dir, f"{stem}.md"), "w") as file:
        file.write(text)
    if echo:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
