"""The language model's recipe: plain text in, a decoder-only causal
Transformer out, scored by perplexity, with a sampled continuation."""

import dataclasses

from zoo.recipes import settings
from zoo.recipes.recipe import Recipe


class LanguageModelRecipe(Recipe):
    """`keras-seq train language-model`: Adam with warm-up on fixed windows."""

    name = "language-model"
    builder_name = "build_language_model"
    presets_name = "LANGUAGE_MODEL_PRESETS"
    settings = settings.LanguageModelSettings
    commands = frozenset({"generate", "export", "ctranslate2"})
    # `(model, settings) -> optimizer`; None: the Transformer's warm-up Adam
    # (`tasks.warmup_adam`).
    optimizer = None

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

    def train(self, corpus, output_dir, chosen, *, verbose, strategy):
        from zoo.recipes import tasks

        result = tasks.train_language_model(
            corpus, output_dir, chosen, verbose=verbose, strategy=strategy,
            builder=self.builder, optimizer=self.optimizer or tasks.warmup_adam,
            presets=self.presets,
        )  # fmt: skip
        # A sample from the first words of a validation line shows what
        # the model learned, beside its perplexity.
        prompt = " ".join(corpus.validation[0].split()[:4])
        sample = tasks.generate_text(
            result.model, result.preprocessor, prompt, None, tasks.SAMPLE_TOP_K,
            None, chosen.seed,
        )  # fmt: skip
        return dataclasses.replace(result, sample=sample)

    def evaluate(self, trained, corpus, chosen):
        from zoo.recipes import tasks

        return tasks.evaluate_language_model(trained, corpus, chosen)

    def export(self, trained, export_dir, version):
        from keras_seq import export

        return export.export_language_model(
            trained.model, trained.preprocessor, export_dir, version=version
        )


RECIPE = LanguageModelRecipe()
