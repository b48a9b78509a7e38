"""`keras-seq evaluate`: score a trained model on the test split of its data."""

import json

from zoo.cli import train
from zoo.cli.errors import UsageError, check_at_least
from zoo.cli.loading import load_model_dir
from zoo.recipes.families import FAMILIES, listed


def needs_tensorflow(args):
    """Whether `evaluate` with `args` loads TensorFlow:
    it loads a Keras model and its TensorFlow text pipeline."""
    del args
    return True


def add_parser(commands):
    """Adds `evaluate` and its flags to the `keras-seq` subparsers."""
    parser = commands.add_parser(
        "evaluate", help="score a trained model on its test split"
    )
    parser.add_argument(
        "--model-dir", required=True, help="a directory of `keras-seq train`"
    )
    parser.add_argument(
        "--data",
        default=None,
        help="the corpus (default: the file the run trained on, by its absolute path)",
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
    recipe = FAMILIES[trained.family]
    if args.beam_width is not None and not recipe.translates:
        raise UsageError(
            f"--beam-width applies to {listed('translate')}; "
            f"--model-dir {args.model_dir} holds a {trained.family}."
        )
    chosen = recipe.settings()
    if args.beam_width is not None:
        chosen = chosen.replace(beam_width=args.beam_width)
    from zoo.recipes import workflow

    print(json.dumps(workflow.evaluate(trained, args.data, chosen)))
    return 0
