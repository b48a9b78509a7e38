"""The language model's family: plain text in, a decoder-only causal
Transformer out, scored by validation and test perplexity, with a sampled
continuation of a validation line."""

import dataclasses
import inspect
import math

from zoo.recipes.inference import SAMPLE_TOP_K, generate_text
from zoo.recipes.recipe import Execution, OneVocabularyResult, Recipe, masked_loss
from zoo.recipes.settings import LanguageModelSettings


class LanguageModelRecipe(Recipe):
    """`keras-seq train language-model`: Adam with warm-up on fixed windows."""

    name = "language-model"
    builder_name = "build_language_model"
    presets_name = "LANGUAGE_MODEL_PRESETS"
    settings = LanguageModelSettings
    commands = frozenset({"generate", "export", "ctranslate2"})

    def preprocessor(self, config, run):
        from keras_seq import text

        max_length = config["max_length"]
        length = min(run.get("sequence_length", max_length), max_length)
        return text.LanguageModelPreprocessor, {
            "max_length": max_length,
            "sequence_length": length,
        }

    def read_corpus(self, data, chosen):
        from zoo.recipes import corpora

        return corpora.text_corpus(data)

    # Training.

    def optimizer(self, model, settings):
        """The Transformer's optimizer: Adam(0.9, 0.98, 1e-9) on the
        inverse-square-root warm-up of Vaswani et al. (2017), Eq. (3)."""
        return warmup_adam(model, settings)

    def compile_options(self, settings):
        from keras_seq.losses import MaskedSparseCategoricalCrossentropy
        from keras_seq.metrics import MaskedAccuracy

        return {
            "loss": MaskedSparseCategoricalCrossentropy(),
            "metrics": [MaskedAccuracy()],
        }

    def make_preprocessor(self, model, tokenizers, corpus, settings):
        from keras_seq import text

        # A model without a length limit of its own (a recurrent one) takes
        # the recipe's `max_length` for its texts.
        max_length = model.get_config().get("max_length") or settings.max_length
        sequence_length = min(settings.sequence_length, max_length)
        return text.LanguageModelPreprocessor(*tokenizers, max_length, sequence_length)

    def score(self, fitted, corpus, settings, runtime):
        """Validation and test perplexity, and a sample from the first
        words of a validation line (what the model learned, beside its
        perplexity)."""
        model, preprocessor = fitted.model, fitted.preprocessor
        validation = self.dataset(fitted, corpus.validation, settings)
        validation_loss = model.evaluate(validation, verbose=0)[0]
        test = self.dataset(fitted, corpus.test, settings)
        test_loss = model.evaluate(test, verbose=0)[0]
        prompt = " ".join(corpus.validation[0].split()[:4])
        sample = generate_text(
            model, preprocessor, prompt, None, SAMPLE_TOP_K, None, settings.seed
        )
        return LanguageModelResult(
            model, preprocessor, fitted.history, math.exp(validation_loss),
            math.exp(test_loss), preprocessor.sequence_length, sample,
        )  # fmt: skip

    # Evaluation and export.

    def evaluate(self, trained, corpus, chosen):
        """Test perplexity of a loaded run, on windows of the length it was
        trained on (its preprocessor's)."""
        dataset = trained.preprocessor.dataset(corpus.test, chosen.batch_size)
        return {"test_perplexity": math.exp(masked_loss(trained.model, dataset))}

    def export(self, trained, export_dir, version):
        from keras_seq import export

        # A model too short for the export's default continuation (a tiny
        # one) gives half its `max_length` to the continuation, half to the
        # prompt, rather than being refused.
        default = (
            inspect.signature(export.export_language_model)
            .parameters["max_new_tokens"]
            .default
        )
        return export.export_language_model(
            trained.model, trained.preprocessor, export_dir, version=version,
            max_new_tokens=min(default, trained.preprocessor.max_length // 2),
        )  # fmt: skip


RECIPE = LanguageModelRecipe()


@dataclasses.dataclass(frozen=True)
class LanguageModelResult(OneVocabularyResult):
    """A trained language model and its figures.

    Attributes:
        validation_perplexity: float, per WordPiece token.
        test_perplexity: float, per WordPiece token.
        sequence_length: int, tokens of a training window.
        sample: str, a continuation of a validation line.
    """

    validation_perplexity: float
    test_perplexity: float
    sequence_length: int
    sample: str = ""

    def record(self):
        """The figures `run.json` keeps (`evaluate` reads `sequence_length`)."""
        return {
            "validation_perplexity": self.validation_perplexity,
            "test_perplexity": self.test_perplexity,
            "sequence_length": self.sequence_length,
        }

    def summary(self, settings):
        return (
            f"validation perplexity {self.validation_perplexity:.1f}, "
            f"test perplexity {self.test_perplexity:.1f} (per token)"
        )

    @property
    def notes(self):
        """Lines printed after the summary."""
        return (f"sample: {self.sample}",)


def warmup_adam(model, settings):
    """Adam(0.9, 0.98, 1e-9) on the inverse-square-root warm-up of Vaswani
    et al. (2017), Eq. (3), at the model's width."""
    import keras

    from keras_seq.schedules import InverseSquareRootWarmup

    schedule = InverseSquareRootWarmup(
        model.get_config()["model_dim"],
        settings.warmup_steps,
        scale=settings.learning_rate_scale,
    )
    return keras.optimizers.Adam(schedule, 0.9, 0.98, 1e-9)


def train_language_model(
    corpus, output_dir, settings=None, *, recipe=RECIPE, verbose=1, strategy=None,
    **changes,
):  # fmt: skip
    """Trains a language model on a `TextCorpus` (lines of text;
    `Recipe.train`).

    Args:
        corpus: an object with `train`, `validation` and `test` lists of
            str, such as a `keras_seq.data.TextCorpus`.
        output_dir: str or `RunDir`, for the vocabulary and checkpoints.
        settings: the recipe's settings, or None for its defaults.
        recipe: the family (`RECIPE`, or the RNN language model's).
        verbose: int, Keras' progress display.
        strategy: a `tf.distribute` strategy or None.
        **changes: settings over `settings`, and builder arguments over the
            preset.

    Returns:
        A `LanguageModelResult`.
    """
    settings = (settings or recipe.settings()).replace(**changes)
    return recipe.train(corpus, output_dir, settings, Execution(verbose, strategy))
