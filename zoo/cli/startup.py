"""TensorFlow loaded with its start-up lines held back, and JAX's compiled
loops kept for the next command.

TensorFlow's C++ runtime writes lines to the process's stderr while it
loads (absl's "All log messages before absl::InitializeLog()", the CUDA
probe, the CPU features), before `TF_CPP_MIN_LOG_LEVEL` or any Python
logging setting reaches them. They say nothing about the command, so a
command that needs TensorFlow (`needs_tensorflow(args)` of its module) has
it loaded here first, with stderr's file descriptor redirected, and only
the other lines passed on.

A command that decodes compiles its loops (one executable per batch
shape) before its first output. On JAX, `use_compilation_cache` keeps the
executables in a directory that the next command reads instead of
compiling again. TensorFlow's own persistent XLA cache
(`--tf_xla_persistent_cache_directory`) is not used: on the CPU it stores
ahead-of-time results tied to the compiling machine's CPU features, and
loading them logs parse errors and a warning of illegal instructions.
"""

import contextlib
import os
import sys
import tempfile
import time

# When the command began, its imports to come: `train --minutes` counts from
# here, as the user's clock does (loading TensorFlow alone takes seconds).
STARTED = time.time()

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


def load_tensorflow():
    """Imports TensorFlow once, its start-up lines held back."""
    if "tensorflow" in sys.modules:
        return
    with startup_lines_held():
        import tensorflow  # noqa: F401


# `KERAS_SEQ_COMPILATION_CACHE`: a directory, or "off"; unset, the user's
# cache directory.
CACHE_VARIABLE = "KERAS_SEQ_COMPILATION_CACHE"


def compilation_cache_directory():
    """Where JAX's compiled loops are kept, or None when switched off."""
    chosen = os.environ.get(CACHE_VARIABLE)
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "0", "off") else chosen
    home = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(home, "keras-seq", "jax")


def use_compilation_cache(directory=None):
    """On JAX, keeps compiled executables in `directory` for later processes.

    Args:
        directory: str, or None for `compilation_cache_directory()`.

    Returns:
        The directory used, or None (another backend, or switched off).
    """
    import keras

    directory = directory or compilation_cache_directory()
    if directory is None or keras.backend.backend() != "jax":
        return None
    import jax

    jax.config.update("jax_compilation_cache_dir", directory)
    return directory
