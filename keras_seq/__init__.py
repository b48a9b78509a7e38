"""keras-seq: sequence-model layers for Keras 3 and the machinery around them."""

from keras_seq import layers, masks

__version__ = "0.1.0"

__all__ = ["layers", "masks", "__version__"]
