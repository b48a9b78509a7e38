"""Before and after a change: the same timings on two trees of the code.

    python -m benchmarks.ab --before REV [--after DIR] [--processes 5]

Checks `REV` out into a temporary git worktree and times, in fresh
processes that alternate between the two trees on one backend, the
library paths a refactoring must not slow down: the `small` translator's
training step (`train_on_batch`, batch 64 x 32, XLA) and 32 decoded tokens
at batch 1 and 32, greedy and with 4 beams. Each process reports the median
of its repeats; the table gives the median over processes, their range and
count, and after / before. Alternating processes spreads the machine's
load over both trees alike.
"""

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROWS = (
    ("training, 5 steps", "train"),
    ("greedy, batch 1", "greedy_1"),
    ("greedy, batch 32", "greedy_32"),
    ("beam, batch 1", "beam_1"),
    ("beam, batch 32", "beam_32"),
)

# One process's timings: run with the tree to time first on `sys.path`.
_WORKER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np, keras
import zoo
from keras_seq.losses import MaskedSparseCategoricalCrossentropy

keras.utils.set_random_seed(0)
model = zoo.build_translator("small")
model.compile(
    optimizer="adam", loss=MaskedSparseCategoricalCrossentropy(), jit_compile=True
)
rng = np.random.default_rng(0)
source = rng.integers(4, 8000, (64, 32)).astype("int32")
target = rng.integers(4, 8000, (64, 33)).astype("int32")
x = {"encoder_token_ids": source, "decoder_token_ids": target[:, :-1]}


def median_ms(run, repeats):
    run()  # trace and compile
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return float(np.median(times))


def train():
    for _ in range(5):
        model.train_on_batch(x, target[:, 1:])


out = {"train": median_ms(train, 3)}
for batch in (1, 32):
    ids = source[:batch, :24]
    for name, options in (("greedy", {}), ("beam", {"strategy": "beam"})):
        out[f"{name}_{batch}"] = median_ms(
            lambda: np.asarray(
                model.generate(ids, max_new_tokens=32, end_token_id=None, **options)
            ),
            5,
        )
print("RESULT " + json.dumps(out))
"""


def _time(tree, backend):
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run(
        [sys.executable, "-c", _WORKER, tree],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("RESULT ")]
    return json.loads(line[len("RESULT ") :])


def table(runs):
    """Markdown rows: each timing's median over processes (range, count) in
    `runs["before"]` and `runs["after"]`, lists of one dict a process."""
    lines = ["| what | before | after | after / before |", "|---|---|---|---|"]
    for label, key in ROWS:
        cells = []
        for name in ("before", "after"):
            values = [run[key] for run in runs[name]]
            cells.append(
                (statistics.median(values), min(values), max(values), len(values))
            )
        (b, *_), (a, *_) = cells
        shown = [f"{m:.1f} ({lo:.1f}-{hi:.1f}, {n})" for m, lo, hi, n in cells]
        lines.append(f"| {label} | {shown[0]} | {shown[1]} | {a / b:.2f} |")
    return lines


@contextlib.contextmanager
def worktree(root, revision):
    """`revision` of the repository at `root`, checked out in a temporary
    git worktree for as long as the context lasts; yields its path."""
    with tempfile.TemporaryDirectory() as scratch:
        tree = os.path.join(scratch, "before")
        git = ["git", "-C", root, "worktree"]
        subprocess.run(
            [*git, "add", "--detach", tree, revision], check=True, capture_output=True
        )
        try:
            yield tree
        finally:
            subprocess.run(
                [*git, "remove", "--force", tree], check=True, capture_output=True
            )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="a git revision")
    parser.add_argument("--after", default=".", help="a tree (default: this one)")
    parser.add_argument("--backend", default="tensorflow")
    parser.add_argument("--processes", type=int, default=5)
    args = parser.parse_args(argv)
    root = os.path.abspath(args.after)
    with worktree(root, args.before) as before:
        trees = {"before": before, "after": root}
        runs = {name: [] for name in trees}
        for index in range(args.processes):
            for name, tree in trees.items():
                runs[name].append(_time(tree, args.backend))
                print(f"process {index + 1}, {name}: {runs[name][-1]}", flush=True)
    print(f"\n{args.backend}, {args.before} (before) against {root} (after), ms:\n")
    print("\n".join(table(runs)))


if __name__ == "__main__":
    main()
