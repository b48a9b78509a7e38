"""WordPiece against SentencePiece for the demo's translator
(docs/experiments.md, "WordPiece or SentencePiece").

Each run trains what `keras-seq demo` trains (`settings.DEMO`: the `small`
translator on trans-de-en for `--minutes`, the mean of its last 5 epochs)
with one tokenizer, then scores the test split with 4 beams and greedily.
The tokenizers are compared at the same seed, budget and vocabulary size
(`--vocabulary-size`, the most each side may hold: SentencePiece learns
exactly that many pieces, WordPiece at most that many above its frequency
floor, so that a SentencePiece arm at WordPiece's learned size tells the
segmentation from the size). `--tokenizers` picks which this process
runs, so that the two can run side by side, each in its own process on its
own core (`--threads 1`, `taskset`), under the same conditions. One CSV
row a run is appended to `--output` as it finishes; `--table` prints the
paired runs of the CSVs as Markdown.

    taskset -c 0 python -m benchmarks.tokenizers --tokenizers wordpiece \\
        --threads 1 --output wordpiece.csv &
    taskset -c 1 python -m benchmarks.tokenizers --tokenizers sentencepiece \\
        --threads 1 --output sentencepiece.csv
    python -m benchmarks.tokenizers --table wordpiece.csv sentencepiece.csv
"""

import argparse
import csv
import os
import statistics
import tempfile
import time

FIELDS = (
    "tokenizer", "seed", "minutes", "threads", "bleu_beam4", "bleu_greedy",
    "bleu_beam4_lowercase", "epochs", "kept", "vocabulary_size", "source_vocabulary",
    "target_vocabulary", "source_tokens_per_sentence",
    "target_tokens_per_sentence", "wall_minutes",
)  # fmt: skip
TOKENIZERS = ("wordpiece", "sentencepiece")
DEFAULT_SIZE = 8000  # `TranslatorSettings.vocabulary_size`, what `train` asks.


def _tokens_per_sentence(tokenizer, texts):
    """Mean pieces a sentence over `texts` (the test split)."""
    return sum(len(tokenizer.tokenize(text)) for text in texts) / len(texts)


def run_one(tokenizer, seed, minutes, threads, vocabulary_size=DEFAULT_SIZE):
    """One demo run with `tokenizer`; its CSV row as a dict."""
    from zoo.recipes import corpora, settings
    from zoo.recipes.recipe import Execution
    from zoo.recipes.translator import RECIPE

    chosen = settings.DEMO.replace(
        seed=seed, minutes=minutes, tokenizer=tokenizer, vocabulary_size=vocabulary_size
    )
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
        "vocabulary_size": vocabulary_size,
        "source_vocabulary": int(result.source_tokenizer.vocabulary_size()),
        "target_vocabulary": int(result.target_tokenizer.vocabulary_size()),
        "source_tokens_per_sentence": round(
            _tokens_per_sentence(result.source_tokenizer, sources), 2),
        "target_tokens_per_sentence": round(
            _tokens_per_sentence(result.target_tokenizer, targets), 2),
        "wall_minutes": round((time.time() - began) / 60, 2),
    }  # fmt: skip


def _arm(row):
    """(tokenizer, the vocabulary size asked) of a CSV row."""
    return row["tokenizer"], int(row.get("vocabulary_size") or DEFAULT_SIZE)


def _arm_name(arm):
    name = {"wordpiece": "WordPiece", "sentencepiece": "SentencePiece"}[arm[0]]
    return f"{name} ({arm[1]:,} asked)"


def pairs_table(rows):
    """Markdown: each seed's runs side by side, WordPiece first, then for
    each other arm how many seeds it scored higher in (4 beams) and the
    median difference."""
    runs = {}
    for row in rows:
        key = (float(row["minutes"]), int(row["seed"]))
        runs.setdefault(key, {})[_arm(row)] = row
    arms = sorted({arm for pair in runs.values() for arm in pair}, key=_order)
    lines = [
        "| --minutes | seed | "
        + " | ".join(
            f"{_arm_name(arm)}: BLEU 4 beams, greedy, epochs, vocabularies, "
            "pieces a sentence (source/target)"
            for arm in arms
        )
        + " |",
        "|---|---|" + "---|" * len(arms),
    ]
    gaps = {arm: [] for arm in arms[1:]}
    for (minutes, seed), pair in sorted(runs.items()):
        if arms[0] not in pair or len(pair) < 2:
            continue
        cells = [
            f"{r['bleu_beam4']}, {r['bleu_greedy']}, {r['epochs']}, "
            f"{int(r['source_vocabulary']):,}/{int(r['target_vocabulary']):,}, "
            f"{r['source_tokens_per_sentence']}/{r['target_tokens_per_sentence']}"
            if r
            else "not run"
            for r in (pair.get(arm) for arm in arms)
        ]
        for arm in arms[1:]:
            if arm in pair:
                gaps[arm].append(
                    float(pair[arm]["bleu_beam4"]) - float(pair[arms[0]]["bleu_beam4"])
                )
        lines.append(f"| {minutes:g} | {seed} | " + " | ".join(cells) + " |")
    verdicts = [
        f"{_arm_name(arm)} against {_arm_name(arms[0])}, 4 beams: "
        f"{len(arm_gaps)} paired runs, higher in {sum(g > 0 for g in arm_gaps)}, "
        f"lower in {sum(g < 0 for g in arm_gaps)}; median difference "
        f"{statistics.median(arm_gaps):+.2f} BLEU"
        for arm, arm_gaps in gaps.items()
        if arm_gaps
    ]
    return "\n".join(lines + [""] * bool(verdicts) + verdicts)


def _order(arm):
    return arm[0] != "wordpiece", -arm[1]


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
    parser.add_argument("--vocabulary-size", type=int, default=DEFAULT_SIZE,
                        help="the most pieces a side may hold")  # fmt: skip
    parser.add_argument("--output", default="tokenizers.csv")
    parser.add_argument("--table", metavar="CSV", nargs="+",
                        help="print the paired runs of the CSVs and stop")  # fmt: skip
    args = parser.parse_args(argv)
    if args.table:
        rows = []
        for path in args.table:
            with open(path) as f:
                rows += list(csv.DictReader(f))
        print(pairs_table(rows))
        return
    import tensorflow as tf

    from zoo.recipes import settings

    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    minutes = args.minutes or settings.DEMO.minutes
    for seed in args.seeds:
        for tokenizer in args.tokenizers:
            row = run_one(
                tokenizer, seed, minutes, args.threads or os.cpu_count(),
                args.vocabulary_size,
            )  # fmt: skip
            _append(args.output, row)
            print(row, flush=True)


if __name__ == "__main__":
    main()
