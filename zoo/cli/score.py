"""`keras-seq score`: the log-probability a translator gives translations
of its sources (quality estimation, reranking), with a model directory."""

from zoo.cli.errors import UsageError, named_as_flags
from zoo.cli.inputs import read_texts, truncation_note
from zoo.cli.loading import load_model_dir
from zoo.recipes.families import listed


def needs_tensorflow(args):
    """Whether `score` with `args` loads TensorFlow:
    a CTranslate2 export is read without it."""
    return not args.ctranslate2


def add_parser(commands):
    """Adds `score` and its flags to the `keras-seq` subparsers."""
    parser = commands.add_parser(
        "score",
        help="score translations: source<TAB>target pairs (arguments, or "
        "lines on stdin)",
    )
    parser.add_argument(
        "--model-dir",
        default=None,
        help=f"a run of `keras-seq train` ({listed('translate')})",
    )
    parser.add_argument(
        "--ctranslate2",
        default=None,
        metavar="DIR",
        help="a CTranslate2 export (its score_batch, which rules out no "
        "token); runs without TensorFlow",
    )
    parser.add_argument(
        "--tokens",
        action="store_true",
        help="also print each target token and its log-probability",
    )
    parser.add_argument(
        "--batch-size", type=int, default=64, help="pairs scored together"
    )
    parser.add_argument("pairs", nargs="*", help="default: the lines of stdin")
    parser.set_defaults(run=run)


def _split(lines):
    """`source<TAB>target` lines -> (sources, targets).

    Raises:
        UsageError: naming the first line without a tab.
    """
    sources, targets = [], []
    for number, line in enumerate(lines, start=1):
        if "\t" not in line:
            raise UsageError(
                f"pair {number} has no tab; expected source<TAB>target, "
                f"received {line[:60]!r}."
            )
        source, target = line.split("\t", 1)
        sources.append(source)
        targets.append(target)
    return sources, targets


def run(args):
    """Prints, per pair, the target's log-probability (natural log, its
    `[END]` included) and its mean per token, tab-separated; with
    `--tokens`, then each `token=log-probability`.

    Returns:
        0, the exit status.
    """
    if bool(args.model_dir) == bool(args.ctranslate2):
        raise UsageError("give exactly one of --model-dir and --ctranslate2.")
    if args.ctranslate2:
        from zoo.serving.ctranslate2_model import CTranslate2Model

        try:
            model = CTranslate2Model(args.ctranslate2)
        except (ValueError, ImportError) as error:
            raise UsageError(f"--ctranslate2 {args.ctranslate2}: {error}") from None
    else:
        model = load_model_dir(args.model_dir, "translate")
    sources, targets = _split(read_texts(args.pairs, "source<TAB>target pairs"))
    if not sources:
        return 0
    if args.ctranslate2:
        from zoo.serving.ctranslate2_model import say_truncated

        with named_as_flags(batch_size="--batch-size"):
            scored = model.score(sources, targets, batch_size=args.batch_size)
        say_truncated(model, len(sources))
    else:
        with named_as_flags(batch_size="--batch-size"), truncation_note():
            scored = model.score(sources, targets, batch_size=args.batch_size)
    for output in scored:
        line = f"{output.log_prob:.4f}\t{output.log_prob / len(output.tokens):.4f}"
        if args.tokens:
            pieces = (f"{t}={v:.4f}" for t, v in zip(output.tokens, output.log_probs))
            line += "\t" + " ".join(pieces)
        print(line)
    return 0
