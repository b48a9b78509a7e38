"""Streaming against whole translations at batch 1: through CTranslate2,
and through the Keras model on TensorFlow, JAX and PyTorch.

For the `small` translator (random weights, the end token's bias pushed
down so that every translation runs all `--new-tokens` steps), one
sentence at a time:

- `whole`: a greedy translation (`CTranslate2Model.translate(...,
  beam_width=1)` of its CTranslate2 export, float32; or
  `TrainedModel.translate(..., beam_width=1)`, the compiled loop), the
  latency of the whole translation;
- `stream`: `CTranslate2Model.stream` or `TrainedModel.stream`, the time
  to its first piece and to its last.

Both are taken in turn in one process per engine (CTranslate2's never
imports TensorFlow), after a warm-up, and each figure is the median over
`--repeats` sentences; the ratio `stream total / whole` is the cost of
streaming, and `first piece / whole` what a reader waits before the first
word. The Keras engines also report their first call (the warm-up's first
sentence): the compiled loop's includes its compilation, the stream's
none.

    python -m benchmarks.streaming --output benchmarks/results/streaming.json
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


ENGINES = ("ctranslate2", "tensorflow", "jax", "torch")


def prepare(directory):
    """Writes the `small` translator, its preprocessor and its CTranslate2
    export under `directory`."""
    from benchmarks.ctranslate2 import fixed_work_translator
    from keras_seq.export.ctranslate2 import export_ctranslate2

    model, preprocessor = fixed_work_translator()
    preprocessor.save(directory)
    model.save(os.path.join(directory, "model.keras"))
    export_ctranslate2(model, directory, os.path.join(directory, "ct2"), "float32")


def _engine(name, directory, new_tokens):
    """`(translate, stream)` of one sentence through `name`."""
    if name == "ctranslate2":
        from zoo.serving.ctranslate2_model import CTranslate2Model

        model = CTranslate2Model(os.path.join(directory, "ct2"))
        model.settings["max_decoding_length"] = new_tokens
        return (
            lambda sentence: model.translate([sentence], beam_width=1)[0],
            model.stream,
        )
    import keras

    from keras_seq import text
    from zoo.recipes.trained import TrainedModel

    model = keras.saving.load_model(os.path.join(directory, "model.keras"))
    preprocessor = text.TranslationPreprocessor.load(directory)
    trained = TrainedModel.of("translator", model, preprocessor)
    return (
        lambda s: trained.translate(s, beam_width=1, max_new_tokens=new_tokens),
        lambda s: trained.stream(s, max_new_tokens=new_tokens),
    )


def worker(engine, directory, new_tokens, repeats, words):
    """Prints one JSON line of medians (seconds), in this process."""
    from benchmarks.ctranslate2 import _sentences

    translate, stream = _engine(engine, directory, new_tokens)
    with open(os.path.join(directory, "source_vocabulary.txt"), encoding="utf-8") as f:
        vocabulary = f.read().splitlines()
    sentences = _sentences(vocabulary, repeats + 2, words, seed=0)
    whole, first, total, pieces, first_call = [], [], [], [], {}
    for index, sentence in enumerate(sentences):
        start = time.perf_counter()
        expected = translate(sentence)
        whole_seconds = time.perf_counter() - start
        start = time.perf_counter()
        got, first_seconds = [], None
        for piece in stream(sentence):
            if first_seconds is None:
                first_seconds = time.perf_counter() - start
            got.append(piece)
        total_seconds = time.perf_counter() - start
        assert "".join(got) == expected
        if index == 0:
            first_call = {"whole": whole_seconds, "stream_first": first_seconds}
        if index < 2:  # Warm-up.
            continue
        whole.append(whole_seconds)
        first.append(first_seconds)
        total.append(total_seconds)
        pieces.append(len(got))
    loaded = [m for m in ("tensorflow", "keras") if m in sys.modules]
    figures = {
        "whole": statistics.median(whole),
        "stream_first": statistics.median(first),
        "stream_total": statistics.median(total),
        "pieces": statistics.median(pieces),
        "loaded": loaded,
    }
    if engine != "ctranslate2":
        figures["first_call"] = first_call
    print(json.dumps(figures))


def _ratios(figures, new_tokens):
    figures.update(
        tokens_per_second_whole=new_tokens / figures["whole"],
        tokens_per_second_stream=new_tokens / figures["stream_total"],
        stream_over_whole=figures["stream_total"] / figures["whole"],
        first_over_whole=figures["stream_first"] / figures["whole"],
    )
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    parser.add_argument("--output", default=None)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--directory", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    from benchmarks import config as config_lib

    words = config_lib.real_length(config_lib.CONFIGS["small"]["length"])
    if args.worker:
        worker(args.worker, args.directory, args.new_tokens, args.repeats, words)
        return 0
    results = {}
    with tempfile.TemporaryDirectory() as directory:
        prepare(directory)
        for engine in args.engines:
            command = [
                sys.executable, "-m", "benchmarks.streaming", "--worker", engine,
                "--directory", directory, "--new-tokens", str(args.new_tokens),
                "--repeats", str(args.repeats),
            ]  # fmt: skip
            backend = "tensorflow" if engine == "ctranslate2" else engine
            env = dict(
                os.environ, PYTHONPATH=ROOT, KERAS_BACKEND=backend,
                TF_CPP_MIN_LOG_LEVEL="3",
            )  # fmt: skip
            done = subprocess.run(
                command, capture_output=True, text=True, check=True, env=env
            )
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            results[engine] = _ratios(figures, args.new_tokens)
    results.update(
        new_tokens=args.new_tokens,
        repeats=args.repeats,
        date=time.strftime("%Y-%m-%d %H:%M"),
        load=os.getloadavg(),
    )
    text = json.dumps(results, indent=2)
    print(text)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as file:
            file.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
