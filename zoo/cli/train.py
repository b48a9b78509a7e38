"""`keras-seq train FAMILY`: train one model family and write its directory."""

import argparse
import os
import sys

from zoo.cli import corpora
from zoo.cli.errors import (
    UsageError,
    check_above_zero,
    check_at_least,
    check_preset,
    reported_as_usage,
)
from zoo.cli.families import FAMILIES
from zoo.recipes import model_dir, runtime

VARIANTS_HELP = (
    "add the dictionary's further sentence pairs (other synonyms, slashed "
    "alternatives) to the training set"
)


def add_parser(commands):
    """Adds `train` and its flags to the `keras-seq` subparsers."""
    parser = commands.add_parser("train", help="train a model family on a corpus")
    parser.add_argument("family", choices=tuple(FAMILIES))
    parser.add_argument(
        "--data",
        default=None,
        help=(
            "a corpus name (trans-de-en, movie-reviews, shakespeare) or a file: "
            "source<TAB>target for translators, text<TAB>label for the "
            "classifier, one text per line for language models"
        ),
    )
    parser.add_argument("--preset", default="small")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--minutes", type=float, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vocabulary-size", type=int, default=8000)
    parser.add_argument("--output-dir", default=None, help="default: runs/<family>")
    parser.add_argument(
        "--average-epochs",
        type=int,
        default=1,
        help="translators: end with the mean weights of the last N epochs",
    )
    parser.add_argument(
        "--variants",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="translators on trans-de-en: " + VARIANTS_HELP,
    )
    _add_runtime_arguments(parser)
    parser.set_defaults(run=run)


def _add_runtime_arguments(parser):
    parser.add_argument(
        "--strategy",
        choices=runtime.STRATEGIES,
        default="none",
        help=(
            "tf.distribute strategy: mirrored over local devices, or multi-worker "
            "across machines (cluster in TF_CONFIG)"
        ),
    )
    parser.add_argument(
        "--precision",
        choices=runtime.PRECISIONS,
        default="float32",
        help="Keras dtype policy (mixed_float16 adds loss scaling)",
    )
    parser.add_argument(
        "--deterministic",
        action="store_true",
        help=(
            "TensorFlow op determinism: the same command gives the same weights, "
            "also when resumed after an interruption"
        ),
    )


def check_common(args, presets):
    """Refuses flags shared by `train` and `demo` that no recipe can use.

    Raises:
        UsageError: naming the flag.
    """
    check_at_least(args.average_epochs, "--average-epochs")
    check_at_least(args.epochs, "--epochs")
    check_at_least(args.seed, "--seed", minimum=0)
    check_above_zero(args.minutes, "--minutes")
    check_preset(args.preset, presets)


def _check(args):
    family = FAMILIES[args.family]
    check_common(args, family.presets)
    check_at_least(args.vocabulary_size, "--vocabulary-size")
    if args.average_epochs != 1 and not family.translates:
        raise UsageError(
            "--average-epochs applies to translator and rnn-translator; "
            f"received {args.average_epochs} for {args.family}"
        )
    if args.variants and (
        not family.translates or not corpora.is_trans_de_en(args.data)
    ):
        raise UsageError(
            "--variants applies to translators on the trans-de-en dictionary; "
            f"received {args.family} on {args.data or 'its default corpus'}"
        )


def _runtime(args):
    """Applies `--strategy`, `--deterministic` and `--precision`.

    Returns:
        The `tf.distribute` strategy, or None.
    """
    # A strategy the backend cannot run (mirrored on JAX) is the user's to fix.
    with reported_as_usage(ValueError):
        strategy = runtime.make_strategy(args.strategy)  # before any other op
    if args.deterministic:
        runtime.make_deterministic(args.seed)
    runtime.set_precision(args.precision)
    return strategy


def run(args):
    """Trains `args.family` on `--data` and writes its model directory.

    Returns:
        0, the exit status.
    """
    _check(args)
    strategy = _runtime(args)
    output_dir = args.output_dir or os.path.join("runs", args.family)
    os.makedirs(output_dir, exist_ok=True)
    common = {
        "preset": args.preset,
        "epochs": args.epochs,
        "minutes": args.minutes,
        "seed": args.seed,
        "vocabulary_size": args.vocabulary_size,
        "verbose": verbose(),
        "strategy": strategy,
    }
    trained = FAMILIES[args.family].train(args, output_dir, common)
    model = trained.result["model"]
    metrics = {k: round(float(v), 4) for k, v in trained.metrics.items()}
    metrics["params"] = int(model.count_params())
    metrics["epochs"] = len(trained.result["history"]["loss"])
    run_info = {"data": args.data, "preset": args.preset, "seed": args.seed}
    run_info.update(trained.run)
    model_dir.save_model_dir(output_dir, args.family, model, {**run_info, **metrics})
    print(f"{args.family}: {trained.summary}; {metrics['params']:,} parameters")
    for note in trained.notes:
        print(note)
    print(f"saved to {output_dir}")
    return 0


def verbose():
    """Keras' `verbose`: a progress bar on a terminal, one line per epoch in a log."""
    return 1 if sys.stdout.isatty() else 2
