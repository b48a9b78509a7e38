"""`keras-seq evaluate`: score a trained model on the test split of its data."""

import json

from zoo.cli.errors import UsageError, check_at_least
from zoo.cli.families import FAMILIES
from zoo.cli.loading import load_model_dir
from zoo.recipes import model_dir


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
    parser.add_argument(
        "--beam-width",
        type=int,
        default=model_dir.BEAM_WIDTH,
        help="translators: beams of the search (1: greedy)",
    )
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
    family = FAMILIES[trained.family]
    if args.beam_width != model_dir.BEAM_WIDTH and not family.translates:
        raise UsageError(
            "--beam-width applies to translator and rnn-translator; "
            f"--model-dir {args.model_dir} holds a {trained.family}."
        )
    data = args.data or trained.run.get("data")
    result = family.evaluate(trained, data, args)
    print(json.dumps({k: round(v, 4) for k, v in result.items()}))
    return 0
