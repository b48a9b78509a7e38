"""Run one `keras-seq` command and keep what the README's results need.

    python scripts/record_run.py --output docs/results/demo.json \
        --run-dir runs/demo -- keras-seq demo --overwrite

Runs the command after `--`, sampling the machine's 1-minute load every
`--every` seconds while it runs, then writes one JSON file: the command,
its start and end, wall and processor seconds (the command's processes,
`RUSAGE_CHILDREN`), the load range, the machine's processor, and the run
directory's `run.json` (its test figures, epochs and parameters). The
README's results table is generated from these files
(`python -m benchmarks.readme_tables`), one run per row, its date and load
beside it.
"""

import argparse
import datetime
import json
import os
import resource
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _sample_load(stop, every, loads):
    while not stop.wait(every):
        loads.append(round(os.getloadavg()[0], 2))


def record(command, run_dir, every=30.0):
    """Runs `command` (a list) and returns the record of the run it wrote
    in `run_dir`; raises CalledProcessError when it fails."""
    from benchmarks.run import machine

    loads = [round(os.getloadavg()[0], 2)]
    stop = threading.Event()
    sampler = threading.Thread(target=_sample_load, args=(stop, every, loads))
    started = datetime.datetime.now().isoformat(timespec="seconds")
    began = time.perf_counter()
    sampler.start()
    try:
        subprocess.run(command, check=True)
    finally:
        stop.set()
        sampler.join()
    wall = time.perf_counter() - began
    loads.append(round(os.getloadavg()[0], 2))
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as file:
        run = json.load(file)
    return {
        "command": " ".join(command),
        "started": started,
        "finished": datetime.datetime.now().isoformat(timespec="seconds"),
        "wall_s": round(wall, 1),
        "processor_s": round(usage.ru_utime + usage.ru_stime, 1),
        "load": {"min": min(loads), "max": max(loads), "samples": loads},
        "machine": machine(),
        "run": run,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", required=True, help="the JSON file to write")
    parser.add_argument("--run-dir", required=True, help="the run the command writes")
    parser.add_argument("--every", type=float, default=30.0, help="load sampling, s")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    result = record(command, args.run_dir, args.every)
    with open(args.output, "w", encoding="utf-8") as file:
        json.dump(result, file, indent=1)
        file.write("\n")
    print(json.dumps({k: result[k] for k in ("wall_s", "processor_s", "load")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
