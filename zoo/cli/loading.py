"""Loading a model directory named by `--model-dir`, and saying what its
first call waits for."""

import contextlib
import sys
import time

from zoo.cli.errors import reported_as_usage


def load_model_dir(path, command=None):
    """`zoo.recipes.model_dir.load_model_dir`, its refusals as `UsageError`.

    A missing file, an unknown family, a vocabulary that is not the model's
    or a model that is unsafe to load are all about the directory the user
    named.

    Args:
        path: str, the `--model-dir`.
        command: str, the command whose runs must support it
            (`Recipe.supports`), or None for any run.

    Returns:
        A `model_dir.TrainedModel`.
    """
    from zoo.recipes import model_dir
    from zoo.recipes.families import FAMILIES, listed

    print(f"loading {path}...", file=sys.stderr, flush=True)
    with reported_as_usage(ValueError):
        try:
            trained = model_dir.load_model_dir(path)
        except ValueError as error:
            raise ValueError(f"--model-dir {error}") from None
    if command and not FAMILIES[trained.family].supports(command):
        with reported_as_usage(ValueError):
            raise ValueError(
                f"--model-dir {path} holds a {trained.family}; `{command}` "
                f"needs a {listed(command, 'or')}."
            )
    return trained


@contextlib.contextmanager
def compiling_said(doing):
    """Says on stderr what the command is `doing` and that its decoding
    loop compiles first, then how long the whole call took.

    A fresh process compiles one decoding loop per batch shape before its
    first output (seconds quiet, minutes on a busy machine); without a word
    the command looks hung.

    Args:
        doing: str, e.g. "translating 20 sentences".
    """
    print(
        f"{doing} (each new batch size compiles its decoding loop first)...",
        file=sys.stderr,
        flush=True,
    )
    began = time.perf_counter()
    yield
    seconds = time.perf_counter() - began
    print(f"done in {seconds:.1f} s, compiling included", file=sys.stderr, flush=True)
