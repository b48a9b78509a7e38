"""`keras-seq classify`: the class of each text, with a classifier directory."""

from zoo.cli.inputs import read_texts, truncation_note
from zoo.cli.loading import load_model_dir
from zoo.recipes.families import listed


def needs_tensorflow(args):
    """Whether `classify` with `args` loads TensorFlow:
    it loads a Keras model and its TensorFlow text pipeline."""
    del args
    return True


def add_parser(commands):
    """Adds `classify` and its flags to the `keras-seq` subparsers."""
    parser = commands.add_parser(
        "classify", help="classify texts (arguments, or lines on stdin)"
    )
    parser.add_argument(
        "--model-dir",
        required=True,
        help=f"a run of `keras-seq train` ({listed('classify')})",
    )
    parser.add_argument("texts", nargs="*", help="default: the lines of stdin")
    parser.set_defaults(run=run)


def run(args):
    """Prints `label<TAB>probability` for each text, one line per input line.

    Returns:
        0, the exit status.
    """
    texts = read_texts(args.texts, "texts")
    trained = load_model_dir(args.model_dir, "classify")
    with truncation_note():
        classified = trained.classify(texts) if texts else []
    for label, probability, _ in classified:
        print(f"{label}\t{probability:.4f}")
    return 0
