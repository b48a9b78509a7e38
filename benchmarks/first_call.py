"""Where the first translation of a fresh process goes, phase by phase.

    python -m benchmarks.first_call [--processes 3] [--sentences 20] [--before REV]

A command such as `keras-seq translate --model-dir RUN` pays, in a fresh
process, for its imports, for loading the run, and on its first batch for
tracing the decoding loop and compiling it (XLA on TensorFlow and JAX, one
executable per batch shape); only then does it decode. This script makes
one untrained `small` translator run (random weights decode the most
tokens, the slowest case), then times in fresh processes, alternating the
cases:

- `tensorflow`: the default backend;
- `jax, cold cache` and `jax, warm cache`: JAX with its persistent
  compilation cache (`zoo.cli.startup.use_compilation_cache`) in a new
  directory, and again in the directory the cold process filled;
- with `--before REV`, `tensorflow, REV`: the same run loaded by the code of
  git revision `REV` (`benchmarks.ab.worktree`), to time a change.

Each process reports imports, loading, the first `translate` call (tracing,
compiling and decoding) and the same call again (decoding alone); the table
gives the median over processes. Results go to
`benchmarks/results/first-call.json`, with the date and the load.
"""

import argparse
import contextlib
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

from benchmarks.ab import worktree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PHASES = ("imports", "loading", "first translation", "again")

_WORKER = r"""
import json, sys, time
began = time.perf_counter()
sys.path.insert(0, sys.argv[1])
from zoo.cli import startup
if sys.argv[3]:
    startup.use_compilation_cache(sys.argv[3])
import zoo
imported = time.perf_counter()
trained = zoo.load_model_dir(sys.argv[2])
loaded = time.perf_counter()
sentences = json.loads(sys.argv[4])
trained.translate(sentences)
first = time.perf_counter()
trained.translate(sentences)
again = time.perf_counter()
print(json.dumps({
    "imports": imported - began, "loading": loaded - imported,
    "first translation": first - loaded, "again": again - first,
}))
"""


def _make_run(directory, count):
    """An untrained `small` translator run (vocabularies from the corpus)
    and `count` of the corpus' sentences to translate."""
    import zoo
    from keras_seq.data.translation import load_trans_de_en

    pairs = load_trans_de_en().train[:4000]
    trained = zoo.TrainedModel.learn("translator", pairs, preset="small")
    trained.save(directory)
    return [source for source, _ in pairs[:count]]


def _load():
    return [round(x, 2) for x in os.getloadavg()]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--sentences", type=int, default=20)
    parser.add_argument("--before", help="a git revision to time as well")
    parser.add_argument(
        "--output", default=os.path.join(ROOT, "benchmarks/results/first-call.json")
    )
    args = parser.parse_args(argv)
    began, load_before = datetime.datetime.now().isoformat(timespec="seconds"), _load()
    with contextlib.ExitStack() as stack:
        scratch = stack.enter_context(tempfile.TemporaryDirectory())
        run = os.path.join(scratch, "run")
        sentences = _make_run(run, args.sentences)
        cases = {
            "tensorflow": ("tensorflow", None, ROOT),
            "jax, cold cache": ("jax", "cold", ROOT),
            "jax, warm cache": ("jax", "warm", ROOT),
        }
        if args.before:
            tree = stack.enter_context(worktree(ROOT, args.before))
            cases[f"tensorflow, {args.before}"] = ("tensorflow", None, tree)
        times = {case: [] for case in cases}
        for process in range(args.processes):
            cache = os.path.join(scratch, f"cache-{process}")
            for case, (backend, kind, tree) in cases.items():
                env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
                output = subprocess.run(
                    [sys.executable, "-c", _WORKER, tree, run,
                     cache if kind else "", json.dumps(sentences)],
                    env=env, capture_output=True, text=True, check=True,
                ).stdout  # fmt: skip
                times[case].append(json.loads(output.strip().splitlines()[-1]))
                print(case, times[case][-1], flush=True)
    table = {
        case: {p: statistics.median(r[p] for r in rows) for p in PHASES}
        for case, rows in times.items()
    }
    results = {
        "started": began,
        "command": "python -m benchmarks.first_call " + " ".join(argv or sys.argv[1:]),
        "load": {"start": load_before, "end": _load()},
        "sentences": len(sentences),
        "processes": args.processes,
        "medians_s": table,
        "runs": times,
    }
    with open(args.output, "w", encoding="utf-8") as file:
        json.dump(results, file, indent=1)
    print(render(results))
    return 0


def render(results):
    """The table of `results` (medians over processes, seconds)."""
    lines = [
        "| case | " + " | ".join(PHASES) + " | to the first translation |",
        "|---|" + "---|" * (len(PHASES) + 1),
    ]
    for case, phases in results["medians_s"].items():
        total = sum(phases[p] for p in PHASES[:3])
        cells = [f"{phases[p]:.2f}" for p in PHASES] + [f"{total:.1f}"]
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
