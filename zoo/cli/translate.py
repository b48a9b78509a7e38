"""`keras-seq translate`: translate sentences with a model directory or a
SavedModel."""

from keras_seq import defaults
from keras_seq.validation import check_control_values
from zoo.cli import train
from zoo.cli.errors import UsageError, check_at_least, named_as_flags
from zoo.cli.inputs import read_texts, truncation_note
from zoo.cli.loading import compiling_said, load_model_dir
from zoo.recipes.settings import TranslatorSettings
from zoo.serving import ctranslate2_model


def needs_tensorflow(args):
    """Whether `translate` with `args` loads TensorFlow:
    a CTranslate2 export is read without it."""
    return not args.ctranslate2


def add_parser(commands):
    """Adds `translate` and its flags to the `keras-seq` subparsers."""
    parser = commands.add_parser(
        "translate", help="translate sentences (arguments, or lines on stdin)"
    )
    parser.add_argument(
        "--model-dir", default=None, help="a directory of `keras-seq train`"
    )
    parser.add_argument(
        "--saved-model",
        default=None,
        help=(
            "an exported SavedModel (or its base); it decodes with the beams "
            "it was exported with (keras-seq export: "
            f"{TranslatorSettings.beam_width}), or greedily with --beam-width 1"
        ),
    )
    ctranslate2_model.add_translate_arguments(parser)
    train.add_beam_width_argument(
        parser,
        "beams of the search; with --saved-model, 1 or the exported width "
        "(default there: the exported width)",
    )
    parser.add_argument(
        "--length-penalty",
        type=float,
        default=None,
        help="alpha of GNMT's length penalty ((5 + n) / 6) ** alpha, by which "
        "the beams are ranked (0: their summed log-probabilities; default: "
        f"{defaults.LENGTH_PENALTY}); with --model-dir or --ctranslate2, as a "
        "SavedModel ranks with the penalty it was exported with",
    )
    add_control_arguments(parser)
    parser.add_argument(
        "--stream",
        action="store_true",
        help="with --model-dir or --ctranslate2: print each translation as its "
        "words come (greedy)",
    )
    parser.add_argument("texts", nargs="*", help="default: the lines of stdin")
    parser.set_defaults(run=run)


# The decoding controls: flag -> (`TrainedModel.translate`'s argument,
# argparse's options). `generate` offers those that apply to a language
# model, which samples past its end token and forces nothing but its prompt.
CONTROLS = {
    "--target-prefix": ("target_prefix", {
        "help": "the start of every translation, forced, then continued",
    }),
    "--min-new-tokens": ("min_new_tokens", {
        "type": int, "help": "no end token before this many tokens",
    }),
    "--no-repeat-ngram-size": ("no_repeat_ngram_size", {
        "type": int, "help": "no n-gram of this size twice in an output",
    }),
    "--repetition-penalty": ("repetition_penalty", {
        "type": float,
        "help": "CTRL's penalty p > 0 of the tokens written (p > 1: fewer repeats)",
    }),
    "--suppress": ("suppress", {
        "action": "append", "metavar": "TOKEN",
        "help": "a token never written (repeat the flag for more)",
    }),
    "--suppress-unknown": ("suppress_unknown", {
        "action": "store_true", "help": "never write [UNK]",
    }),
    "--scores": ("return_scores", {
        "action": "store_true",
        "help": "print each output's log-probability after a tab (--model-dir)",
    }),
}  # fmt: skip
CONTROL_FLAGS = {flag: name for flag, (name, _) in CONTROLS.items()}
# Those a SavedModel takes, as inputs of `translate_with_controls`.
SAVED_MODEL_CONTROLS = ("target_prefix", "min_new_tokens", "repetition_penalty")


def add_control_arguments(parser, flags=tuple(CONTROLS), title=None):
    """The decoding controls of `TrainedModel.translate` (or `generate`), as
    flags; their bounds are the API's.

    Args:
        parser: the command's `argparse` parser.
        flags: the flags of `CONTROLS` to add.
        title: str, the group's title in `--help`.
    """
    group = parser.add_argument_group(
        title
        or "decoding controls (with --model-dir or --ctranslate2; with "
        "--saved-model and --beam-width 1, the first three)"
    )
    for flag in flags:
        name, options = CONTROLS[flag]
        group.add_argument(flag, dest=name, default=None, **options)


def control_values(args, flags=tuple(CONTROLS)):
    """The controls given on the command line: argument -> value."""
    given = {CONTROL_FLAGS[flag]: getattr(args, CONTROL_FLAGS[flag]) for flag in flags}
    return {name: value for name, value in given.items() if value is not None}


def print_stream(pieces):
    """Prints `pieces` as they come, then the end of the line."""
    for piece in pieces:
        print(piece, end="", flush=True)
    print(flush=True)


def _refuse_what_the_path_cannot_do(args, controls, flags):
    """One `UsageError` naming the flags for a combination no path takes."""
    given = [bool(args.model_dir), bool(args.saved_model), bool(args.ctranslate2)]
    if sum(given) != 1:
        raise UsageError(
            "give exactly one of --model-dir, --saved-model and --ctranslate2."
        )
    check_at_least(args.beam_width, "--beam-width")
    if args.saved_model and args.length_penalty is not None:
        raise UsageError(
            "--length-penalty applies to --model-dir and --ctranslate2; a "
            "SavedModel ranks its beams with the penalty it was exported with."
        )
    unserved = [name for name in controls if name not in SAVED_MODEL_CONTROLS]
    if unserved and args.saved_model:
        named = ", ".join(flags[name] for name in unserved)
        raise UsageError(
            f"{named}: with --saved-model, only --target-prefix, "
            "--min-new-tokens and --repetition-penalty apply (the inputs of its "
            "translate_with_controls signature); the others need --model-dir "
            "or --ctranslate2."
        )
    if controls.get("return_scores") and args.ctranslate2:
        raise UsageError(
            "--scores applies to --model-dir; with --ctranslate2, keras-seq "
            "score --ctranslate2 scores the translations."
        )
    if args.stream and args.saved_model:
        raise UsageError(
            "--stream applies to --model-dir and --ctranslate2: a SavedModel's "
            "signatures decode each batch in one loop, which answers the whole "
            "translation at once."
        )
    if args.stream and (args.beam_width or 1) != 1:
        raise UsageError(
            f"--stream decodes greedily; received --beam-width {args.beam_width}."
        )
    if args.stream and controls.get("return_scores"):
        raise UsageError("--stream writes text as it comes, without --scores.")


def _from_model_dir(args, options, controls, flags):
    """The run directory's translations (printed as they come with
    `--stream`, then None), each with its score under `--scores`."""
    trained = load_model_dir(args.model_dir, "translate")
    with named_as_flags(
        beam_width="--beam-width", length_penalty="--length-penalty", **flags
    ):
        checked = {k: v for k, v in controls.items() if k != "target_prefix"}
        trained.check_translate_options(**options, **checked)
    sentences = read_texts(args.texts)
    if args.stream:
        options.pop("beam_width", None)
        with truncation_note(total=len(sentences)):
            for sentence in sentences:
                print_stream(trained.stream(sentence, **options, **controls))
        return None
    doing = f"translating {len(sentences)} sentence{'s' * (len(sentences) != 1)}"
    with truncation_note(), compiling_said(doing):
        outputs = trained.translate(sentences, **options, **controls)
    if controls.get("return_scores"):
        return [f"{output.text}\t{output.log_prob:.4f}" for output in outputs]
    return outputs


def run(args):
    """Prints one translation per sentence (the arguments, or stdin's lines).

    Returns:
        0, the exit status.
    """
    controls = control_values(args)
    flags = {name: flag for flag, name in CONTROL_FLAGS.items()}
    _refuse_what_the_path_cannot_do(args, controls, flags)
    # Left out, each path's own API decides, and each reads
    # `keras_seq.defaults`: the command adds no default of its own.
    chosen = {"beam_width": args.beam_width, "length_penalty": args.length_penalty}
    options = {name: value for name, value in chosen.items() if value is not None}
    if args.ctranslate2:
        if args.stream:
            options = {"stream": True}
        return ctranslate2_model.translate_command(
            args.ctranslate2, args.texts, **options, **controls, flags=flags
        )
    if args.saved_model:
        from zoo.recipes import saved_model

        with named_as_flags(**flags):
            check_control_values(
                None, controls.get("min_new_tokens"), None,
                controls.get("repetition_penalty"),
            )  # fmt: skip
        with truncation_note():
            outputs = saved_model.serve(
                args.saved_model, read_texts(args.texts), args.beam_width, **controls
            )
    else:
        outputs = _from_model_dir(args, options, controls, flags)
        if outputs is None:
            return 0
    for output in outputs:
        print(output)
    return 0
