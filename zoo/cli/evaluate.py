"""`keras-seq evaluate`: score a trained model on the test split of its data."""

import json

from zoo.cli.families import FAMILIES
from zoo.cli.loading import load_model_dir


def add_parser(commands):
    """Adds `evaluate` and its flags to the `keras-seq` subparsers."""
    parser = commands.add_parser(
        "evaluate", help="score a trained model on its test split"
    )
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--data", default=None, help="default: the training data")
    parser.set_defaults(run=run)


def run(args):
    """Prints the test figures of `--model-dir` as one JSON line.

    Returns:
        0, the exit status.
    """
    loaded = load_model_dir(args.model_dir)
    data = args.data or loaded["run"].get("data")
    result = FAMILIES[loaded["family"]].evaluate(loaded, data)
    print(json.dumps({k: round(v, 4) for k, v in result.items()}))
    return 0
