"""SavedModel export with string-in, string-out signatures (TF Serving), and
CTranslate2 export for serving without TensorFlow (`ctranslate2` extra)."""

from keras_seq.export.ctranslate2 import export_ctranslate2
from keras_seq.export.saved_model import (
    export_classifier,
    export_language_model,
    export_translator,
    require_tensorflow,
)

__all__ = [
    "export_classifier",
    "export_ctranslate2",
    "export_language_model",
    "export_translator",
    "require_tensorflow",
]
