"""`keras-seq` as the tests run it: in a fresh process, or in this one.

A fresh process is what a user runs: the installed entry point, TensorFlow's
start-up lines held back, the backend chosen by `KERAS_BACKEND`. It costs
about 7 s to import TensorFlow, Keras and keras-hub, more than most
commands that refuse their arguments take in all. Those refusals happen
before anything is loaded or written, so `in_process=True` calls
`zoo.cli.main.main` here instead and checks the same exit status and the
same stderr; the tests of the entry point itself (`--version`, `--help`,
start-up lines) and of commands that train, translate or serve keep fresh
processes.
"""

import contextlib
import io
import os
import subprocess
import sys


def cli_command(*args):
    """`keras-seq ARGS` as a fresh process runs it."""
    return [sys.executable, "-m", "zoo.cli", *map(str, args)]


def cli_env(backend="tensorflow"):
    return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND=backend)


def run_cli(
    *args, timeout=600, backend="tensorflow", in_process=False, input=None, cwd=None
):
    """`keras-seq ARGS`, its output captured as text.

    Args:
        *args: the command line, each converted with `str`.
        timeout: seconds a fresh process may take.
        backend: `KERAS_BACKEND` of the fresh process.
        in_process: run `zoo.cli.main.main` in this process (its backend).
        input: str, the command's stdin.
        cwd: the working directory of the command.

    Returns:
        A `subprocess.CompletedProcess` with `returncode`, `stdout` and
        `stderr`.
    """
    if not in_process:
        return subprocess.run(
            cli_command(*args),
            capture_output=True,
            text=True,
            timeout=timeout,
            env=cli_env(backend),
            input=input,
            cwd=cwd,
        )
    import keras

    from zoo.cli.main import main

    assert keras.backend.backend() == backend, "in_process runs on this backend"
    argv = list(map(str, args))
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    stdin = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO((input or "").encode()), "utf-8")
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(argv)
            except SystemExit as exit:  # argparse: --help, --version, bad usage
                status = exit.code if isinstance(exit.code, int) else 1
    finally:
        os.chdir(here)
        sys.stdin = stdin
    return subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())
