"""The `keras-seq` console script: `zoo.cli` with TensorFlow's start-up lines held.

TensorFlow's C++ runtime writes lines to the process's stderr while it
loads (absl's "All log messages before absl::InitializeLog()", the CUDA
probe, the CPU features), before `TF_CPP_MIN_LOG_LEVEL` or any Python
logging setting reaches them. They say nothing about the command, so the
command line loads its modules with stderr's file descriptor redirected
and passes on only the other lines. This lives outside `zoo` because
importing any module of `zoo` loads Keras, and with it TensorFlow.
"""

import contextlib
import importlib
import os
import sys
import tempfile
import types

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


# The packages whose `__init__` loads Keras, TensorFlow or TensorFlow Text.
HEAVY_PACKAGES = ("keras_seq", "keras_seq.text", "zoo")


def import_without_keras(name):
    """Imports module `name` of `keras_seq` or `zoo` without the `__init__`
    modules of `HEAVY_PACKAGES`, which load Keras (and with it TensorFlow).

    Those packages are registered as bare packages, so only the modules
    imported by name run: the CTranslate2 path uses this to stay free of
    TensorFlow and Keras. A process that imports the packages normally must
    do so before calling this.
    """
    root = os.path.dirname(os.path.abspath(__file__))
    for package in HEAVY_PACKAGES:
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [os.path.join(root, *package.split("."))]
            module.__package__ = package
            sys.modules[package] = module
    return importlib.import_module(name)


def _ctranslate2_command(argv):
    """Whether `argv` runs a command on a CTranslate2 export."""
    return argv[:1] in (["translate"], ["serve"]) and any(
        arg == "--ctranslate2" or arg.startswith("--ctranslate2=") for arg in argv
    )


def main(argv=None):
    """Runs `keras-seq`; see `zoo.cli.main.main`."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if _ctranslate2_command(argv):
        return import_without_keras("zoo.serving.ctranslate2_model").main(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with startup_lines_held():
        from zoo.cli import main as run

    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
