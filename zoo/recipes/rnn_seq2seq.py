"""The context-vector encoder-decoder's family (Fig. 7.9): the RNN
translator's recipe (`zoo.recipes.rnn_translator`) with the model of
`zoo.build_rnn_seq2seq`, whose decoder reads the source only through the
encoder's final state `z*`, with no attention."""

from zoo.recipes.rnn_translator import RNNTranslatorRecipe


class RNNSeq2SeqRecipe(RNNTranslatorRecipe):
    """`keras-seq train rnn-seq2seq`: trained, scored and translated as the
    RNN translator is (Adam at a constant rate, clipped gradients)."""

    name = "rnn-seq2seq"
    builder_name = "build_rnn_seq2seq"
    presets_name = "RNN_SEQ2SEQ_PRESETS"
    # The exports are written and tested for the translators of
    # `keras_seq.export` only.
    commands = frozenset({"translate"})


RECIPE = RNNSeq2SeqRecipe()
