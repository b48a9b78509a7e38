"""The speed table of the top-level README, generated from one results file.

Every figure of the table comes from one run of `benchmarks/run.py` (its
`benchmarks.json`), named under the table with its date and the machine's
load, so that a newer run replaces the old figures in one step:

    python -m benchmarks.readme_tables benchmarks/results/benchmarks.json \
        --readme README.md

`tests/benchmarks/test_readme_tables.py` fails when the README's table is
not what its results file gives.
"""

import argparse
import json

from benchmarks import report

START = "<!-- speed:start -->"
END = "<!-- speed:end -->"
# The README's names of the backends, in its column order.
BACKENDS = {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "PyTorch"}


def _training_cell(worker):
    rows = report._timed(worker.get("training", {}).get("small", {}))
    best = report._best_by_implementation(rows)
    peers = [v for k, v in best.items() if k != report.OURS]
    if report.OURS not in best or not peers:
        return "n/a"
    fastest = max(peers)
    fixed = report._fixed_length_ratio(rows, fastest)
    return f"{best[report.OURS] / fastest:.2f}x / {fixed:.2f}x"


def _decoding_ms(worker, batch, key):
    entry = worker.get("decoding", {}).get(batch, {}).get(key, {})
    return entry.get("ms")


def _pair(worker, numerator, denominator):
    cells = []
    for batch in ("1", "32"):
        top = _decoding_ms(worker, batch, numerator)
        bottom = _decoding_ms(worker, batch, denominator)
        if top is None or bottom is None:
            return "n/a"
        cells.append(f"{top / bottom:.2f}x")
    return " / ".join(cells)


def _serving_cell(worker):
    serving = worker.get("serving")
    if not serving or not {"1", "32"} <= set(serving):
        return "n/a"
    return " / ".join(f"{serving[b]['sentences_per_s']:.1f}" for b in ("1", "32"))


def _loads(results):
    loads = [results["load"].get("start"), results["load"].get("end")]
    for worker in results["backends"].values():
        loads += [worker["load"].get("start"), worker["load"].get("end")]
    return [x for x in loads if x is not None]


def render(results, source):
    """The README's speed table and the line that says where it is from.

    Args:
        results: the content of a `benchmarks.json`.
        source: the results file's path, as the README names it.

    Returns:
        Markdown: a table with one column per backend the run timed.
    """
    workers = {
        name: results["backends"][backend]
        for backend, name in BACKENDS.items()
        if backend in results["backends"]
    }
    ours, hub = report.OURS, report.HUB
    rows = [
        (
            "training over the fastest peer, our batches / the peers' batch",
            _training_cell,
        ),
        (
            "cached greedy over keras-hub's, batch 1 / 32",
            lambda w: _pair(w, f"{hub} | cached greedy", f"{ours} | cached greedy"),
        ),
        (
            "4 beams' time over greedy's, batch 1 / 32",
            lambda w: _pair(w, f"{ours} | beam", f"{ours} | cached greedy"),
        ),
        (
            "SavedModel, sentences/s, batch 1 / 32",
            _serving_cell,
        ),
    ]
    header = ["`small` translator, speed"]
    header += list(workers)
    body = [[what] + [cell(w) for w in workers.values()] for what, cell in rows]
    loads = _loads(results)
    machine = results["machine"]
    line = (
        f"[`{source}`]({source}), {results['started'][:10]}: "
        f"{machine['cpu']}, {machine['logical_cpus']} CPUs, load "
        f"{min(loads):.1f}-{max(loads):.1f}; medians, peers in the same run."
    )
    return report._table(header, body) + "\n\n" + line


def replace_between_markers(text, body):
    """`text` with what lies between `START` and `END` replaced by `body`."""
    if START not in text or END not in text:
        raise ValueError(f"the README has no {START} ... {END} markers")
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1]
    return f"{head}{START}\n{body}\n{END}{tail}"


def main(argv=None):
    """`python -m benchmarks.readme_tables RESULTS.json [--readme README.md]`."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("results", help="benchmarks.json written by run.py")
    parser.add_argument("--readme", help="rewrite this file's speed table")
    args = parser.parse_args(argv)
    with open(args.results, encoding="utf-8") as file:
        markdown = render(json.load(file), args.results)
    print(markdown)
    if args.readme:
        with open(args.readme, encoding="utf-8") as file:
            text = file.read()
        with open(args.readme, "w", encoding="utf-8") as file:
            file.write(replace_between_markers(text, markdown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
