"""`keras-seq train FAMILY`: train one model family and write its directory."""

import argparse
import dataclasses
import json
import math
import os

from zoo.cli import startup
from zoo.cli.errors import UsageError, check_preset
from zoo.recipes import settings
from zoo.recipes.families import FAMILIES, listed


def _reserved():
    """The reserved tokens ([PAD], [UNK], ...) a vocabulary holds before
    any word (read when a command runs: `keras_seq.text` starts Keras)."""
    from keras_seq.text import RESERVED_TOKENS

    return len(RESERVED_TOKENS)


VARIANTS_HELP = (
    "add the dictionary's further sentence pairs (other synonyms, slashed "
    "alternatives) to the training set"
)


def needs_tensorflow(args):
    """Whether `train` with `args` loads TensorFlow: it trains on tf.data pipelines."""
    del args
    return True


def add_parser(commands):
    """Adds `train` and its flags to the `keras-seq` subparsers."""
    parser = commands.add_parser("train", help="train a model family on a corpus")
    parser.add_argument("family", choices=tuple(FAMILIES))
    parser.add_argument(
        "--data",
        default=None,
        help=(
            "a corpus name (trans-de-en, movie-reviews, shakespeare) or a file: "
            + "; ".join(f"{r.data_help} for {n}" for n, r in FAMILIES.items())
        ),
    )
    add_settings_arguments(parser, settings.TrainingSettings())
    parser.add_argument(
        "--vocabulary-size",
        type=int,
        default=None,
        help=_default(
            "the most WordPiece tokens of each vocabulary",
            settings.TrainingSettings.vocabulary_size,
        ),
    )
    parser.add_argument(
        "--min-frequency",
        type=int,
        default=None,
        help=_default(
            "the fewest times a word piece occurs in the training text to be "
            "learned; on a small text it, not --vocabulary-size, decides the "
            "vocabulary",
            settings.TrainingSettings.min_frequency,
        ),
    )
    parser.add_argument(
        "--output-dir", default=None, help="the model directory (runs/FAMILY)"
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=(
            "a builder argument over the preset's (repeatable), e.g. --set "
            "model_dim=64 --set max_length=128; translators' batches follow "
            "max_length, which is otherwise the preset's"
        ),
    )
    add_overwrite_argument(parser)
    _add_translator_arguments(parser)
    _add_runtime_arguments(parser)
    parser.set_defaults(run=run)


def _add_translator_arguments(parser):
    """The flags only the translators take (refused for other families)."""
    add_beam_width_argument(parser, "translators: beams of the test translations")
    add_average_epochs_argument(
        parser,
        "translators: ",
        " or ".join(
            f"{s.average_last_epochs} ({name})"
            for name, s in settings.TRANSLATOR_RECIPES.items()
        ),
    )
    parser.add_argument(
        "--bleu-every",
        type=int,
        default=None,
        help=_default(
            "translators: score validation BLEU every N epochs (the first and "
            "the last are always scored)",
            settings.TranslatorSettings.bleu_every,
        ),
    )
    parser.add_argument(
        "--recipe",
        choices=tuple(settings.TRANSLATOR_RECIPES),
        default=None,
        help=_default(
            "translators: low-resource trains with "
            + settings.described(settings.LOW_RESOURCE)
            + " (see docs/training.md)",
            settings.TranslatorSettings.recipe,
        ),
    )
    parser.add_argument(
        "--variants",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=_default(
            "translators on trans-de-en: " + VARIANTS_HELP,
            settings.TranslatorSettings.variants,
        ),
    )
    _add_translator_text_arguments(parser)


def _add_translator_text_arguments(parser):
    """The translators' flags about their text: where the model and its
    vocabularies start, case, and the tokenizer."""
    parser.add_argument(
        "--init-from",
        default=None,
        metavar="RUN",
        help=(
            "translators: start from the finished run RUN (trained, or written "
            "by `keras-seq import`), keeping its model, vocabularies and "
            "tokenizer; no vocabulary is learned (see docs/pretrained.md)"
        ),
    )
    parser.add_argument(
        "--lowercase",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=_default(
            "translators: lowercase the text the vocabularies learn and the "
            "model reads and writes (runs before case was kept did)",
            settings.TranslatorSettings.lowercase,
        ),
    )
    parser.add_argument(
        "--tokenizer",
        choices=settings.TRAINING_CHOICES["tokenizer"],
        default=None,
        help=_default(
            "translators: WordPiece vocabularies, or a SentencePiece model per "
            "side", settings.TranslatorSettings.tokenizer,
        ),
    )  # fmt: skip
    parser.add_argument(
        "--sentencepiece-model",
        choices=settings.TRAINING_CHOICES["sentencepiece_model"],
        default=None,
        help=_default(
            "with --tokenizer sentencepiece: its segmentation model",
            settings.TranslatorSettings.sentencepiece_model,
        ),
    )
    parser.add_argument(
        "--subword-sampling",
        type=float,
        default=None,
        metavar="ALPHA",
        help=_default(
            "with --tokenizer sentencepiece: sample the training batches' "
            "segmentations with this alpha in [0, 1) (never at evaluation "
            "or decoding; 0: off)", settings.TranslatorSettings.subword_sampling,
        ),
    )  # fmt: skip


def _default(words, value):
    """A help text naming the default that a flag left out (None) takes."""
    return f"{words} (default: {value})"


def add_settings_arguments(parser, defaults):
    """`--preset`, `--epochs`, `--minutes` and `--seed`, which `train` and
    `demo` share; each defaults to None, which keeps `defaults`' value."""
    parser.add_argument(
        "--preset",
        default=None,
        help=_default("see `keras-seq presets FAMILY`", defaults.preset),
    )
    parser.add_argument(
        "--epochs",
        type=int,
        default=None,
        help=_default("the most epochs", defaults.epochs),
    )
    parser.add_argument(
        "--minutes",
        type=float,
        default=None,
        help=_default("training time budget", defaults.minutes),
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help=_default("of every random draw", defaults.seed),
    )


def add_beam_width_argument(parser, words):
    """`--beam-width`, whose default is the translator recipe's."""
    parser.add_argument(
        "--beam-width",
        type=int,
        default=None,
        help=_default(words + " (1: greedy)", settings.TranslatorSettings.beam_width),
    )


def add_average_epochs_argument(parser, words, default):
    """`--average-epochs`, whose default is the recipe's."""
    parser.add_argument(
        "--average-epochs",
        type=int,
        default=None,
        help=_default(
            words + "end with the mean weights of the last N epochs", default
        ),
    )


def add_overwrite_argument(parser):
    """`--overwrite`, which `train` and `demo` share."""
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help=(
            "replace a finished run in the output directory, or discard the "
            "backup of an interrupted run with other settings (an interrupted "
            "run of the same settings always resumes)"
        ),
    )


def _add_runtime_arguments(parser):
    defaults = settings.RuntimeSettings()
    parser.add_argument(
        "--strategy",
        choices=settings.STRATEGIES,
        default=None,
        help=_default(
            "tf.distribute strategy: mirrored over local devices, or multi-worker "
            "across machines (cluster in TF_CONFIG)",
            defaults.strategy,
        ),
    )
    parser.add_argument(
        "--precision",
        choices=settings.PRECISIONS,
        default=None,
        help=_default(
            "Keras dtype policy (mixed_float16 adds loss scaling)", defaults.precision
        ),
    )
    parser.add_argument(
        "--deterministic",
        action="store_true",
        default=None,
        help=_default(
            "TensorFlow op determinism: the same command gives the same weights, "
            "also when resumed after an interruption",
            defaults.deterministic,
        ),
    )


def check_common(args, presets, defaults):
    """Refuses flags shared by `train` and `demo` that no recipe can use.

    Raises:
        UsageError: naming the flag.
    """
    check_training(
        average_last_epochs=args.average_epochs, epochs=args.epochs,
        seed=args.seed, minutes=args.minutes, beam_width=args.beam_width,
    )  # fmt: skip
    check_preset(args.preset or defaults.preset, presets)


# The flag of each training setting, as `settings.check_training` names it.
FLAGS = {
    "average_last_epochs": "--average-epochs", "epochs": "--epochs",
    "seed": "--seed", "minutes": "--minutes", "beam_width": "--beam-width",
    "vocabulary_size": "--vocabulary-size", "bleu_every": "--bleu-every",
    "min_frequency": "--min-frequency", "tokenizer": "--tokenizer",
    "sentencepiece_model": "--sentencepiece-model",
    "subword_sampling": "--subword-sampling", "lowercase": "--lowercase",
}  # fmt: skip


def check_training(**values):
    """`settings.check_training` (the check `zoo.train` makes too), its
    refusals naming the flags.

    Raises:
        UsageError: naming the flag, its bound and the value.
    """
    try:
        settings.check_training(FLAGS, **values)
    except (ValueError, TypeError) as error:
        raise UsageError(str(error)) from None


def chosen_settings(args, defaults, overrides):
    """`defaults` with the flags given (a flag left out, None, keeps the
    default's value) and `--set`'s builder arguments over the recipe's."""
    flags = {
        "preset": "preset", "epochs": "epochs", "minutes": "minutes",
        "seed": "seed", "vocabulary_size": "vocabulary_size",
        "min_frequency": "min_frequency",
        "average_last_epochs": "average_epochs", "beam_width": "beam_width",
        "variants": "variants", "phrases": "phrases", "train_pairs": "train_pairs",
        "lowercase": "lowercase",
        "bleu_every": "bleu_every", "tokenizer": "tokenizer",
        "sentencepiece_model": "sentencepiece_model",
        "subword_sampling": "subword_sampling",
    }  # fmt: skip
    fields = {f.name for f in dataclasses.fields(defaults)}
    given = {
        name: getattr(args, flag)
        for name, flag in flags.items()
        if name in fields and getattr(args, flag, None) is not None
    }
    return defaults.replace(**given, overrides=overrides)


def parse_overrides(pairs, config, flag="--set"):
    """`--set KEY=VALUE` pairs as builder arguments over a preset's `config`.

    Each value is read as JSON (`64`, `0.1`, `true`, `"gru"`); a bare word
    is a string. The vocabulary sizes come from the data and are not
    settable.

    Returns:
        A dict of builder arguments.

    Raises:
        UsageError: for a pair without `=`, a key the preset does not have,
            or a number that is not finite.
    """
    settable = sorted(k for k in config if not k.endswith("vocabulary_size"))
    overrides = {}
    for pair in pairs:
        key, equals, raw = pair.partition("=")
        if not equals or key not in settable:
            raise UsageError(
                f"{flag} takes KEY=VALUE with KEY one of {settable}; received {pair!r}"
            )
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"{flag} {key} must be a finite number; received {raw}")
        overrides[key] = value
    return overrides


def _check_builds(family, args):
    """Builds the preset with `--set`'s changes once, at the smallest
    vocabulary, so a combination that cannot work is refused before
    anything is written.

    Raises:
        UsageError: naming the preset, the changes and the builder's reason.
    """
    config = family.presets[args.preset]["config"]
    sizes = {k: _reserved() + 1 for k in config if k.endswith("vocabulary_size")}
    try:
        family.builder(args.preset, **sizes, **args.overrides)
    except (ValueError, TypeError) as error:
        changes = " ".join(f"--set {k}={v}" for k, v in args.overrides.items())
        reason = str(error).strip().splitlines()[0]
        raise UsageError(f"--preset {args.preset} with {changes}: {reason}") from None


def _started(args, family):
    """The start `--init-from` names, checked, or None: `(record, preset)`.

    Raises:
        UsageError: for a flag the kept model contradicts, or a RUN that is
            not a finished run of the family.
    """
    if getattr(args, "init_from", None) is None:
        return None
    from zoo.recipes import importing

    if not family.translates:
        raise UsageError(
            f"--init-from applies to {listed('translate')}; "
            f"received {args.init_from} for {args.family}"
        )
    importing.refuse_kept(
        {name: getattr(args, name, None) for name in importing.KEPT_FLAGS},
        importing.KEPT_FLAGS,
    )
    args.output_dir = args.output_dir or os.path.join("runs", args.family)
    record, run = importing.starting_point(args.init_from, args.family, args.output_dir)
    return record, run.get("preset")


def _check(args):
    family = FAMILIES[args.family]
    started = _started(args, family)
    defaults = family.default_settings(args.recipe if family.translates else None)
    if started:
        defaults = defaults.replace(init_from=started[0], preset=started[1])
    if not started:
        check_common(args, family.presets, defaults)
        args.preset = args.preset or defaults.preset
        config = family.presets[args.preset]["config"]
        args.overrides = parse_overrides(args.overrides, config)
    else:
        check_training(
            average_last_epochs=args.average_epochs, epochs=args.epochs,
            seed=args.seed, minutes=args.minutes, beam_width=args.beam_width,
        )  # fmt: skip
        args.overrides = {}
    # A multi-worker strategy must be made before TensorFlow runs an op, so
    # the trial build waits for no strategy; the builder checks again later.
    if args.overrides and args.strategy in (None, "none"):
        _check_builds(family, args)
    check_training(
        vocabulary_size=args.vocabulary_size, bleu_every=args.bleu_every,
        min_frequency=args.min_frequency, tokenizer=args.tokenizer,
        lowercase=args.lowercase,
        sentencepiece_model=args.sentencepiece_model,
        subword_sampling=args.subword_sampling,
    )  # fmt: skip
    for flag, value, unset in (
        ("--beam-width", args.beam_width, (None,)),
        ("--bleu-every", args.bleu_every, (None,)),
        ("--recipe", args.recipe, (None, settings.TranslatorSettings.recipe)),
        ("--average-epochs", args.average_epochs, (None, 1)),
        ("--lowercase", args.lowercase, (None, False)),
        ("--tokenizer", args.tokenizer, (None, "wordpiece")),
        ("--sentencepiece-model", args.sentencepiece_model, (None, "unigram")),
        ("--subword-sampling", args.subword_sampling, (None, 0.0)),
    ):
        if value not in unset and not family.translates:
            raise UsageError(
                f"{flag} applies to {listed('translate')}; "
                f"received {value} for {args.family}"
            )
    from zoo.recipes import corpora

    if args.variants and (
        not family.translates or not corpora.is_trans_de_en(args.data)
    ):
        raise UsageError(
            "--variants applies to translators on the trans-de-en dictionary; "
            f"received {args.family} on {args.data or 'its default corpus'}"
        )
    return chosen_settings(args, defaults, args.overrides)


def run(args):
    """Trains `args.family` on `--data` and writes its run directory
    (`zoo.recipes.workflow.train`).

    Returns:
        0, the exit status.
    """
    chosen = _check(args)
    output_dir = args.output_dir or os.path.join("runs", args.family)
    advice = settings.recipe_advice(chosen)
    if advice:
        print(advice, flush=True)
    from zoo.recipes import said, workflow

    runtime = {
        name: getattr(args, name)
        for name in ("strategy", "precision", "deterministic")
        if getattr(args, name) is not None
    }
    machine = settings.RuntimeSettings(**runtime, began=startup.STARTED)
    result = workflow.train(
        args.family, args.data, output_dir, chosen,
        overwrite=args.overwrite, machine=machine,
    )  # fmt: skip
    said.announce_result(args.family, result, chosen, output_dir)
    return 0
