"""What 4 beams cost over greedy decoding, and why: the rows or the search.

Beam search with K beams runs the decoder over B * K rows a step, so at a
batch where the step's work grows with its rows its time tends to K times
greedy's at batch B; where a step is mostly fixed overhead (batch 1) it
costs less. Each backend's process times, round-robin, for ours
(`model.generate` / `model.beam_search`) and keras-hub's cached decoder
(`GreedySampler` / `BeamSampler`), the `small` translator, 32 new tokens
that never end early:

- greedy at batch B and at batch B * K (the rows the beams decode);
- beam search with K beams at batch B.

`beam(B) / greedy(B)` is the figure the decoding table reports;
`beam(B) / greedy(B * K)` what the search adds over decoding its rows
(top-k over K * V candidates, reordering the cache, the hypotheses'
bookkeeping). With `--ctranslate2` the same three cases run through the
translator's CTranslate2 export (float32, one thread), in a process
without TensorFlow, as a peer outside Keras.

    python -m benchmarks.beam_cost --backends tensorflow jax --ctranslate2 \
        --repeats 5 --output benchmarks/results/beam-cost.json
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

BATCH = 32
BEAMS = 4
NEW_TOKENS = 32
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _keras_cases(batch, beams, new_tokens):
    """dict (implementation, case) -> a zero-argument call, on this
    process's backend."""
    from keras import ops

    from benchmarks import config as config_lib
    from benchmarks import peers_keras
    from benchmarks.decoding import _compiled
    from benchmarks.training import OURS, build_keras

    config = config_lib.CONFIGS["small"]
    ours, hub = build_keras(OURS, config), build_keras("keras-hub", config)
    sources = {
        rows: ops.convert_to_tensor(config_lib.source_batch(config, rows, seed=rows))
        for rows in (batch, batch * beams)
    }
    hub_greedy = _compiled(lambda s: peers_keras.hub_greedy(hub, s, new_tokens), hub)
    hub_beam = _compiled(lambda s: peers_keras.hub_beam(hub, s, new_tokens, beams), hub)
    calls = {}
    for rows in (batch, batch * beams):
        source = sources[rows]
        calls[(OURS, f"greedy, batch {rows}")] = lambda s=source: ours.generate(
            s, max_new_tokens=new_tokens, end_token_id=None
        )
        calls[("keras-hub", f"greedy, batch {rows}")] = lambda s=source: hub_greedy(s)
    source = sources[batch]
    calls[(OURS, f"{beams} beams, batch {batch}")] = lambda: ours.beam_search(
        source, new_tokens, beam_width=beams, end_token_id=None
    )[0]
    calls[("keras-hub", f"{beams} beams, batch {batch}")] = lambda: hub_beam(source)
    return {
        key: (lambda fn=fn: ops.convert_to_numpy(fn())) for key, fn in calls.items()
    }


def _ctranslate2_cases(directory, batch, beams, new_tokens):
    from benchmarks.ctranslate2 import _sentences
    from zoo.serving.ctranslate2_model import CTranslate2Model

    with open(os.path.join(directory, "source_vocabulary.txt"), encoding="utf-8") as f:
        vocabulary = f.read().splitlines()
    model = CTranslate2Model(os.path.join(directory, "ct2-float32"), intra_threads=1)
    model.settings["max_decoding_length"] = new_tokens
    texts = {
        rows: _sentences(vocabulary, rows, 24, seed=rows)
        for rows in (batch, batch * beams)
    }
    return {
        ("CTranslate2", f"greedy, batch {rows}"): (
            lambda t=texts[rows]: model.translate(t, beam_width=1)
        )
        for rows in (batch, batch * beams)
    } | {
        ("CTranslate2", f"{beams} beams, batch {batch}"): (
            lambda t=texts[batch]: model.translate(t, beam_width=beams)
        )
    }


def worker(args):
    from benchmarks import timing

    if args.backend == "ctranslate2":
        calls = _ctranslate2_cases(
            args.directory, args.batch, args.beams, args.new_tokens
        )
    else:
        from zoo.recipes.allocator import tune_allocator

        tune_allocator()
        calls = _keras_cases(args.batch, args.beams, args.new_tokens)
    loads = [timing.load_average()]
    medians = timing.interleaved(calls, args.repeats, min_seconds=0.3)
    loads.append(timing.load_average())
    rows = {
        " | ".join(key): {"ms": 1e3 * value["median"], "times": value["times"]}
        for key, value in medians.items()
    }
    print(json.dumps({"rows": rows, "load": loads, "modules": sorted(sys.modules)}))


def _prepare_ctranslate2(directory, new_tokens):
    """The `small` translator that never ends early, as CTranslate2."""
    from benchmarks.ctranslate2 import fixed_work_translator
    from keras_seq.export.ctranslate2 import export_ctranslate2

    model, preprocessor = fixed_work_translator()
    preprocessor.save(directory)
    export_ctranslate2(model, directory, os.path.join(directory, "ct2-float32"))


def _run(backend, args, directory=None):
    command = [
        sys.executable, "-m", "benchmarks.beam_cost", "--worker", backend,
        "--repeats", str(args.repeats), "--batch", str(args.batch),
        "--beams", str(args.beams), "--new-tokens", str(args.new_tokens),
    ]  # fmt: skip
    if directory:
        command += ["--directory", directory]
    env = dict(os.environ)
    env.pop("KERAS_BACKEND", None)
    if backend != "ctranslate2":
        env["KERAS_BACKEND"] = backend
    result = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    if result.returncode:
        raise SystemExit(f"{backend} worker failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _ratios(rows, batch, beams):
    """implementation -> (beam / greedy at B, beam / greedy at B * K)."""
    out = {}
    for name in sorted({key.split(" | ")[0] for key in rows}):
        beam = rows[f"{name} | {beams} beams, batch {batch}"]["ms"]
        greedy = rows[f"{name} | greedy, batch {batch}"]["ms"]
        wide = rows[f"{name} | greedy, batch {batch * beams}"]["ms"]
        out[name] = {
            "beam_over_greedy": beam / greedy,
            "beam_over_greedy_same_rows": beam / wide,
            "greedy_rows_scaling": wide / greedy,
        }
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["tensorflow", "jax"])
    parser.add_argument("--ctranslate2", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch", type=int, default=BATCH)
    parser.add_argument("--beams", type=int, default=BEAMS)
    parser.add_argument("--new-tokens", type=int, default=NEW_TOKENS)
    parser.add_argument("--output", default=None)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--directory", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        args.backend = args.worker
        return worker(args)
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    results = {"started": started, "batch": args.batch, "beams": args.beams,
               "new_tokens": args.new_tokens, "backends": {}}  # fmt: skip
    for backend in args.backends:
        results["backends"][backend] = _run(backend, args)
    if args.ctranslate2:
        with tempfile.TemporaryDirectory() as directory:
            env = dict(os.environ, KERAS_BACKEND="tensorflow")
            subprocess.run(
                [sys.executable, "-c", "import sys; from benchmarks.beam_cost import "
                 "_prepare_ctranslate2 as p; p(sys.argv[1], int(sys.argv[2]))",
                 directory, str(args.new_tokens)],
                cwd=ROOT, env=env, check=True, capture_output=True,
            )  # fmt: skip
            found = _run("ctranslate2", args, directory)
            assert "tensorflow" not in found["modules"]
            results["backends"]["ctranslate2"] = found
    for found in results["backends"].values():
        found.pop("modules", None)
        found["ratios"] = _ratios(found["rows"], args.batch, args.beams)
    lines = [f"beam cost, {started}, batch {args.batch}, {args.beams} beams:"]
    for backend, found in results["backends"].items():
        lines.append(f"{backend} (load {found['load']}):")
        for key, row in found["rows"].items():
            lines.append(f"  {key}: {row['ms']:.1f} ms")
        for name, ratio in found["ratios"].items():
            lines.append(
                f"  {name}: beam/greedy {ratio['beam_over_greedy']:.2f}x, "
                f"beam/greedy at {args.batch * args.beams} rows "
                f"{ratio['beam_over_greedy_same_rows']:.2f}x, greedy "
                f"{args.batch * args.beams} rows / {args.batch} rows "
                f"{ratio['greedy_rows_scaling']:.2f}x"
            )
    print("\n".join(lines))
    if args.output:
        with open(args.output, "w", encoding="utf-8") as file:
            json.dump(results, file, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
