"""The RNN translator's recipe (Fig. 7.10): the Transformer translator's
recipe (`zoo.recipes.translator`) with the bidirectional-RNN encoder and
attention decoder of `zoo.build_rnn_translator`."""

from zoo.recipes.translator import TranslatorRecipe


class RNNTranslatorRecipe(TranslatorRecipe):
    """`keras-seq train rnn-translator`; it translates and exports as the
    Transformer translator does."""

    name = "rnn-translator"
    builder_name = "build_rnn_translator"
    presets_name = "RNN_TRANSLATOR_PRESETS"
    # CTranslate2 has no specification for a recurrent model.
    commands = frozenset({"translate", "export"})


RECIPE = RNNTranslatorRecipe()
