"""`keras-seq translate`: translate sentences with a model directory or a
SavedModel."""

import sys

from zoo.cli import serving
from zoo.cli.errors import UsageError
from zoo.cli.families import FAMILIES
from zoo.cli.loading import load_model_dir
from zoo.recipes import translation


def add_parser(commands):
    """Adds `translate` and its flags to the `keras-seq` subparsers."""
    parser = commands.add_parser(
        "translate", help="translate sentences (arguments, or lines on stdin)"
    )
    parser.add_argument("--model-dir", default=None)
    parser.add_argument(
        "--saved-model", default=None, help="an exported SavedModel (or its base)"
    )
    parser.add_argument("texts", nargs="*")
    parser.set_defaults(run=run)


def _read_inputs(texts):
    if texts:
        return list(texts)
    return [line.rstrip("\n") for line in sys.stdin if line.strip()]


def run(args):
    """Prints one translation per sentence (the arguments, or stdin's lines).

    Returns:
        0, the exit status.
    """
    if bool(args.model_dir) == bool(args.saved_model):
        raise UsageError("give exactly one of --model-dir and --saved-model.")
    sentences = _read_inputs(args.texts)
    if args.saved_model:
        outputs = serving.serve(args.saved_model, sentences)
    else:
        loaded = load_model_dir(args.model_dir)
        if not FAMILIES[loaded["family"]].translates:
            raise UsageError(
                f"--model-dir {args.model_dir} holds a {loaded['family']}; "
                "`translate` needs a translator or rnn-translator."
            )
        outputs = translation.translate_texts(
            loaded["model"],
            loaded["tokenizers"]["source"],
            loaded["tokenizers"]["target"],
            sentences,
        )
    for output in outputs:
        print(output)
    return 0
