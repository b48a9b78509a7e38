"""`keras-seq generate`: continue a prompt with a language-model directory."""

from zoo.cli.errors import check_at_least
from zoo.cli.inputs import read_texts
from zoo.cli.loading import load_model_dir


def add_parser(commands):
    """Adds `generate` and its flags to the `keras-seq` subparsers."""
    parser = commands.add_parser(
        "generate", help="continue prompts (arguments, or lines on stdin)"
    )
    parser.add_argument(
        "--model-dir", required=True, help="a language model of `keras-seq train`"
    )
    parser.add_argument(
        "--max-new-tokens",
        type=int,
        default=80,
        help="the most tokens to add (bounded by the model's max_length)",
    )
    parser.add_argument("--top-k", type=int, default=20, help="of the sampler")
    parser.add_argument("--seed", type=int, default=0, help="of the sampler")
    parser.add_argument("prompts", nargs="*", help="default: the lines of stdin")
    parser.set_defaults(run=run)


def run(args):
    """Prints one continuation per prompt (lines of the text joined by " / ").

    Returns:
        0, the exit status.
    """
    check_at_least(args.max_new_tokens, "--max-new-tokens")
    check_at_least(args.top_k, "--top-k")
    check_at_least(args.seed, "--seed", minimum=0)
    prompts = read_texts(args.prompts, "prompts")
    trained = load_model_dir(args.model_dir, ("language-model",), "generate")
    for prompt in prompts:
        print(
            trained.generate(
                prompt, max_new_tokens=args.max_new_tokens, top_k=args.top_k,
                seed=args.seed,
            )
        )  # fmt: skip
    return 0
