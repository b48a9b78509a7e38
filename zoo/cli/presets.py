"""`keras-seq presets`: each family's presets, their sizes and settings."""

from zoo.recipes.families import FAMILIES


def needs_tensorflow(args):
    """Whether `presets` with `args` loads TensorFlow: the presets are plain data."""
    del args
    return False


def add_parser(commands):
    """Adds `presets` to the `keras-seq` subparsers."""
    parser = commands.add_parser(
        "presets", help="list the presets of each family, with their sizes"
    )
    parser.add_argument(
        "family", nargs="?", choices=tuple(FAMILIES), help="default: every family"
    )
    parser.set_defaults(run=run)


def _vocabularies(config):
    sizes = [
        f"{config[key]:,}"
        for key in ("source_vocabulary_size", "target_vocabulary_size")
        if key in config
    ]
    if "vocabulary_size" in config:
        sizes.append(f"{config['vocabulary_size']:,}")
    return " / ".join(sizes) or "?"


def run(args):
    """Prints one line a preset: name, parameters, vocabularies, description.

    The counts are the preset's own vocabulary sizes; `train` sizes the
    vocabularies to its data (`--vocabulary-size` at most), so a trained
    model's count differs.

    Returns:
        0, the exit status.
    """
    for name in [args.family] if args.family else list(FAMILIES):
        print(f"{name}:")
        for preset, entry in FAMILIES[name].presets.items():
            print(
                f"  {preset:<8} {entry['params']:>12,} parameters with "
                f"vocabularies of {_vocabularies(entry['config'])}: "
                f"{entry['description']}"
            )
    print(
        "`keras-seq train` sizes the vocabularies to the data "
        "(--vocabulary-size at most), so a trained model's count differs."
    )
    return 0
