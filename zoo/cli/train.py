"""`keras-seq train FAMILY`: train one model family and write its directory."""

import argparse
import json
import math
import os
import sys

from keras_seq.text import RESERVED_TOKENS
from zoo.cli import corpora, run_dirs
from zoo.cli.errors import (
    UsageError,
    check_above_zero,
    check_at_least,
    check_preset,
    reported_as_usage,
)
from zoo.cli.families import FAMILIES
from zoo.recipes import model_dir, runtime, translation

# A vocabulary holds the reserved tokens ([PAD], [UNK], ...) and one more at least.
RESERVED = len(RESERVED_TOKENS)

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
    parser.add_argument(
        "--preset", default="small", help="see `keras-seq presets FAMILY`"
    )
    parser.add_argument("--epochs", type=int, default=10, help="the most epochs")
    parser.add_argument(
        "--minutes", type=float, default=None, help="training time budget"
    )
    parser.add_argument("--seed", type=int, default=0, help="of every random draw")
    parser.add_argument(
        "--vocabulary-size",
        type=int,
        default=8000,
        help="the most WordPiece tokens of each vocabulary",
    )
    parser.add_argument(
        "--output-dir", default=None, help="the model directory (runs/FAMILY)"
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=(
            "a builder argument over the preset's (repeatable), e.g. --set "
            "model_dim=64 --set max_length=128; translators' batches follow "
            "max_length, which is otherwise the preset's"
        ),
    )
    add_overwrite_argument(parser)
    parser.add_argument(
        "--beam-width",
        type=int,
        default=model_dir.BEAM_WIDTH,
        help="translators: beams of the test translations (1: greedy)",
    )
    parser.add_argument(
        "--average-epochs",
        type=int,
        default=None,
        help=(
            "translators: end with the mean weights of the last N epochs; "
            "None: the recipe's (1, or 5 for low-resource)"
        ),
    )
    parser.add_argument(
        "--recipe",
        choices=tuple(translation.RECIPES),
        default="default",
        help=(
            "translators: low-resource trains with "
            + ", ".join(
                f"{k}={v}" for k, v in translation.RECIPES["low-resource"].items()
            )
            + " (see docs/training.md)"
        ),
    )
    parser.add_argument(
        "--variants",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="translators on trans-de-en: " + VARIANTS_HELP,
    )
    _add_runtime_arguments(parser)
    parser.set_defaults(run=run)


def add_overwrite_argument(parser):
    """`--overwrite`, which `train` and `demo` share."""
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help=(
            "replace a finished run in the output directory, or discard the "
            "backup of an interrupted run with other settings (an interrupted "
            "run of the same settings always resumes)"
        ),
    )


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


def parse_overrides(pairs, config, flag="--set"):
    """`--set KEY=VALUE` pairs as builder arguments over a preset's `config`.

    Each value is read as JSON (`64`, `0.1`, `true`, `"gru"`); a bare word
    is a string. The vocabulary sizes come from the data and are not
    settable.

    Returns:
        A dict of builder arguments.

    Raises:
        UsageError: for a pair without `=`, a key the preset does not have,
            or a number that is not finite.
    """
    settable = sorted(k for k in config if not k.endswith("vocabulary_size"))
    overrides = {}
    for pair in pairs:
        key, equals, raw = pair.partition("=")
        if not equals or key not in settable:
            raise UsageError(
                f"{flag} takes KEY=VALUE with KEY one of {settable}; received {pair!r}"
            )
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"{flag} {key} must be a finite number; received {raw}")
        overrides[key] = value
    return overrides


def _check_builds(family, args):
    """Builds the preset with `--set`'s changes once, at the smallest
    vocabulary, so a combination that cannot work is refused before
    anything is written.

    Raises:
        UsageError: naming the preset, the changes and the builder's reason.
    """
    config = family.presets[args.preset]["config"]
    sizes = {k: RESERVED + 1 for k in config if k.endswith("vocabulary_size")}
    try:
        family.builder(args.preset, **sizes, **args.overrides)
    except (ValueError, TypeError) as error:
        changes = " ".join(f"--set {k}={v}" for k, v in args.overrides.items())
        reason = str(error).strip().splitlines()[0]
        raise UsageError(f"--preset {args.preset} with {changes}: {reason}") from None


def _check(args):
    family = FAMILIES[args.family]
    check_common(args, family.presets)
    config = family.presets[args.preset]["config"]
    args.overrides = parse_overrides(args.overrides, config)
    # A multi-worker strategy must be made before TensorFlow runs an op, so
    # the trial build waits for no strategy; the builder checks again later.
    if args.overrides and args.strategy == "none":
        _check_builds(family, args)
    check_at_least(args.vocabulary_size, "--vocabulary-size", RESERVED + 1)
    check_at_least(args.beam_width, "--beam-width")
    if args.beam_width != model_dir.BEAM_WIDTH and not family.translates:
        raise UsageError(
            "--beam-width applies to translator and rnn-translator; "
            f"received {args.beam_width} for {args.family}"
        )
    if args.recipe != "default" and not family.translates:
        raise UsageError(
            "--recipe applies to translator and rnn-translator; "
            f"received {args.recipe} for {args.family}"
        )
    if args.average_epochs not in (None, 1) and not family.translates:
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


def settings(args, names):
    """What makes two runs the same run: the command and the flags `names`.

    A resumed run must agree on these; `--epochs` and `--minutes` may
    change between an interruption and its resumption.
    """
    return {"command": args.command, **{name: getattr(args, name) for name in names}}


SETTINGS = (
    "family", "data", "preset", "seed", "vocabulary_size", "average_epochs",
    "variants", "precision", "recipe",
)  # fmt: skip


def announce_resume(output_dir, resumed, epochs):
    """Says that training picks up an interrupted run, and where.

    Raises:
        UsageError: when the interrupted run already finished `epochs`.
    """
    if resumed >= epochs:
        raise UsageError(
            f"--epochs {epochs}: the interrupted run in {output_dir} already "
            f"finished {resumed} epochs; pass a larger --epochs to go on."
        )
    if resumed:
        print(
            f"resuming the interrupted run in {output_dir} after epoch "
            f"{resumed} (of at most {epochs})",
            flush=True,
        )


def run(args):
    """Trains `args.family` on `--data` and writes its model directory.

    Every flag and the data are checked, and the output directory claimed
    (`zoo.cli.run_dirs.claim`), before anything is written; no other run
    may use the directory until this one ends.

    Returns:
        0, the exit status.
    """
    _check(args)
    family = FAMILIES[args.family]
    corpus = family.corpus(args)
    output_dir = args.output_dir or os.path.join("runs", args.family)
    run_settings = settings(args, SETTINGS)
    if args.overrides:
        # Only when given, so the backup of a run from before `--set` resumes.
        run_settings["overrides"] = args.overrides
    if family.translates:
        # The recipe's values, not only its name: a backup made under other
        # values (another version of keras-seq) must not be resumed by them.
        run_settings["recipe_arguments"] = translation.RECIPES[args.recipe]
    resumed = run_dirs.claim(output_dir, run_settings, args.overwrite)
    try:
        return _train_and_save(args, family, corpus, output_dir, resumed)
    finally:
        run_dirs.release(output_dir)


def _train_and_save(args, family, corpus, output_dir, resumed):
    """Trains into the claimed `output_dir` and saves the model directory."""
    strategy = _runtime(args)
    announce_resume(output_dir, resumed, args.epochs)
    common = {
        "preset": args.preset,
        "epochs": args.epochs,
        "minutes": args.minutes,
        "seed": args.seed,
        "vocabulary_size": args.vocabulary_size,
        "verbose": verbose(),
        "strategy": strategy,
        **args.overrides,
    }
    trained = family.train(args, corpus, output_dir, common)
    model = trained.result["model"]
    metrics = {k: round(float(v), 4) for k, v in trained.metrics.items()}
    metrics["params"] = int(model.count_params())
    metrics["epochs"] = resumed + len(trained.result["history"].get("loss", ()))
    run_info = {"data": args.data, "preset": args.preset, "seed": args.seed}
    run_info.update(trained.run)
    if args.overrides:
        run_info["overrides"] = args.overrides
    model_dir.save_model_dir(output_dir, args.family, model, {**run_info, **metrics})
    print(f"{args.family}: {trained.summary}; {metrics['params']:,} parameters")
    for note in trained.notes:
        print(note)
    print(f"saved to {output_dir}")
    return 0


def verbose():
    """Keras' `verbose`: a progress bar on a terminal, one line per epoch in a log."""
    return 1 if sys.stdout.isatty() else 2
