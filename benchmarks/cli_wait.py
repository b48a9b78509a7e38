"""What a user waits for at the command line, before and after a change.

    python -m benchmarks.cli_wait --before REV [--busy] [--minutes 2]

Times, in fresh processes and for this tree and git revision `REV`
(`benchmarks.ab.worktree`), the two waits a new user meets first:

- `keras-seq train translator --data trans-de-en --preset small
  --minutes M` from start to exit (the budget asked against what it took);
- `keras-seq translate --model-dir RUN SENTENCE` from start to its first
  line of output, on the run the same tree's `train` wrote (three fresh
  processes; the median).

With `--busy`, a spinning process keeps one of the cores busy for the whole
run, as a second job on a 2-core machine does. Results go to
`benchmarks/results/cli-wait[-busy].json` with the date and the load.
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
import time

from benchmarks.ab import worktree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SENTENCE = "Ich habe keine Zeit."

# The console script of a tree: `zoo.cli.main` now, `keras_seq_cli` before
# the command line moved into the zoo.
_COMMAND = r"""
import os, sys
sys.path.insert(0, sys.argv.pop(1))
sys.argv[0] = "keras-seq"
if os.path.exists(os.path.join(sys.path[0], "keras_seq_cli.py")):
    from keras_seq_cli import main
else:
    from zoo.cli.main import main
sys.exit(main())
"""


def _keras_seq(tree, *arguments):
    return [sys.executable, "-c", _COMMAND, tree, *arguments]


def _train(tree, run, minutes):
    """Seconds from start to exit, and what the run says it spent: its
    epochs, training minutes and the last lines it printed."""
    began = time.perf_counter()
    done = subprocess.run(
        _keras_seq(tree, "train", "translator", "--data", "trans-de-en",
                   "--preset", "small", "--minutes", str(minutes),
                   "--output-dir", run),
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    wall = time.perf_counter() - began
    with open(os.path.join(run, "run.json"), encoding="utf-8") as file:
        record = json.load(file)
    return wall, {
        "epochs": record.get("epochs"),
        "train_minutes": record.get("train_minutes"),
        "last_lines": done.stdout.splitlines()[-4:],
    }


def _first_line(tree, run):
    """Seconds from start to the first translation's line, and to exit."""
    began = time.perf_counter()
    process = subprocess.Popen(
        _keras_seq(tree, "translate", "--model-dir", run, SENTENCE),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    line = process.stdout.readline()
    first = time.perf_counter() - began
    process.communicate()
    if process.returncode or not line.strip():
        raise RuntimeError(f"translate in {tree} failed: {process.returncode}")
    return {"first line": first, "exit": time.perf_counter() - began}


@contextlib.contextmanager
def _busy_core(busy):
    """One core kept busy by a spinning process while the context lasts;
    yields the process (None when not `busy`)."""
    if not busy:
        yield None
        return
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield spinner
    finally:
        spinner.kill()
        spinner.wait()


def _load():
    return [round(x, 2) for x in os.getloadavg()]


def measure(trees, minutes, processes, scratch):
    """Per tree: the train wall time and the translate waits."""
    results = {}
    for name, tree in trees.items():
        run = os.path.join(scratch, name)
        trained, said = _train(tree, run, minutes)
        waits = [_first_line(tree, run) for _ in range(processes)]
        results[name] = {
            "train_s": trained,
            "train_run": said,
            "translate_first_line_s": statistics.median(w["first line"] for w in waits),
            "translate_exit_s": statistics.median(w["exit"] for w in waits),
            "translate_runs": waits,
        }
        print(name, json.dumps(results[name]), flush=True)
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="a git revision")
    parser.add_argument("--minutes", type=float, default=2)
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--busy", action="store_true")
    args = parser.parse_args(argv)
    name = "cli-wait-busy.json" if args.busy else "cli-wait.json"
    output = os.path.join(ROOT, "benchmarks/results", name)
    began, load_before = datetime.datetime.now().isoformat(timespec="seconds"), _load()
    with contextlib.ExitStack() as stack:
        scratch = stack.enter_context(tempfile.TemporaryDirectory())
        before = stack.enter_context(worktree(ROOT, args.before))
        stack.enter_context(_busy_core(args.busy))
        trees = {args.before: before, "after": ROOT}
        results = measure(trees, args.minutes, args.processes, scratch)
    record = {
        "started": began,
        "command": "python -m benchmarks.cli_wait " + " ".join(argv or sys.argv[1:]),
        "load": {"start": load_before, "end": _load()},
        "busy core": args.busy,
        "minutes asked": args.minutes,
        "trees": results,
    }
    with open(output, "w", encoding="utf-8") as file:
        json.dump(record, file, indent=1)
    print(render(record))
    return 0


def render(record):
    """The table of `record`, seconds."""
    minutes = record["minutes asked"]
    lines = [
        f"| tree | train --minutes {minutes:g}, start to exit "
        "| translate, start to first line |",
        "|---|---|---|",
    ]
    for tree, row in record["trees"].items():
        lines.append(
            f"| {tree} | {row['train_s']:.0f} | {row['translate_first_line_s']:.1f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
