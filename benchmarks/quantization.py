"""Keras' own int8 quantization of the translator: speed, size and BLEU.

Speed: sentences per second at batch 1 and 32, greedy and with 4 beams,
for the `small` translator (random weights, a synthetic 8,000-token
vocabulary, the end token's output bias pushed down so every translation
runs all `--new-tokens` steps) in float32 and after `model.quantize("int8")`,
on TensorFlow, JAX and PyTorch: `generate` or `beam_search` on ids, each
backend in fresh processes taken in turn (`--rounds`), each figure the
median of the per-process medians. The `.keras` file sizes are reported.

Quality (`--run DIR`): test BLEU of a trained translator's run directory
on the trans-de-en test set, float32 against int8, greedy, on TensorFlow.

    python -m benchmarks.quantization --rounds 2 --output results.json
    python -m benchmarks.quantization --run runs/translator --bleu-only
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from benchmarks.report import size_line, throughput_rows, throughput_table

BACKENDS = ("tensorflow", "jax", "torch")
PRECISIONS = ("float32", "int8")
CASES = tuple((batch, beams) for beams in (1, 4) for batch in (1, 32))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def prepare(directory):
    """Writes the float32 and int8 `.keras` files of the `small` translator."""
    import numpy as np

    from benchmarks import config as config_lib
    from benchmarks.training import OURS, build_keras
    from keras_seq import text

    model = build_keras(OURS, config_lib.CONFIGS["small"])
    bias = np.asarray(model.output_dense.bias)
    bias[text.END_ID] = -1e4  # Never end early: a fixed amount of work.
    model.output_dense.bias.assign(bias)
    sizes = {}
    for precision in PRECISIONS:
        if precision == "int8":
            model.quantize("int8")
        path = os.path.join(directory, f"{precision}.keras")
        model.save(path)
        sizes[f"{precision}_bytes"] = os.path.getsize(path)
    return sizes


def worker(directory, precision, new_tokens, repeats):
    """Prints one JSON line: case -> median seconds per call, in this process."""
    import keras
    import numpy as np

    import zoo  # noqa: F401  (registers the model class)
    from benchmarks import config as config_lib
    from benchmarks import timing

    model = keras.saving.load_model(os.path.join(directory, f"{precision}.keras"))
    words = config_lib.real_length(config_lib.CONFIGS["small"]["length"])
    rng = np.random.default_rng(0)
    calls = {}
    for batch, beams in CASES:
        ids = rng.integers(5, model.source_vocabulary_size, (batch, words))
        ids = keras.ops.convert_to_tensor(ids.astype("int32"))
        if beams == 1:
            calls[f"{batch}x{beams}"] = lambda ids=ids: keras.ops.convert_to_numpy(
                model.generate(ids, new_tokens)
            )
        else:
            calls[f"{batch}x{beams}"] = lambda ids=ids, b=beams: (
                keras.ops.convert_to_numpy(
                    model.beam_search(ids, new_tokens, beam_width=b)[0]
                )
            )
    medians = timing.interleaved(calls, repeats, min_seconds=0.3)
    print(json.dumps({"medians": {k: v["median"] for k, v in medians.items()}}))


def _run_worker(backend, precision, directory, args):
    command = [
        sys.executable, "-m", "benchmarks.quantization", "--worker", precision,
        "--directory", directory, "--new-tokens", str(args.new_tokens),
        "--repeats", str(args.repeats),
    ]  # fmt: skip
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run(
        command, capture_output=True, text=True, cwd=ROOT, env=env, check=False
    )
    if result.returncode:
        raise RuntimeError(f"{backend} {precision}: {result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def bleu(run_directory, limit=None):
    """Test BLEU of the run's model, float32 and int8, greedy (TensorFlow)."""
    from zoo.recipes import corpora
    from zoo.recipes import translator as recipe
    from zoo.recipes.model_dir import load_model_dir

    trained = load_model_dir(run_directory)
    pairs = corpora.translation_corpus("trans-de-en").test
    if limit:
        pairs = pairs[:limit]
    sources = [source for source, _ in pairs]
    references = [target for _, target in pairs]
    scores = {}
    for precision in PRECISIONS:
        if precision == "int8":
            trained.model.quantize("int8")
        began = time.perf_counter()
        outputs = recipe.translate_texts(trained.model, trained.preprocessor, sources)
        scores[precision] = {
            "bleu": recipe.corpus_bleu(outputs, references),
            "seconds": time.perf_counter() - began,
        }
    return {"sentences": len(pairs), "scores": scores}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--run", default=None, help="a trained translator's run")
    parser.add_argument("--bleu-only", action="store_true")
    parser.add_argument("--output", default=None)
    parser.add_argument("--worker", choices=PRECISIONS, default=None)
    parser.add_argument("--directory", default=None)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.directory, args.worker, args.new_tokens, args.repeats)
    results = {}
    if args.run:
        results["bleu"] = bleu(args.run)
        print(json.dumps(results["bleu"]))
    if not args.bleu_only:
        results.update(_throughput(args))
        _print_table(results)
    if args.output:
        with open(args.output, "w") as file:
            json.dump(results, file, indent=2)
    return 0


def _throughput(args):
    backends = args.backends.split(",")
    with tempfile.TemporaryDirectory() as directory:
        sizes = prepare(directory)
        names = [(b, p) for b in backends for p in PRECISIONS]
        runs = {name: [] for name in names}
        for round_ in range(args.rounds):
            for backend, precision in names:
                began = time.perf_counter()
                result = _run_worker(backend, precision, directory, args)
                runs[backend, precision].append(result["medians"])
                seconds = time.perf_counter() - began
                print(
                    f"round {round_ + 1} {backend} {precision}: {seconds:.0f} s",
                    file=sys.stderr,
                )
    named = {f"{backend} {precision}": m for (backend, precision), m in runs.items()}
    return {"throughput": throughput_rows(named, CASES), "sizes": sizes}


def _print_table(results):
    print(
        throughput_table(
            "backend, weights",
            results["throughput"],
            CASES,
            lambda name: name.split()[0] + " float32",
        )
    )
    print(size_line(".keras", results["sizes"]))


if __name__ == "__main__":
    sys.exit(main())
