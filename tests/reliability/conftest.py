"""Artifacts shared by the reliability tests, each made once per session.

A small vocabulary and tokenizer, tiny (untrained) models built on it, a
model directory as `keras-seq train` writes it, and SavedModels exported
from a translator and a classifier. Untrained models are enough here: the
tests check how inputs are refused or survived, not what is predicted.
"""

import keras
import pytest

from keras_seq import text
from tests import command_line

WORDS = [f"w{i}" for i in range(24)]
PUNCTUATION = [".", "!", "?", ",", "'", "-"]
VOCABULARY = list(text.RESERVED_TOKENS) + WORDS + PUNCTUATION
MAX_NEW_TOKENS = 8
BEAM_WIDTH = 2
CLASS_NAMES = ["negative", "positive"]

# TensorFlow and absl print these on stderr before logging is configured;
# they are not part of what the command line says.
_LOG_PREFIXES = ("WARNING: All log messages", "I0000", "W0000", "E0000", "To enable")


def requires_tensorflow():
    return pytest.mark.skipif(
        keras.backend.backend() != "tensorflow",
        reason="text pipelines and SavedModel export run on TensorFlow",
    )


def run_cli(*args, cwd=None, timeout=240, in_process=False):
    """`keras-seq ARGS`, in a fresh process or this one
    (`tests.command_line.run_cli`).

    Returns:
        `(returncode, stderr lines without TensorFlow's start-up logs,
        whole stderr)`.
    """
    result = command_line.run_cli(
        *args, cwd=cwd, timeout=timeout, in_process=in_process
    )
    lines = [
        line
        for line in result.stderr.splitlines()
        if line.strip() and not line.startswith(_LOG_PREFIXES)
    ]
    return result.returncode, lines, result.stderr


@pytest.fixture(scope="session")
def tokenizer():
    return text.make_tokenizer(VOCABULARY)


@pytest.fixture(scope="session")
def translator():
    """A tiny translator that never picks [END].

    Every sentence with a token then gets a translation of full length,
    so an empty answer can only come from the blank-input guard of the
    export, which the fuzz tests check.
    """
    import zoo

    keras.utils.set_random_seed(0)
    model = zoo.build_translator("tiny", vocabulary_size=len(VOCABULARY))
    bias = keras.ops.convert_to_numpy(model.output_dense.bias).copy()
    bias[text.END_ID] = -100.0
    model.output_dense.bias.assign(bias)
    return model


@pytest.fixture(scope="session")
def classifier():
    import zoo

    keras.utils.set_random_seed(0)
    return zoo.build_classifier("tiny", vocabulary_size=len(VOCABULARY))


@pytest.fixture(scope="session")
def translator_dir(tmp_path_factory, translator):
    """A translator directory as `keras-seq train translator` leaves it."""
    from zoo.recipes import run_dir

    root = tmp_path_factory.mktemp("translator_dir")
    text.save_vocabulary(VOCABULARY, root / "source_vocabulary.txt")
    text.save_vocabulary(VOCABULARY, root / "target_vocabulary.txt")
    run_dir.RunDir(str(root)).save(
        "translator", translator, {"data": "tiny"}, ("source", "target")
    )
    return root


@pytest.fixture(scope="session")
def lambda_model_file(tmp_path_factory):
    """A `.keras` file whose model holds a `Lambda` layer (Python bytecode)."""
    path = tmp_path_factory.mktemp("lambda") / "model.keras"
    inputs = keras.Input((None,), dtype="int32", name="token_ids")
    outputs = keras.layers.Lambda(lambda x: x * 2, name="doubling")(inputs)
    keras.Model(inputs, outputs).save(path)
    return path


@pytest.fixture(scope="session")
def served_translator(tmp_path_factory, translator, tokenizer):
    """The translator's SavedModel, exported once and loaded back."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the WordPiece ops)

    from keras_seq import export

    root = tmp_path_factory.mktemp("served_translator")
    path = export.export_translator(
        translator,
        text.TranslationPreprocessor(tokenizer, max_length=translator.max_length),
        root,
        max_new_tokens=MAX_NEW_TOKENS,
        beam_width=BEAM_WIDTH,
    )
    return path, tf.saved_model.load(path)


@pytest.fixture(scope="session")
def served_classifier(tmp_path_factory, classifier, tokenizer):
    import tensorflow as tf

    from keras_seq import export

    root = tmp_path_factory.mktemp("served_classifier")
    from keras_seq import text

    preprocessor = text.ClassificationPreprocessor(tokenizer, 16)
    path = export.export_classifier(
        classifier, preprocessor, root, class_names=CLASS_NAMES
    )
    return path, tf.saved_model.load(path)
