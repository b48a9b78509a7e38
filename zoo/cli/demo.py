"""`keras-seq demo`: train the `small` translator German->English, end to end.

The translator recipe with the demo's settings (`zoo.recipes.settings.DEMO`)
on trans-de-en: test BLEU (beam and greedy), the learning curves and a
cross-attention map, the run directory, then a SavedModel that translates
the samples again as serving would (`zoo.recipes.demo`).
"""

import argparse

from zoo.cli import train
from zoo.cli.errors import check_at_least
from zoo.recipes import settings
from zoo.recipes.families import DEMO


def needs_tensorflow(args):
    """Whether `demo` with `args` loads TensorFlow: it trains."""
    del args
    return True


def add_parser(commands):
    """Adds `demo` and its flags to the `keras-seq` subparsers."""
    parser = commands.add_parser(
        "demo", help="train the small German->English translator and report BLEU"
    )
    parser.add_argument("--output-dir", default="runs/demo", help="the model directory")
    train.add_overwrite_argument(parser)
    train.add_settings_arguments(parser, settings.DEMO)
    train.add_beam_width_argument(parser, "beams for the test translations")
    parser.add_argument(
        "--corpus", default=None, help="the trans-de-en file (None: the installed one)"
    )
    parser.add_argument(
        "--train-pairs",
        type=int,
        default=None,
        help="train on a random N of the training pairs (drawn with --seed)",
    )
    train.add_average_epochs_argument(parser, "", settings.DEMO.average_last_epochs)
    parser.add_argument(
        "--phrases",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=train._default(
            "add the dictionary's phrase pairs to the training set",
            settings.DEMO.phrases,
        ),
    )
    parser.add_argument(
        "--variants",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=train._default(train.VARIANTS_HELP, settings.DEMO.variants),
    )
    parser.set_defaults(run=run)


def run(args):
    """Runs the demo: train, score, plot, save, export and serve.

    Returns:
        0, the exit status.
    """
    from zoo.recipes import demo

    train.check_common(args, DEMO.presets, settings.DEMO)
    check_at_least(args.train_pairs, "--train-pairs")
    chosen = train.chosen_settings(args, settings.DEMO, {})
    shown = demo.run(args.corpus, args.output_dir, chosen, overwrite=args.overwrite)
    result, metrics = shown.trained, shown.metrics
    print(
        f"\n{result.summary(chosen)}, after {result.train_minutes:.1f} training "
        f"minutes, {metrics['params']:,} parameters"
    )
    print("sample translations (source | reference | model):")
    for source, reference, output in shown.samples:
        print(f"  {source}\n    ref: {reference}\n    out: {output}")
    print(
        f"SavedModel {shown.export_path}: {shown.served_same} of "
        f"{len(shown.samples)} greedy sample translations identical through "
        "serving_default"
    )
    for (source, _, _), output in zip(shown.samples[:3], shown.served):
        print(f"  {source}\n    served: {output}")
    print(f"saved model, vocabularies, figures and metrics.json to {args.output_dir}")
    return 0
