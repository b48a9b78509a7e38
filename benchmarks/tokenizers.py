"""WordPiece against SentencePiece for the demo's translator
(benchmarks/README.md, "WordPiece or SentencePiece").

Each run trains what `keras-seq demo` trains (`settings.DEMO`: the `small`
translator on trans-de-en for `--minutes`, the mean of its last 5 epochs)
with one tokenizer, then scores the test split with 4 beams and greedily.
The tokenizers are compared at the same seed, budget and vocabulary size
(`--vocabulary-size`, the most each side may hold: SentencePiece learns
exactly that many pieces, WordPiece at most that many above its frequency
floor). `--tokenizers` picks which this process runs, so that the two can
run side by side, each in its own process on its own core
(`--threads 1`, `taskset`), under the same conditions. One CSV row a run
is appended to `--output` as it finishes; `--table` prints the paired
runs of a CSV as Markdown.

    taskset -c 0 python -m benchmarks.tokenizers --tokenizers wordpiece \\
        --threads 1 --output tokenizers.csv &
    taskset -c 1 python -m benchmarks.tokenizers --tokenizers sentencepiece \\
        --threads 1 --output tokenizers.csv
    python -m benchmarks.tokenizers --table tokenizers.csv
"""

import argparse
import csv
import os
import statistics
import tempfile
import time

FIELDS = (
    "tokenizer", "seed", "minutes", "threads", "bleu_beam4", "bleu_greedy",
    "bleu_beam4_lowercase", "epochs", "kept", "source_vocabulary",
    "target_vocabulary", "source_tokens_per_sentence",
    "target_tokens_per_sentence", "wall_minutes",
)  # fmt: skip
TOKENIZERS = ("wordpiece", "sentencepiece")


def _tokens_per_sentence(tokenizer, texts):
    """Mean pieces a sentence over `texts` (the test split)."""
    return sum(len(tokenizer.tokenize(text)) for text in texts) / len(texts)


def run_one(tokenizer, seed, minutes, threads):
    """One demo run with `tokenizer`; its CSV row as a dict."""
    from zoo.recipes import corpora, settings
    from zoo.recipes.recipe import Execution
    from zoo.recipes.translator import RECIPE

    chosen = settings.DEMO.replace(seed=seed, minutes=minutes, tokenizer=tokenizer)
    corpus = corpora.translation_corpus(
        None, chosen.variants, chosen.phrases, None, seed, dictionary=True
    )
    began = time.time()
    with tempfile.TemporaryDirectory() as output_dir:
        result = RECIPE.train(corpus, output_dir, chosen, Execution(verbose=0))
    sources, targets = zip(*corpus.test)
    return {
        "tokenizer": tokenizer, "seed": seed, "minutes": minutes,
        "threads": threads,
        "bleu_beam4": round(result.test_bleu["bleu_beam4"], 2),
        "bleu_greedy": round(result.test_bleu["bleu_greedy"], 2),
        "bleu_beam4_lowercase": round(result.test_bleu["bleu_beam4_lowercase"], 2),
        "epochs": len(result.history.get("loss", ())),
        "kept": (result.averaging or {}).get("kept", "last"),
        "source_vocabulary": int(result.source_tokenizer.vocabulary_size()),
        "target_vocabulary": int(result.target_tokenizer.vocabulary_size()),
        "source_tokens_per_sentence": round(
            _tokens_per_sentence(result.source_tokenizer, sources), 2),
        "target_tokens_per_sentence": round(
            _tokens_per_sentence(result.target_tokenizer, targets), 2),
        "wall_minutes": round((time.time() - began) / 60, 2),
    }  # fmt: skip


def pairs_table(rows):
    """Markdown: each seed's two runs side by side, then the medians and
    which tokenizer scored higher in how many seeds."""
    runs = {}
    for row in rows:
        runs.setdefault((float(row["minutes"]), int(row["seed"])), {})[
            row["tokenizer"]
        ] = row
    lines = [
        "| --minutes | seed | WordPiece: BLEU 4 beams, greedy, epochs, "
        "vocabularies, pieces a sentence (source/target) | SentencePiece "
        "(unigram): the same | SentencePiece - WordPiece, 4 beams |",
        "|---|---|---|---|---|",
    ]
    gaps = []
    for (minutes, seed), pair in sorted(runs.items()):
        if set(pair) != set(TOKENIZERS):
            continue
        cells = [
            f"{r['bleu_beam4']}, {r['bleu_greedy']}, {r['epochs']}, "
            f"{int(r['source_vocabulary']):,}/{int(r['target_vocabulary']):,}, "
            f"{r['source_tokens_per_sentence']}/{r['target_tokens_per_sentence']}"
            for r in (pair["wordpiece"], pair["sentencepiece"])
        ]
        gap = float(pair["sentencepiece"]["bleu_beam4"]) - float(
            pair["wordpiece"]["bleu_beam4"]
        )
        gaps.append(gap)
        lines.append(f"| {minutes:g} | {seed} | {cells[0]} | {cells[1]} | {gap:+.2f} |")
    if gaps:
        higher = sum(g > 0 for g in gaps)
        lines.append(
            f"\npaired runs: {len(gaps)}; SentencePiece higher in {higher}, "
            f"WordPiece higher in {sum(g < 0 for g in gaps)}; median difference "
            f"{statistics.median(gaps):+.2f} BLEU"
        )
    return "\n".join(lines)


def _append(path, row):
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        if new:
            writer.writeheader()
        writer.writerow(row)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizers", nargs="+", default=list(TOKENIZERS),
                        choices=TOKENIZERS)  # fmt: skip
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--minutes", type=float, default=None,
                        help="the training budget (default: the demo's)")  # fmt: skip
    parser.add_argument("--threads", type=int, default=None,
                        help="TensorFlow's threads (default: all)")  # fmt: skip
    parser.add_argument("--output", default="tokenizers.csv")
    parser.add_argument("--table", metavar="CSV",
                        help="print the paired runs of CSV and stop")  # fmt: skip
    args = parser.parse_args(argv)
    if args.table:
        with open(args.table) as f:
            print(pairs_table(list(csv.DictReader(f))))
        return
    import tensorflow as tf

    from zoo.recipes import settings

    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    minutes = args.minutes or settings.DEMO.minutes
    for seed in args.seeds:
        for tokenizer in args.tokenizers:
            row = run_one(tokenizer, seed, minutes, args.threads or os.cpu_count())
            _append(args.output, row)
            print(row, flush=True)


if __name__ == "__main__":
    main()
