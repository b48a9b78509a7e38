"""`keras-seq export --format ctranslate2`: a model directory to CTranslate2."""

import os
import tempfile

from keras_seq.export.ctranslate2 import export_ctranslate2

# The families CTranslate2 has a specification for.
FAMILIES = ("translator", "language-model")


def export_trained(trained, export_dir, quantization="float32"):
    """Writes `export_dir` from a `zoo.recipes.model_dir.TrainedModel`.

    A translator's preprocessor is saved as it is loaded (so a directory
    written before `preprocessor.json` existed exports its settings too);
    a language model's vocabulary is read from its directory.

    Returns:
        `export_dir`.

    Raises:
        ValueError: for another family, or what `export_ctranslate2` refuses.
    """
    if trained.family not in FAMILIES:
        raise ValueError(
            f"CTranslate2 export takes {', '.join(FAMILIES)} directories; "
            f"{trained.path} holds a {trained.family} (CTranslate2 has no "
            "specification for it)."
        )
    if trained.preprocessor is None:
        return export_ctranslate2(trained.model, trained.path, export_dir, quantization)
    with tempfile.TemporaryDirectory() as preprocessor_dir:
        trained.preprocessor.save(preprocessor_dir)
        return export_ctranslate2(
            trained.model, preprocessor_dir, os.fspath(export_dir), quantization
        )
