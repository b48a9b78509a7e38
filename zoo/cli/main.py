"""The `keras-seq` command line: `build_parser` and `main`.

Each command is a module of `zoo.cli` with `add_parser(commands)` and
`run(args)`. Errors the user can fix (a missing corpus, a bad file, a bad
argument) are `UsageError`s, printed as one line on stderr with exit status
1, and so is a malformed command line (an unknown flag or command, a value
of the wrong type), which argparse alone would answer with its usage block
and status 2; anything else is a bug and shows its traceback.

Each command module also says whether a parsed command needs TensorFlow
(`needs_tensorflow(args)`): parsing imports none, so `--help` and
`--version` answer at once, and a command that needs it loads it before it
runs with TensorFlow's start-up lines held back (`zoo.cli.startup`). The
console script `keras-seq` and `python -m zoo.cli` are both `main`.
"""

import argparse
import importlib.metadata
import os
import sys

from zoo.cli import (
    classify,
    demo,
    evaluate,
    export,
    generate,
    import_command,
    presets,
    score,
    serve,
    train,
    translate,
)
from zoo.cli.errors import UsageError
from zoo.cli.startup import load_tensorflow, use_compilation_cache
from zoo.recipes.allocator import tune_allocator


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each flag's default, except None: such a flag takes its value
    from the recipe's settings, which its help names."""

    def _get_help_string(self, action):
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose refusals are `UsageError`s naming the help."""

    def error(self, message):
        raise UsageError(f"{message}; see {self.prog} --help")


COMMANDS = (
    demo,
    train,
    evaluate,
    translate,
    score,
    classify,
    generate,
    export,
    import_command,
    presets,
    serve,
)


def command_name(module):
    """The command a module of `COMMANDS` runs: its `COMMAND`, or its name."""
    return getattr(module, "COMMAND", module.__name__.rsplit(".", 1)[-1])


def command_module(name):
    """The module of `COMMANDS` that runs `keras-seq NAME`."""
    (module,) = [m for m in COMMANDS if command_name(m) == name]
    return module


def _version():
    # Read from the installed metadata: importing `keras_seq` for its
    # `__version__` would start Keras.
    try:
        return importlib.metadata.version("keras-seq")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


def build_parser():
    """The argument parser of `keras-seq`, one subcommand per command module.

    Returns:
        An `argparse.ArgumentParser`; parsed arguments carry the command's
        `run`.
    """
    parser = _Parser(prog="keras-seq", description="Sequence models for Keras 3.")
    parser.add_argument(
        "--version", action="version", version=f"keras-seq {_version()}"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(commands)
    for subparser in commands.choices.values():
        subparser.formatter_class = _HelpFormatter
    return parser


def main(argv=None):
    """Runs `keras-seq` with `argv` (default: the process's arguments).

    Args:
        argv: list of str, or None for `sys.argv[1:]`.

    Returns:
        The exit status: 0, or 1 after a `UsageError` (a malformed command
        line too) or once the reader of stdout has closed it.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args, unknown = build_parser().parse_known_args(argv)
        if unknown:
            raise UsageError(
                f"unrecognized arguments: {' '.join(unknown)}; see keras-seq "
                f"{args.command} --help"
            )
        if command_module(args.command).needs_tensorflow(args):
            load_tensorflow()
            use_compilation_cache()
        tune_allocator()  # Every command reuses its large buffers.
        status = args.run(args)
        sys.stdout.flush()
        return status
    except UsageError as error:
        # The message names the argument or file and the fix; a traceback
        # would only hide it.
        print(f"keras-seq: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader of the output has gone (`keras-seq presets | head -3`):
        # nothing is lost that it asked for. Python's own last flush of
        # stdout would print a traceback, so stdout becomes /dev/null.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
