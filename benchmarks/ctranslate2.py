"""Translation throughput: SavedModel, in-process TensorFlow and CTranslate2.

Sentences per second at batch 1 and 32, greedy and with 4 beams, for the
`small` translator (random weights) over a synthetic 8,000-token
vocabulary: its SavedModel (`serving_default` and `beam_search`), the Keras
model in process (`generate_preprocess`, `generate` or `beam_search`,
`detokenize`, on TensorFlow), and its CTranslate2 exports in float32 and
int8 (`zoo.serving.ctranslate2_model`, tokenization included). The output
bias of the end token is pushed down, so every translation runs all
`--new-tokens` steps on every path: each figure measures the same work.

Every implementation is timed in fresh processes, taken in turn
(`--rounds` rounds of one process each), and each figure is the median of
the per-process medians; CTranslate2 runs in processes that never import
TensorFlow. The int8 and float32 `model.bin` sizes are reported too.

    python -m benchmarks.ctranslate2 --rounds 3 --output results.json
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from benchmarks.report import size_line, throughput_rows, throughput_table

IMPLEMENTATIONS = ("savedmodel", "tensorflow", "ct2-float32", "ct2-int8")
CASES = tuple((batch, beams) for beams in (1, 4) for batch in (1, 32))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _vocabulary(size):
    from keras_seq import text

    reserved = list(text.RESERVED_TOKENS)
    return reserved + [f"w{i}" for i in range(size - len(reserved))]


def _sentences(vocabulary, batch, words, seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    picks = rng.integers(5, len(vocabulary), (batch, words))
    return [" ".join(vocabulary[i] for i in row) for row in picks]


def fixed_work_translator():
    """The `small` translator (random weights) that never ends early, so
    every path decodes the same number of tokens, and its preprocessor
    over synthetic vocabularies."""
    import numpy as np

    from benchmarks import config as config_lib
    from benchmarks.training import OURS, build_keras
    from keras_seq import text

    config = config_lib.CONFIGS["small"]
    model = build_keras(OURS, config)
    bias = np.asarray(model.output_dense.bias)
    bias[text.END_ID] = -1e4  # Never end early: a fixed amount of work.
    model.output_dense.bias.assign(bias)
    preprocessor = text.TranslationPreprocessor(
        text.make_tokenizer(_vocabulary(config["source_vocabulary_size"])),
        text.make_tokenizer(_vocabulary(config["target_vocabulary_size"])),
        max_length=model.max_length,
    )
    return model, preprocessor


def prepare(directory, new_tokens):
    """Writes the model, its SavedModel and its two CTranslate2 exports."""
    from keras_seq.export import export_translator
    from keras_seq.export.ctranslate2 import export_ctranslate2

    model, preprocessor = fixed_work_translator()
    preprocessor.save(directory)
    model.save(os.path.join(directory, "model.keras"))
    export_translator(
        model, preprocessor, os.path.join(directory, "saved"), max_new_tokens=new_tokens
    )
    for quantization in ("float32", "int8"):
        out = os.path.join(directory, f"ct2-{quantization}")
        export_ctranslate2(model, directory, out, quantization)
    return {
        f"{q}_bytes": os.path.getsize(os.path.join(directory, f"ct2-{q}", "model.bin"))
        for q in ("float32", "int8")
    }


def _calls(implementation, directory, new_tokens, words, threads):
    """dict (batch, beams) -> a zero-argument callable translating a batch."""
    with open(os.path.join(directory, "source_vocabulary.txt"), encoding="utf-8") as f:
        vocabulary = f.read().splitlines()
    batches = {
        case: _sentences(vocabulary, case[0], words, seed=case[0]) for case in CASES
    }
    if implementation.startswith("ct2"):
        # As `keras-seq translate --ctranslate2`: no TensorFlow, no Keras.
        from zoo.serving.ctranslate2_model import CTranslate2Model

        model = CTranslate2Model(
            os.path.join(directory, implementation), intra_threads=threads
        )
        model.settings["max_decoding_length"] = new_tokens
        return {
            case: (lambda s=s, b=case[1]: model.translate(s, beam_width=b))
            for case, s in batches.items()
        }
    import tensorflow as tf

    if implementation == "savedmodel":
        from keras_seq.export.saved_model import DEFAULT_VERSION

        path = os.path.join(directory, "saved", str(DEFAULT_VERSION))
        signatures = tf.saved_model.load(path).signatures
        names = {1: "serving_default", 4: "beam_search"}
        tensors = {case: tf.constant(s) for case, s in batches.items()}
        return {
            case: (lambda s=s, f=signatures[names[case[1]]]: f(sentences=s))
            for case, s in tensors.items()
        }
    import keras

    import zoo  # noqa: F401  (registers the model class)
    from keras_seq import text

    model = keras.saving.load_model(os.path.join(directory, "model.keras"))
    preprocessor = text.TranslationPreprocessor.load(directory)

    def translate(sentences, beams):
        ids = preprocessor.generate_preprocess(sentences)
        if beams == 1:
            generated = model.generate(ids, new_tokens)
        else:
            generated, _ = model.beam_search(ids, new_tokens, beam_width=beams)
            generated = generated[:, 0]
        return preprocessor.detokenize(keras.ops.convert_to_numpy(generated))

    tensors = {case: tf.constant(s) for case, s in batches.items()}
    return {
        case: (lambda s=s, b=case[1]: translate(s, b)) for case, s in tensors.items()
    }


def worker(implementation, directory, new_tokens, repeats, threads):
    """Prints one JSON line: case -> median seconds per call, in this process."""
    from benchmarks import config as config_lib
    from benchmarks import timing

    words = config_lib.real_length(config_lib.CONFIGS["small"]["length"])
    calls = _calls(implementation, directory, new_tokens, words, threads)
    medians = timing.interleaved(
        {f"{b}x{k}": fn for (b, k), fn in calls.items()}, repeats, min_seconds=0.3
    )
    heavy = [m for m in ("tensorflow", "keras") if m in sys.modules]
    print(json.dumps({"medians": {k: v["median"] for k, v in medians.items()},
                      "loaded": heavy}))  # fmt: skip


def _run_worker(implementation, directory, args):
    command = [
        sys.executable, "-m", "benchmarks.ctranslate2", "--worker", implementation,
        "--directory", directory, "--new-tokens", str(args.new_tokens),
        "--repeats", str(args.repeats), "--ct2-threads", str(args.ct2_threads),
    ]  # fmt: skip
    env = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run(
        command, capture_output=True, text=True, cwd=ROOT, env=env, check=False
    )
    if result.returncode:
        raise RuntimeError(f"{implementation}: {result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument(
        "--ct2-threads",
        type=int,
        default=1,
        help="CTranslate2's intra_threads (0: its default); on a small, shared "
        "machine more threads than free cores slow float32 down many times",
    )
    parser.add_argument("--output", default=None)
    parser.add_argument("--worker", choices=IMPLEMENTATIONS, default=None)
    parser.add_argument("--directory", default=None)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(
            args.worker, args.directory, args.new_tokens, args.repeats, args.ct2_threads
        )
    with tempfile.TemporaryDirectory() as directory:
        sizes = prepare(directory, args.new_tokens)
        runs = {name: [] for name in IMPLEMENTATIONS}
        loaded = {}
        for round_ in range(args.rounds):
            for name in IMPLEMENTATIONS:
                began = time.perf_counter()
                result = _run_worker(name, directory, args)
                runs[name].append(result["medians"])
                loaded[name] = result["loaded"]
                seconds = time.perf_counter() - began
                print(f"round {round_ + 1} {name}: {seconds:.0f} s", file=sys.stderr)
    results = {
        "throughput": throughput_rows(runs, CASES),
        "sizes": sizes,
        "loaded_modules": loaded,
        "ct2_threads": args.ct2_threads,
    }
    _print_table(results)
    if args.output:
        with open(args.output, "w") as file:
            json.dump(results, file, indent=2)
    return 0


def _print_table(results):
    print(
        throughput_table(
            "implementation", results["throughput"], CASES, lambda _: "savedmodel"
        )
    )
    print(f"modules loaded by each worker: {results['loaded_modules']}")
    print(size_line("model.bin", results["sizes"]))


if __name__ == "__main__":
    sys.exit(main())
