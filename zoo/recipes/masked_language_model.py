"""The masked language model's recipe: plain text in, an encoder with a
fill-in head out, scored by its masked-token loss."""

from zoo.recipes import settings
from zoo.recipes.recipe import Recipe


class MaskedLanguageModelRecipe(Recipe):
    """`keras-seq train masked-language-model`: AdamW, 15% of tokens masked."""

    name = "masked-language-model"
    builder_name = "build_masked_language_model"
    presets_name = "ENCODER_PRESETS"
    settings = settings.MaskedLanguageModelSettings

    def preprocessor(self, config, run):
        from keras_seq import text

        return text.MaskedLanguageModelPreprocessor, {
            "max_length": config["max_length"]
        }

    def read_corpus(self, data, chosen):
        from zoo.recipes import corpora

        return corpora.text_corpus(data)

    def train(self, corpus, output_dir, chosen, *, verbose, strategy):
        from zoo.recipes import tasks

        return tasks.train_masked_language_model(
            (corpus.train, corpus.validation), output_dir, chosen,
            verbose=verbose, strategy=strategy,
        )  # fmt: skip

    def evaluate(self, trained, corpus, chosen):
        from zoo.recipes import tasks

        return tasks.evaluate_masked_language_model(trained, corpus, chosen)


RECIPE = MaskedLanguageModelRecipe()
