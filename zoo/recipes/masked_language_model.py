"""The masked language model's family: plain text in, an encoder with a
fill-in head out (BERT-style), scored by its masked-token accuracy on the
validation split."""

import dataclasses
import types

from zoo.recipes.recipe import Execution, OneVocabularyResult, Recipe, masked_loss
from zoo.recipes.settings import MaskedLanguageModelSettings


class MaskedLanguageModelRecipe(Recipe):
    """`keras-seq train masked-language-model`: AdamW, 15% of tokens masked."""

    name = "masked-language-model"
    builder_name = "build_masked_language_model"
    presets_name = "ENCODER_PRESETS"
    settings = MaskedLanguageModelSettings

    def preprocessor(self, config, run):
        from keras_seq import text

        return text.MaskedLanguageModelPreprocessor, {
            "max_length": config["max_length"]
        }

    def read_corpus(self, data, chosen):
        from zoo.recipes import corpora

        return corpora.text_corpus(data)

    # Training.

    def optimizer(self, model, settings):
        """AdamW at `settings.learning_rate`, weight decay 0.01."""
        import keras

        return keras.optimizers.AdamW(settings.learning_rate, weight_decay=0.01)

    def compile_options(self, settings):
        from keras_seq.losses import MaskedSparseCategoricalCrossentropy
        from keras_seq.metrics import MaskedAccuracy

        return {
            "loss": MaskedSparseCategoricalCrossentropy(),
            "metrics": [MaskedAccuracy()],
        }

    def make_preprocessor(self, model, tokenizers, corpus, settings):
        from keras_seq import text

        return text.MaskedLanguageModelPreprocessor(
            *tokenizers, model.get_config()["max_length"]
        )

    def score(self, fitted, corpus, settings, runtime):
        """The masked-token accuracy on the validation split."""
        validation = self.dataset(fitted, corpus.validation, settings)
        _, accuracy = fitted.model.evaluate(validation, verbose=0)
        return MaskedLanguageModelResult(
            fitted.model, fitted.preprocessor, fitted.history, float(accuracy),
            fitted.model.get_config()["max_length"],
        )  # fmt: skip

    # Evaluation.

    def evaluate(self, trained, corpus, chosen):
        """Test masked-token loss of a loaded run."""
        dataset = trained.preprocessor.dataset(corpus.test, chosen.batch_size)
        return {"test_masked_loss": masked_loss(trained.model, dataset)}


RECIPE = MaskedLanguageModelRecipe()


@dataclasses.dataclass(frozen=True)
class MaskedLanguageModelResult(OneVocabularyResult):
    """A trained masked language model and its figures.

    Attributes:
        validation_masked_accuracy: float in [0, 1].
        max_length: int, the model's.
    """

    validation_masked_accuracy: float
    max_length: int

    def record(self):
        """The figures `run.json` keeps."""
        return {"validation_masked_accuracy": self.validation_masked_accuracy}

    def summary(self, settings):
        accuracy = self.validation_masked_accuracy
        return f"validation masked-token accuracy {accuracy:.1%}"


def train_masked_language_model(
    corpus_texts, output_dir, settings=None, *, verbose=1, strategy=None, **changes
):
    """Trains the masked language model on `(train, validation)` texts
    (`Recipe.train`).

    Args:
        corpus_texts: a pair of lists of str, training and validation.
        output_dir: str or `RunDir`, for the vocabulary and checkpoints.
        settings: a `MaskedLanguageModelSettings`, or None for its defaults.
        verbose: int, Keras' progress display.
        strategy: a `tf.distribute` strategy or None.
        **changes: settings over `settings`, and builder arguments over the
            preset.

    Returns:
        A `MaskedLanguageModelResult`.
    """
    settings = (settings or MaskedLanguageModelSettings()).replace(**changes)
    train, validation = corpus_texts
    corpus = types.SimpleNamespace(train=train, validation=validation)
    return RECIPE.train(corpus, output_dir, settings, Execution(verbose, strategy))
