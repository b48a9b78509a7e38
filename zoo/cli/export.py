"""`keras-seq export`: a trained model directory as a SavedModel for TF
Serving."""

from zoo.cli.errors import UsageError, reported_as_usage
from zoo.cli.families import FAMILIES
from zoo.cli.loading import load_model_dir


def add_parser(commands):
    """Adds `export` and its flags to the `keras-seq` subparsers."""
    parser = commands.add_parser(
        "export", help="export a trained model as a SavedModel (TF Serving layout)"
    )
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--export-dir", required=True)
    parser.add_argument("--version", type=int, default=1)
    parser.set_defaults(run=run)


def run(args):
    """Writes `<export-dir>/<version>/` from `--model-dir`.

    Returns:
        0, the exit status.
    """
    loaded = load_model_dir(args.model_dir)
    family = loaded["family"]
    export = FAMILIES[family].export
    if export is None:
        raise UsageError(
            f"`export` serves translator, classifier and language-model "
            f"directories; {args.model_dir} holds a {family}."
        )
    # The export refuses a version already written or a bad `--version`.
    with reported_as_usage(ValueError):
        path = export(loaded, args.export_dir, args.version)
    print(f"exported {family} to {path}")
    return 0
