"""`keras-seq export`: a trained model directory as a SavedModel for TF
Serving."""

from zoo.cli.errors import UsageError, check_at_least, reported_as_usage
from zoo.cli.loading import load_model_dir
from zoo.recipes.families import listed, supporting


def needs_tensorflow(args):
    """Whether `export` with `args` loads TensorFlow:
    it loads a Keras model and writes a SavedModel or reads one."""
    del args
    return True


def add_parser(commands):
    """Adds `export` and its flags to the `keras-seq` subparsers."""
    parser = commands.add_parser(
        "export",
        help=f"export a trained model as a SavedModel ({listed('export')})",
    )
    parser.add_argument(
        "--model-dir", required=True, help="a directory of `keras-seq train`"
    )
    parser.add_argument(
        "--export-dir", required=True, help="the base of the numbered versions"
    )
    parser.add_argument(
        "--version", type=int, default=1, help="the version directory to write"
    )
    parser.add_argument(
        "--format",
        choices=("saved_model", "ctranslate2"),
        default="saved_model",
        help="ctranslate2: --export-dir becomes a CTranslate2 model directory "
        f"({listed('ctranslate2')}), served without TensorFlow",
    )
    parser.add_argument(
        "--quantization",
        choices=("float32", "int8", "int8_float32", "int16"),
        default="float32",
        help="with --format ctranslate2: the weights' type",
    )
    parser.set_defaults(run=run)


def run(args):
    """Writes `<export-dir>/<version>/` from `--model-dir`.

    Returns:
        0, the exit status.
    """
    if args.format == "ctranslate2":
        return _run_ctranslate2(args)
    from keras_seq.export import require_tensorflow
    from zoo.recipes import workflow
    from zoo.recipes.run_dir import check_writable

    with reported_as_usage(ValueError):
        require_tensorflow()  # before the model is loaded
    check_at_least(args.version, "--version")
    check_writable(args.export_dir, "--export-dir")
    trained = load_model_dir(args.model_dir)
    if trained.family not in supporting("export"):
        raise UsageError(
            f"`export` serves {listed('export')} directories; "
            f"--model-dir {args.model_dir} holds a {trained.family}."
        )
    # The export refuses a version already written.
    with reported_as_usage(ValueError):
        try:
            path = workflow.export(trained, args.export_dir, args.version)
        except ValueError as error:
            raise ValueError(f"--export-dir {args.export_dir}: {error}") from None
    print(f"exported {trained.family} to {path}")
    return 0


def _run_ctranslate2(args):
    from zoo.recipes import workflow
    from zoo.recipes.run_dir import check_writable

    check_writable(args.export_dir, "--export-dir")
    trained = load_model_dir(args.model_dir)
    with reported_as_usage(ValueError, ImportError):
        try:
            path = workflow.export_ctranslate2(
                trained, args.export_dir, args.quantization
            )
        except ValueError as error:
            raise ValueError(f"--export-dir {args.export_dir}: {error}") from None
    print(f"exported {trained.family} to {path} (CTranslate2, {args.quantization})")
    return 0
