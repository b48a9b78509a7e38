"""The RNN translator's family (Fig. 7.10): the Transformer translator's
(`zoo.recipes.translator`) with the bidirectional-RNN encoder and attention
decoder of `zoo.build_rnn_translator`, trained with Adam at a constant rate
and clipped gradients, as recurrent models usually are."""

from zoo.recipes.translator import TranslatorRecipe, _ema


class RNNTranslatorRecipe(TranslatorRecipe):
    """`keras-seq train rnn-translator`; it translates and exports as the
    Transformer translator does."""

    name = "rnn-translator"
    builder_name = "build_rnn_translator"
    presets_name = "RNN_TRANSLATOR_PRESETS"
    # CTranslate2 has no specification for a recurrent model.
    commands = frozenset({"translate", "export"})

    def optimizer(self, model, settings):
        """Adam at `1e-3 * learning_rate_scale`, gradients clipped to norm
        1: recurrent gradients can explode over long sequences."""
        import keras

        return keras.optimizers.Adam(
            1e-3 * settings.learning_rate_scale, clipnorm=1.0, **_ema(settings)
        )


RECIPE = RNNTranslatorRecipe()
