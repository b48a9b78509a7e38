"""Decoding speed of the `small` translator: cached loops against full
recomputation, and beam search against greedy.

Run: `python benchmarks/generation.py [--repeats 5] [--output FILE]`.

Every figure is the median of `--repeats` timed runs after one warm-up run
(which compiles). "Recompute" is how the keras.io recipe decodes: the whole
decoder runs again on the padded target at every step and the logits of the
newest position are read; here that forward pass is compiled once with XLA
for a fixed padded length, so the comparison is of algorithms, not of
compilation. Writes a Markdown table (stdout and `--output`).
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import zoo  # noqa: E402

START, END = 2, 3
SOURCE_LENGTH = 24
NEW_TOKENS = 32


def _median_seconds(fn, repeats):
    fn()  # Warm-up: compiles.
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def _recompute_fn(model, source):
    """Greedy decoding by rerunning the full model at every step."""
    batch = source.shape[0]
    length = NEW_TOKENS + 1
    source = tf.constant(source)

    @tf.function(jit_compile=True)
    def logits_at(decoder_ids, index):
        logits = model(
            {"encoder_token_ids": source, "decoder_token_ids": decoder_ids},
            training=False,
        )
        return tf.gather(logits, index, axis=1)  # (B, V)

    def run():
        ids = np.zeros((batch, length), "int32")
        ids[:, 0] = START
        for t in range(NEW_TOKENS):
            # An end token never stops it, as with `end_token_id=-1` below.
            step = logits_at(ids, tf.constant(t)).numpy()
            if t + 1 < length:
                ids[:, t + 1] = step.argmax(-1)
        return ids

    return run


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", default="benchmarks/results/generation.md")
    args = parser.parse_args(argv)
    if keras.backend.backend() != "tensorflow":
        sys.exit("benchmarks/generation.py runs on the TensorFlow backend.")

    keras.utils.set_random_seed(0)
    model = zoo.build_translator("small")
    rows = []
    for batch in (1, 32):
        source = np.random.default_rng(batch).integers(5, 8000, (batch, SOURCE_LENGTH))
        source = source.astype("int32")
        source[:, -SOURCE_LENGTH // 4 :] = 0  # The last quarter is padding.

        def greedy(source=source):
            return np.asarray(
                model.generate(source, max_new_tokens=NEW_TOKENS, end_token_id=-1)
            )

        def beam(source=source):
            return np.asarray(
                model.beam_search(source, NEW_TOKENS, beam_width=4, end_token_id=-1)[0]
            )

        cached = _median_seconds(greedy, args.repeats)
        recompute = _median_seconds(_recompute_fn(model, source), args.repeats)
        beamed = _median_seconds(beam, args.repeats)
        tokens = batch * NEW_TOKENS
        rows.append(
            f"| {batch} | {cached * 1e3:.1f} | {tokens / cached:,.0f} "
            f"| {recompute * 1e3:.1f} | {recompute / cached:.1f}x "
            f"| {beamed * 1e3:.1f} | {beamed / cached:.2f}x |"
        )
        print(rows[-1], flush=True)

    table = "\n".join(
        [
            f"`small` translator, source length {SOURCE_LENGTH} (last quarter "
            f"padding), {NEW_TOKENS} new tokens, TensorFlow "
            f"{__import__('tensorflow').__version__}, median of {args.repeats}.",
            "",
            "| batch | cached greedy (ms) | tokens/s | recompute greedy (ms) "
            "| speed-up | beam 4 (ms) | beam / greedy |",
            "|---|---|---|---|---|---|---|",
            *rows,
        ]
    )
    print(table)
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as file:
        file.write(table + "\n")


if __name__ == "__main__":
    main()
