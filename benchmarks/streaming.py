"""Streaming against whole translations, through CTranslate2, at batch 1.

For the `small` translator (random weights, the end token's bias pushed
down so that every translation runs all `--new-tokens` steps) exported to
CTranslate2 (float32), one sentence at a time:

- `whole`: `CTranslate2Model.translate(..., beam_width=1)`, the latency of
  the whole translation;
- `stream`: `CTranslate2Model.stream`, the time to its first piece and to
  its last.

Both are taken in turn in one process that never imports TensorFlow, after
a warm-up, and each figure is the median over `--repeats` sentences; the
ratio `stream total / whole` is the cost of streaming, and `first piece /
whole` what a reader waits before the first word.

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


def prepare(directory):
    """Writes the `small` translator's CTranslate2 export under `directory`."""
    from benchmarks.ctranslate2 import fixed_work_translator
    from keras_seq.export.ctranslate2 import export_ctranslate2

    model, preprocessor = fixed_work_translator()
    preprocessor.save(directory)
    export_ctranslate2(model, directory, os.path.join(directory, "ct2"), "float32")


def worker(directory, new_tokens, repeats, words):
    """Prints one JSON line of medians (seconds), in this process."""
    from benchmarks.ctranslate2 import _sentences
    from zoo.serving.ctranslate2_model import CTranslate2Model

    model = CTranslate2Model(os.path.join(directory, "ct2"))
    model.settings["max_decoding_length"] = new_tokens
    with open(os.path.join(directory, "source_vocabulary.txt"), encoding="utf-8") as f:
        vocabulary = f.read().splitlines()
    sentences = _sentences(vocabulary, repeats + 2, words, seed=0)
    whole, first, total, pieces = [], [], [], []
    for index, sentence in enumerate(sentences):
        start = time.perf_counter()
        expected = model.translate([sentence], beam_width=1)[0]
        whole_seconds = time.perf_counter() - start
        start = time.perf_counter()
        got, first_seconds = [], None
        for piece in model.stream(sentence):
            if first_seconds is None:
                first_seconds = time.perf_counter() - start
            got.append(piece)
        total_seconds = time.perf_counter() - start
        assert "".join(got) == expected
        if index < 2:  # Warm-up.
            continue
        whole.append(whole_seconds)
        first.append(first_seconds)
        total.append(total_seconds)
        pieces.append(len(got))
    loaded = [m for m in ("tensorflow", "keras") if m in sys.modules]
    print(
        json.dumps(
            {
                "whole": statistics.median(whole),
                "stream_first": statistics.median(first),
                "stream_total": statistics.median(total),
                "pieces": statistics.median(pieces),
                "loaded": loaded,
            }
        )
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--output", default=None)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--directory", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    from benchmarks import config as config_lib

    words = config_lib.real_length(config_lib.CONFIGS["small"]["length"])
    if args.worker:
        worker(args.directory, args.new_tokens, args.repeats, words)
        return 0
    with tempfile.TemporaryDirectory() as directory:
        prepare(directory)
        command = [
            sys.executable, "-m", "benchmarks.streaming", "--worker",
            "--directory", directory, "--new-tokens", str(args.new_tokens),
            "--repeats", str(args.repeats),
        ]  # fmt: skip
        env = dict(os.environ, PYTHONPATH=ROOT)
        done = subprocess.run(
            command, capture_output=True, text=True, check=True, env=env
        )
        figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures.update(
        new_tokens=args.new_tokens,
        repeats=args.repeats,
        date=time.strftime("%Y-%m-%d"),
        load=os.getloadavg(),
        tokens_per_second_whole=args.new_tokens / figures["whole"],
        tokens_per_second_stream=args.new_tokens / figures["stream_total"],
        stream_over_whole=figures["stream_total"] / figures["whole"],
        first_over_whole=figures["stream_first"] / figures["whole"],
    )
    text = json.dumps(figures, indent=2)
    print(text)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as file:
            file.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
