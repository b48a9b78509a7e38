"""How many graphs translating many batches of different lengths compiles.

Run: `python benchmarks/compilation.py [--batches 100]`.

`translate_texts` pads each batch of sources to a length bucket (the
`TranslationPreprocessor`'s `bucket_boundaries`) and keeps the batch size
fixed, so the compiled decoding loop exists in at most one shape per
bucket, however many batches come.
This script translates `--batches` batches of random lengths (1 to 60
words) with the `small` translator and counts the traces of the compiled
function and the distinct input shapes it receives: `reduce_retracing`
keeps one trace for all shapes, and XLA compiles one executable per distinct
shape, so the shapes are what counts.
"""

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import zoo  # noqa: E402
from keras_seq import text  # noqa: E402
from keras_seq.generation import sampling  # noqa: E402
from zoo.recipes import translator as recipe  # noqa: E402

WORDS = [f"w{i}" for i in range(200)]
SHAPES = set()


def _recording(compile_fn):
    """Wraps the compiler so that every input shape a compiled loop sees is kept."""

    def compile_and_record(fn, *args, **kwargs):
        compiled = compile_fn(fn, *args, **kwargs)

        def call(*inputs):
            SHAPES.add(tuple(tuple(x.shape) for x in inputs if hasattr(x, "shape")))
            return compiled(*inputs)

        call.compiled = compiled
        return call

    return compile_and_record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--output", default="benchmarks/results/compilation.md")
    args = parser.parse_args(argv)
    if keras.backend.backend() != "tensorflow":
        sys.exit("benchmarks/compilation.py runs on the TensorFlow backend.")

    sampling.compile_for_backend = _recording(sampling.compile_for_backend)
    vocabulary = list(text.RESERVED_TOKENS) + WORDS + ["."]
    tokenizer = text.make_tokenizer(vocabulary)
    keras.utils.set_random_seed(0)
    model = zoo.build_translator("small", vocabulary_size=len(vocabulary))
    preprocessor = text.TranslationPreprocessor(tokenizer, max_length=model.max_length)
    rng = np.random.default_rng(0)
    lengths = set()
    began = time.perf_counter()
    for _ in range(args.batches):
        longest = rng.integers(1, 61)
        sizes = rng.integers(1, longest + 1, args.batch_size)
        lengths.add(int(sizes.max()))
        sentences = [" ".join(rng.choice(WORDS, n)) + "." for n in sizes]
        recipe.translate_texts(
            model, preprocessor, sentences, batch_size=args.batch_size,
            max_new_tokens=16,
        )  # fmt: skip
    seconds = time.perf_counter() - began
    functions = model.__dict__["_generate_functions"]
    traces = sum(
        f.compiled.experimental_get_tracing_count() for f in functions.values()
    )
    table = (
        f"{args.batches} batches of {args.batch_size} sentences, {len(lengths)} "
        f"different longest-sentence lengths: {len(SHAPES)} compiled XLA "
        f"executables (one per length bucket met; buckets "
        f"{preprocessor.bucket_boundaries}), {traces} traced graphs, "
        f"{seconds:.1f} s in all."
    )
    print(table)
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as file:
        file.write(table + "\n")


if __name__ == "__main__":
    main()
