"""TensorFlow loaded with its start-up lines held back.

TensorFlow's C++ runtime writes lines to the process's stderr while it
loads (absl's "All log messages before absl::InitializeLog()", the CUDA
probe, the CPU features), before `TF_CPP_MIN_LOG_LEVEL` or any Python
logging setting reaches them. They say nothing about the command, so a
command that needs TensorFlow (`needs_tensorflow(args)` of its module) has
it loaded here first, with stderr's file descriptor redirected, and only
the other lines passed on.
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


def load_tensorflow():
    """Imports TensorFlow once, its start-up lines held back."""
    if "tensorflow" in sys.modules:
        return
    with startup_lines_held():
        import tensorflow  # noqa: F401
