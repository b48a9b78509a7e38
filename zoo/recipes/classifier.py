"""The classifier's recipe: labelled texts in (the movie-review snippets, or
`text<TAB>label` lines), an encoder-only classifier out, scored by accuracy.
"""

from zoo.recipes import settings
from zoo.recipes.recipe import Recipe


class ClassifierRecipe(Recipe):
    """`keras-seq train classifier`: AdamW, fixed-size batches."""

    name = "classifier"
    builder_name = "build_classifier"
    presets_name = "CLASSIFIER_PRESETS"
    settings = settings.ClassifierSettings
    commands = frozenset({"classify", "export"})
    data_help = "text<TAB>label"

    def preprocessor(self, config, run):
        from keras_seq import text

        max_length = config["max_length"]
        max_length = min(run.get("max_length", max_length), max_length)
        return text.ClassificationPreprocessor, {"max_length": max_length}

    def read_corpus(self, data, chosen):
        from zoo.recipes import corpora

        return corpora.sentiment_corpus(data)

    def train(self, corpus, output_dir, chosen, *, verbose, strategy):
        from zoo.recipes import tasks

        return tasks.train_classifier(
            corpus, output_dir, chosen, verbose=verbose, strategy=strategy
        )

    def evaluate(self, trained, corpus, chosen):
        from zoo.recipes import tasks

        return tasks.evaluate_classifier(trained, corpus, chosen)

    def export(self, trained, export_dir, version):
        from keras_seq import export

        return export.export_classifier(
            trained.model, trained.preprocessor, export_dir, version=version
        )


RECIPE = ClassifierRecipe()
