"""keras-seq: sequence-model layers for Keras 3 and the machinery around them.

`keras_seq.callbacks` and the tokenizers and pipelines of `keras_seq.text`
need TensorFlow, which a model on another backend does not, so they are
imported on their own, as are the corpus loaders of `keras_seq.data`.
"""

# Importing the losses, metrics and schedules registers them, so that a
# compiled model saved with them loads after a plain `import keras_seq`.
from keras_seq import layers, losses, masks, metrics, schedules

__version__ = "0.1.0"

__all__ = ["layers", "losses", "masks", "metrics", "schedules", "__version__"]
