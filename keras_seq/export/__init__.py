"""SavedModel export with string-in, string-out signatures (TF Serving)."""

from keras_seq.export.saved_model import (
    export_classifier,
    export_language_model,
    export_translator,
    require_tensorflow,
)

__all__ = [
    "export_classifier",
    "export_language_model",
    "export_translator",
    "require_tensorflow",
]
