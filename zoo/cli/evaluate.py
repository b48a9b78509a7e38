"""`keras-seq evaluate`: score a trained model on the test split of its data."""

import json

from zoo.cli import train
from zoo.cli.errors import UsageError, check_at_least
from zoo.cli.loading import load_model_dir
from zoo.recipes import families


def add_parser(commands):
    """Adds `evaluate` and its flags to the `keras-seq` subparsers."""
    parser = commands.add_parser(
        "evaluate", help="score a trained model on its test split"
    )
    parser.add_argument(
        "--model-dir", required=True, help="a directory of `keras-seq train`"
    )
    parser.add_argument(
        "--data", default=None, help="the corpus (default: the training data)"
    )
    train.add_beam_width_argument(parser, "translators: beams of the search")
    parser.set_defaults(run=run)


def run(args):
    """Prints the test figures of `--model-dir` as one JSON line.

    Translators' BLEU is keyed by its decoding (`bleu_beam4`,
    `bleu_greedy`), as `run.json` keys it.

    Returns:
        0, the exit status.
    """
    check_at_least(args.beam_width, "--beam-width")
    trained = load_model_dir(args.model_dir)
    family = families.FAMILIES[trained.family]
    if args.beam_width is not None and not family.translates:
        raise UsageError(
            "--beam-width applies to translator and rnn-translator; "
            f"--model-dir {args.model_dir} holds a {trained.family}."
        )
    chosen = family.settings()
    if args.beam_width is not None:
        chosen = chosen.replace(beam_width=args.beam_width)
    print(json.dumps(families.evaluate(trained, args.data, chosen)))
    return 0
