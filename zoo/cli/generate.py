"""`keras-seq generate`: continue a prompt with a language-model directory."""

from zoo.cli.errors import UsageError, named_as_flags
from zoo.cli.inputs import read_texts, truncation_note
from zoo.cli.loading import load_model_dir
from zoo.cli.translate import (
    CONTROL_FLAGS,
    add_control_arguments,
    control_values,
    print_stream,
)
from zoo.recipes.families import listed
from zoo.recipes.settings import GenerateSettings


def needs_tensorflow(args):
    """Whether `generate` with `args` loads TensorFlow:
    it loads a Keras model and its TensorFlow text pipeline."""
    del args
    return True


# A language model samples past its end token (no minimum length to hold)
# and starts from its prompt (no prefix to force).
GENERATE_CONTROLS = (
    "--no-repeat-ngram-size", "--repetition-penalty", "--suppress", "--scores",
)  # fmt: skip


def add_parser(commands):
    """Adds `generate` and its flags to the `keras-seq` subparsers."""
    parser = commands.add_parser(
        "generate", help="continue prompts (arguments, or lines on stdin)"
    )
    parser.add_argument(
        "--model-dir",
        required=True,
        help=f"a run of `keras-seq train` ({listed('generate')})",
    )
    defaults = GenerateSettings()
    parser.add_argument(
        "--max-new-tokens",
        type=int,
        default=None,
        help="the most tokens to add (at most the model's max_length - 1); "
        "None: as many as the model's max_length leaves",
    )
    parser.add_argument(
        "--top-k",
        type=int,
        default=None,
        help=f"of the sampler (default: {defaults.top_k})",
    )
    parser.add_argument(
        "--top-p", type=float, default=None, help="of the sampler, in (0, 1]"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="of the sampler; a prompt and a seed always give the same text "
        f"(default: {defaults.seed})",
    )
    add_control_arguments(parser, GENERATE_CONTROLS, "decoding controls")
    parser.add_argument(
        "--stream", action="store_true", help="print each text as its words come"
    )
    parser.add_argument("prompts", nargs="*", help="default: the lines of stdin")
    parser.set_defaults(run=run)


def run(args):
    """Prints one continuation per prompt (lines of the text joined by " / ").

    Returns:
        0, the exit status.
    """
    defaults = GenerateSettings()
    options = {
        name: getattr(defaults, name) if value is None else value
        for name, value in (
            ("max_new_tokens", args.max_new_tokens),
            ("top_k", args.top_k),
            ("top_p", args.top_p),
            ("seed", args.seed),
        )
    }
    controls = control_values(args, GENERATE_CONTROLS)
    if args.stream and controls.get("return_scores"):
        raise UsageError("--stream writes text as it comes, without --scores.")
    flags = {name: "--" + name.replace("_", "-") for name in options}
    flags.update({name: flag for flag, name in CONTROL_FLAGS.items()})
    trained = load_model_dir(args.model_dir, "generate")
    with named_as_flags(**flags):
        trained.check_generate_options(**options, **controls)
    prompts = read_texts(args.prompts, "prompts")
    # One prompt at a time: each draws from the seed as if it were alone.
    with truncation_note(total=len(prompts)):
        for prompt in prompts:
            if args.stream:
                print_stream(trained.stream(prompt, **options, **controls))
                continue
            output = trained.generate(prompt, **options, **controls)
            if controls.get("return_scores"):
                output = f"{output.text}\t{output.log_prob:.4f}"
            print(output)
    return 0
