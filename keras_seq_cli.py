"""The `keras-seq` console script: `zoo.cli` with TensorFlow's start-up lines held.

TensorFlow's C++ runtime writes lines to the process's stderr while it
loads (absl's "All log messages before absl::InitializeLog()", the CUDA
probe, the CPU features), before `TF_CPP_MIN_LOG_LEVEL` or any Python
logging setting reaches them. They say nothing about the command, so the
command line loads its modules with stderr's file descriptor redirected
and passes on only the other lines. A command on a CTranslate2 export
(`translate --ctranslate2`, `serve --ctranslate2`) and `--help` import
neither.
"""

import contextlib
import os
import sys
import tempfile

# The starts of the lines TensorFlow's runtime writes while it loads.
STARTUP_LOG_PREFIXES = (
    "WARNING: All log messages before absl::InitializeLog()",
    "I0000 ",
    "W0000 ",
    "E0000 ",
    "To enable the following instructions",
)


@contextlib.contextmanager
def startup_lines_held():
    """Redirects file descriptor 2; replays its lines but the start-up logs."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            for line in held.read().decode("utf-8", "replace").splitlines(True):
                if not line.startswith(STARTUP_LOG_PREFIXES):
                    sys.stderr.write(line)
            sys.stderr.flush()


def _needs_tensorflow(argv):
    """Whether the command line will load TensorFlow: every command but
    `--help`, `--version`, `presets` and those on a CTranslate2 export."""
    light = {"-h", "--help", "--version", "--ctranslate2"}
    return not (
        light & {arg.split("=")[0] for arg in argv} or argv[:1] in ([], ["presets"])
    )


def main(argv=None):
    """Runs `keras-seq`; see `zoo.cli.main.main`.

    The command line itself imports no TensorFlow; a command that will load
    it loads it here first, its start-up lines held.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if _needs_tensorflow(argv):
        with startup_lines_held():
            import tensorflow  # noqa: F401
    from zoo.cli import main as run

    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
