"""The Transformer translator's recipe (Fig. 7.16): sentence pairs in, a
translator and its `TranslationPreprocessor` out, scored by BLEU.

The training itself is `zoo.recipes.translation`'s, which the RNN
translator's recipe shares.
"""

from zoo.recipes import settings
from zoo.recipes.recipe import Recipe


class TranslatorRecipe(Recipe):
    """`keras-seq train translator`: Adam with warm-up, length buckets,
    validation BLEU, beam search on the test split."""

    name = "translator"
    builder_name = "build_translator"
    presets_name = "TRANSLATOR_PRESETS"
    settings = settings.TranslatorSettings
    vocabularies = ("source", "target")
    commands = frozenset({"translate", "export", "ctranslate2"})
    data_help = "source<TAB>target"

    def default_settings(self, recipe=None):
        return settings.TRANSLATOR_RECIPES[recipe or self.settings.recipe]

    def preprocessor(self, config, run):
        from keras_seq import text

        return text.TranslationPreprocessor, {"max_length": config.get("max_length")}

    def read_corpus(self, data, chosen):
        from zoo.recipes import corpora

        return corpora.translation_corpus(
            data, chosen.variants, chosen.phrases, chosen.train_pairs, chosen.seed
        )

    def train(self, corpus, output_dir, chosen, *, verbose, strategy):
        from zoo.recipes import translation

        return translation.run_translator(
            corpus, output_dir, chosen, builder=self.builder,
            presets=self.presets, verbose=verbose, strategy=strategy,
        )  # fmt: skip

    def evaluate(self, trained, corpus, chosen):
        from zoo.recipes import translation

        return translation.evaluate(trained, corpus, chosen)

    def export(self, trained, export_dir, version):
        from keras_seq import export

        return export.export_translator(
            trained.model, trained.preprocessor, export_dir, version=version
        )


RECIPE = TranslatorRecipe()
