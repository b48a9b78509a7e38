"""`keras-seq import DIR --output-dir RUN`: a Marian (OPUS-MT) checkpoint,
as `save_pretrained` writes it, as a finished translator run directory
(`zoo.recipes.importing.import_transformers`)."""

from zoo.cli.errors import reported_as_usage

# `import` is a Python keyword, so the module has another name than its
# command.
COMMAND = "import"


def needs_tensorflow(args):
    """Whether `import` with `args` loads TensorFlow: it builds the Keras
    model and its preprocessor."""
    del args
    return True


def add_parser(commands):
    """Adds `import` and its flags to the `keras-seq` subparsers."""
    parser = commands.add_parser(
        COMMAND,
        help="import a Marian (OPUS-MT) checkpoint directory as a translator run",
    )
    parser.add_argument(
        "directory",
        metavar="DIR",
        help=(
            "what a MarianMTModel's save_pretrained (and its MarianTokenizer's) "
            "wrote: config.json, model.safetensors or pytorch_model.bin, "
            "source.spm, target.spm, vocab.json"
        ),
    )
    parser.add_argument(
        "--output-dir", required=True, metavar="RUN", help="the run directory to write"
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace a finished run in RUN"
    )
    parser.set_defaults(run=run)


def imported_line(trained, directory):
    """The one line `import` prints: what was imported, its sizes and
    vocabularies, and where."""
    config = trained.model.get_config()
    source, target = (
        config["source_vocabulary_size"],
        config["target_vocabulary_size"],
    )
    shared = " (one table)" if config.get("tie_embeddings") else ""
    return (
        f"imported {directory}: a translator of {trained.model.count_params():,} "
        f"parameters (model_dim {config['model_dim']}, "
        f"{config['num_encoder_layers']}+{config['num_decoder_layers']} layers, "
        f"max_length {config['max_length']}), vocabularies source {source:,} "
        f"and target {target:,} tokens{shared}, SentencePiece; saved to "
        f"{trained.path}"
    )


def run(args):
    """Writes the run directory and says what it holds.

    Returns:
        0, the exit status.
    """
    from zoo.recipes import importing

    with reported_as_usage(ValueError):
        trained = importing.import_transformers(
            args.directory, args.output_dir, overwrite=args.overwrite
        )
    print(imported_line(trained, args.directory), flush=True)
    return 0
