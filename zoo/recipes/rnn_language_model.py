"""The RNN language model's recipe (Eq. 7.2, 7.14–7.19): plain text in, a
stacked SimpleRNN / LSTM / GRU language model out, scored by perplexity,
with a sampled continuation.

The language model's recipe (`zoo.recipes.language_model`) with the
recurrent builder, Adam at a fixed rate with clipped gradients (Zaremba et
al., 2014), and a length bound of the recipe's own: a recurrent model reads
any length, so its preprocessor's `max_length` comes from these settings.
"""

import dataclasses

from zoo.recipes.language_model import LanguageModelRecipe
from zoo.recipes.settings import TrainingSettings


@dataclasses.dataclass(frozen=True)
class RNNLanguageModelSettings(TrainingSettings):
    """The RNN language model's recipe.

    Attributes:
        sequence_length: int, tokens in a training window (truncated
            backpropagation through time).
        max_length: int, the longest text, prompt and continuation.
        batch_size: int.
        learning_rate: float, of Adam.
        clipnorm: float, the largest gradient norm.
    """

    sequence_length: int = 64
    max_length: int = 128
    batch_size: int = 32
    learning_rate: float = 2e-3
    clipnorm: float = 1.0


class RNNLanguageModelRecipe(LanguageModelRecipe):
    """`keras-seq train rnn-language-model`."""

    name = "rnn-language-model"
    builder_name = "build_rnn_language_model"
    presets_name = "RNN_LANGUAGE_MODEL_PRESETS"
    settings = RNNLanguageModelSettings
    commands = frozenset({"generate"})

    def optimizer(self, model, settings):
        """Adam at `settings.learning_rate`, gradients clipped to `clipnorm`:
        recurrent gradients can explode over long windows (Sec. 7.3)."""
        import keras

        return keras.optimizers.Adam(settings.learning_rate, clipnorm=settings.clipnorm)

    def preprocessor(self, config, run):
        from keras_seq import text

        defaults = self.settings()
        return text.LanguageModelPreprocessor, {
            "max_length": run.get("max_length", defaults.max_length),
            "sequence_length": run.get("sequence_length", defaults.sequence_length),
        }


RECIPE = RNNLanguageModelRecipe()
