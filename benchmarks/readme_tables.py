"""The top-level README's tables, generated from their results files.

The speed table comes from one run of `benchmarks/run.py` (its
`benchmarks.json`), named under the table with its date and the machine's
load; the results table has one row per run recorded by
`scripts/record_run.py` (`docs/results/*.json`), each with its own date
and load. A newer run replaces the old figures in one step:

    python -m benchmarks.readme_tables benchmarks/results/benchmarks.json \
        --readme README.md

`tests/benchmarks/test_readme_tables.py` fails when a table of the README
is not what its results files give.
"""

import argparse
import json
import os

from benchmarks import report

START = "<!-- speed:start -->"
END = "<!-- speed:end -->"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


def _translation_cell(run):
    return (
        f"cased BLEU {run['bleu_beam4']:.2f} with 4 beams, "
        f"{run['bleu_greedy']:.2f} greedy ({run['epochs']} epochs)"
    )


def _accuracy_cell(run):
    return f"test accuracy {run['test_accuracy']:.1%}"


def _perplexity_cell(run):
    return f"test perplexity {run['test_perplexity']:.1f} per token"


# The rows of the results table: the recorded run, what it is, its figures.
RESULTS = (
    (
        "docs/results/demo.json",
        "`make demo`: German→English, `small`, 15 minutes, 898 test pairs",
        _translation_cell,
    ),
    (
        "docs/results/sentiment.json",
        "`train classifier --epochs 6`, `small`, movie reviews",
        _accuracy_cell,
    ),
    (
        "docs/results/language-model.json",
        "`train language-model --epochs 2`, `small`, Shakespeare",
        _perplexity_cell,
    ),
)


def render_results(records):
    """The README's results table: one row per recorded run.

    Args:
        records: dict from each path of `RESULTS` to the content of that
            file (`scripts/record_run.py`'s record).

    Returns:
        Markdown: each row's figures, the run's date and the load range
        while it ran.
    """
    body = []
    for path, what, cell in RESULTS:
        record = records[path]
        load = record["load"]
        body.append([
            what,
            f"{cell(record['run'])} ([{record['started'][:10]}]({path}), "
            f"load {load['min']:.1f}-{load['max']:.1f})",
        ])  # fmt: skip
    return report._table(["what", "result"], body)


def read_results(root=ROOT):
    """The records the results table is made from, keyed by path."""
    records = {}
    for path, _, _ in RESULTS:
        with open(os.path.join(root, path), encoding="utf-8") as file:
            records[path] = json.load(file)
    return records


def replace_between_markers(text, body, stem="speed"):
    """`text` with what lies between its `<!-- {stem}:start -->` and
    `<!-- {stem}:end -->` markers replaced by `body`."""
    start, end = f"<!-- {stem}:start -->", f"<!-- {stem}:end -->"
    if start not in text or end not in text:
        raise ValueError(f"the README has no {start} ... {end} markers")
    head, rest = text.split(start, 1)
    tail = rest.split(end, 1)[1]
    return f"{head}{start}\n{body}\n{end}{tail}"


def rewrite(text, results, source, root=ROOT):
    """`text` (a README) with both its tables generated anew."""
    text = replace_between_markers(text, render(results, source))
    return replace_between_markers(text, render_results(read_results(root)), "results")


def main(argv=None):
    """`python -m benchmarks.readme_tables RESULTS.json [--readme README.md]`."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("results", help="benchmarks.json written by run.py")
    parser.add_argument("--readme", help="rewrite this file's tables")
    args = parser.parse_args(argv)
    with open(args.results, encoding="utf-8") as file:
        results = json.load(file)
    print(render(results, args.results))
    print(render_results(read_results()))
    if args.readme:
        with open(args.readme, encoding="utf-8") as file:
            text = file.read()
        with open(args.readme, "w", encoding="utf-8") as file:
            file.write(rewrite(text, results, args.results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
