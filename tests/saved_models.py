"""What loading an exported SavedModel without TensorFlow Text does: the
failure a user of stock TensorFlow (or a model server without its ops) meets,
which each export's README.txt must name."""

import os
import subprocess
import sys

_WITHOUT_TEXT_OPS = r"""
import sys
import tensorflow as tf
try:
    tf.saved_model.load(sys.argv[1])
except Exception as error:
    print(str(error).splitlines()[0])
else:
    print("loaded")
"""


def load_without_text_ops(path):
    """The first line of the error loading `path` in a fresh process that
    never imports tensorflow_text ("loaded" when nothing fails)."""
    result = subprocess.run(
        [sys.executable, "-c", _WITHOUT_TEXT_OPS, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip()


def readme(path):
    with open(os.path.join(path, "README.txt"), encoding="utf-8") as file:
        return file.read()
