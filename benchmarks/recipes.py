"""The translator's two recipes against time budgets (docs/experiments.md,
"Recipes against time budgets").

Each paired run trains the `small` translator with the default recipe plus
the demo's averaging (`average_last_epochs=5`, kept only when it scores at
least the last weights) and with `low-resource`, on the same training
pairs, seed and `--minutes`, then scores the test split greedily. The two
recipes of a pair run one after the other in this process, their order
alternating with the seed so that neither always runs first. One CSV row
a run is appended to `--output` as it finishes (an interrupted grid keeps
what it measured), and a Markdown table of the pairs is printed at the end.

    python -m benchmarks.recipes --tasks de-en --sizes 2000 all \\
        --minutes 5 --seeds 0 1 2 --output recipes.csv
"""

import argparse
import csv
import dataclasses
import itertools
import os
import tempfile
import time

FIELDS = (
    "task", "train_pairs", "minutes", "seed", "recipe", "bleu", "bleu_lowercase",
    "epochs", "kept", "bleu_last", "bleu_average", "wall_minutes",
)  # fmt: skip


def _corpus(task, size, seed):
    """trans-de-en German to English, or reversed (English to German)."""
    from zoo.recipes import corpora

    train_pairs = None if size == "all" else int(size)
    corpus = corpora.translation_corpus(None, train_pairs=train_pairs, seed=seed)
    if task == "en-de":
        corpus = dataclasses.replace(
            corpus,
            **{
                name: [(t, s) for s, t in getattr(corpus, name)]
                for name in ("train", "validation", "test")
            },
        )
    return corpus


def _settings(recipe, minutes, seed):
    from zoo.recipes import settings

    base = settings.TRANSLATOR_RECIPES[recipe]
    averaging = {} if recipe == "low-resource" else {"average_last_epochs": 5}
    return base.replace(
        epochs=1000, minutes=minutes, seed=seed, beam_width=1, **averaging
    )


def run_one(task, size, minutes, seed, recipe):
    """One run; its CSV row as a dict."""
    from zoo.recipes.recipe import Execution
    from zoo.recipes.translator import RECIPE

    corpus = _corpus(task, size, seed)
    began = time.time()
    with tempfile.TemporaryDirectory() as output_dir:
        result = RECIPE.train(
            corpus, output_dir, _settings(recipe, minutes, seed), Execution(verbose=0)
        )
    averaging = result.averaging or {}
    return {
        "task": task, "train_pairs": len(corpus.train), "minutes": minutes,
        "seed": seed, "recipe": recipe,
        "bleu": round(result.test_bleu["bleu_greedy"], 2),
        "bleu_lowercase": round(result.test_bleu["bleu_greedy_lowercase"], 2),
        "epochs": len(result.history.get("loss", ())),
        "kept": averaging.get("kept", "last"),
        "bleu_last": averaging.get("bleu_last", ""),
        "bleu_average": averaging.get("bleu_average", ""),
        "wall_minutes": round((time.time() - began) / 60, 2),
    }  # fmt: skip


def _pairs_table(rows):
    """Markdown rows: each pair of runs side by side."""
    runs = {}
    for row in rows:
        key = (row["task"], row["train_pairs"], row["minutes"], row["seed"])
        runs.setdefault(key, {})[row["recipe"]] = row
    lines = [
        "| task | train pairs | --minutes | seed | default + mean of last 5: "
        "BLEU greedy (lowercased), epochs, kept | low-resource: the same "
        "| wall minutes |",
        "|---|---|---|---|---|---|---|",
    ]
    wins = {"default": 0, "low-resource": 0, "tied": 0}
    for key, pair in sorted(runs.items()):
        if len(pair) < 2:
            continue
        cells = [
            f"{r['bleu']} ({r['bleu_lowercase']}), {r['epochs']}, {r['kept']}"
            for r in (pair["default"], pair["low-resource"])
        ]
        walls = ", ".join(
            str(pair[r]["wall_minutes"]) for r in ("default", "low-resource")
        )
        lines.append(f"| {key[0]} | {int(key[1]):,} | {key[2]} | {key[3]} | "
                     f"{cells[0]} | {cells[1]} | {walls} |")  # fmt: skip
        gap = float(pair["default"]["bleu"]) - float(pair["low-resource"]["bleu"])
        wins["default" if gap > 0 else "low-resource" if gap < 0 else "tied"] += 1
    lines.append(
        f"\npaired runs: {sum(wins.values())}; default higher in {wins['default']}, "
        f"low-resource higher in {wins['low-resource']}, tied {wins['tied']}"
    )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["de-en"],
                        choices=["de-en", "en-de"])  # fmt: skip
    parser.add_argument("--sizes", nargs="+", default=["2000", "all"])
    parser.add_argument("--minutes", nargs="+", type=float, default=[5.0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--output", default="recipes.csv")
    args = parser.parse_args(argv)
    done = set()
    if os.path.exists(args.output):
        with open(args.output) as f:
            done = {
                (r["task"], r["minutes"], r["seed"], r["recipe"], r["size"])
                for r in csv.DictReader(f)
                if "size" in r
            }
    grid = itertools.product(args.seeds, args.tasks, args.sizes, args.minutes)
    for seed, task, size, minutes in grid:
        for recipe in ("default", "low-resource")[:: 1 if seed % 2 == 0 else -1]:
            if (task, str(minutes), str(seed), recipe, size) in done:
                continue
            row = {**run_one(task, size, minutes, seed, recipe), "size": size}
            new = not os.path.exists(args.output)
            with open(args.output, "a", newline="") as f:
                writer = csv.DictWriter(f, (*FIELDS, "size"))
                if new:
                    writer.writeheader()
                writer.writerow(row)
            print(row, flush=True)
    with open(args.output) as f:
        print(_pairs_table(list(csv.DictReader(f))))


if __name__ == "__main__":
    main()
