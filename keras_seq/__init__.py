"""keras-seq: sequence-model layers for Keras 3 and the machinery around them.

`import keras_seq` starts no Keras: each subpackage loads on first use (PEP
562), so that the TensorFlow-free parts (`keras_seq.text.portable_tokenizer`,
the special-token ids, `keras_seq.defaults`) import without it. Where Keras
is already imported, `import keras_seq` registers every class at once, as
an eager package would. `keras_seq.callbacks` and the
tokenizers and pipelines of `keras_seq.text` need TensorFlow, which a model
on another backend does not; the corpus loaders are `keras_seq.data`.

Importing a module registers its serializable classes; a compiled model
saved with this package's losses, metrics or schedules loads once
`keras_seq.losses`, `keras_seq.metrics` and `keras_seq.schedules` are
imported (`keras_seq.register_all()` imports every one).
"""

import importlib
import sys

__version__ = "0.1.0"

_SUBMODULES = ("layers", "losses", "masks", "metrics", "schedules")

__all__ = [*_SUBMODULES, "__version__", "register_all"]


def register_all():
    """Imports the modules whose classes a saved model may name."""
    for name in _SUBMODULES:
        importlib.import_module(f"keras_seq.{name}")


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"keras_seq.{name}")
    raise AttributeError(f"module 'keras_seq' has no attribute {name!r}")


if "keras" in sys.modules:
    register_all()
