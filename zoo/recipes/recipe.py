"""`Recipe`: what the application knows of one model family.

Each family is one module of `zoo.recipes` holding one `Recipe` subclass
(`translator`, `rnn_translator`, `classifier`, `language_model`,
`masked_language_model`, `rnn_language_model`); `zoo.recipes.families` is the
table of them. Commands and loaders never name a family: they ask the table
for one that `supports` a command, or for its `vocabularies`.

A recipe module imports only light modules at its top (settings, presets as
data); its hooks import Keras and TensorFlow when they run, so that
`keras-seq --help` builds every command's flags without starting TensorFlow.
"""

import zoo

# The commands every family supports; a recipe adds those its models serve
# ("translate", "classify", "generate", "export", and "ctranslate2" for
# `export --format ctranslate2`).
COMMON_COMMANDS = frozenset({"train", "evaluate"})


class Recipe:
    """One model family: its builder, settings and the hooks of its recipe.

    Attributes:
        name: str, as `keras-seq train NAME` and `run.json` spell it.
        builder_name: str, the `zoo` builder (`zoo.<builder_name>`).
        presets_name: str, the `zoo` preset table (`zoo.presets.<...>`).
        settings: the recipe's settings dataclass (its defaults).
        vocabularies: the keys of its vocabularies: `("source", "target")`
            for translators, `("text",)` otherwise.
        commands: frozenset of the commands it supports beyond
            `COMMON_COMMANDS`.
        data_help: str, what `--data` holds for it.
    """

    name = None
    builder_name = None
    presets_name = None
    settings = None
    vocabularies = ("text",)
    commands = frozenset()
    data_help = "one text per line"

    @property
    def builder(self):
        """The `zoo.build_<family>` function."""
        return getattr(zoo, self.builder_name)

    @property
    def presets(self):
        """The builder's presets, by name (plain data)."""
        from zoo import presets

        return getattr(presets, self.presets_name)

    def supports(self, command):
        """Whether the command `command` takes a run of this family."""
        return command in COMMON_COMMANDS or command in self.commands

    @property
    def translates(self):
        """Whether the family has a source side (`translate` takes it)."""
        return "source" in self.vocabularies

    def default_settings(self, recipe=None):
        """The settings `train` starts from (a named variant, or the class's
        defaults)."""
        del recipe
        return self.settings()

    def preprocessor(self, config, run):
        """The family's `keras_seq.text` preprocessor class, and the settings
        a run directory written before `preprocessor.json` existed loads
        with (what its model's `config` and its `run.json` say).

        Returns:
            `(class, dict of keyword arguments)`.
        """
        raise NotImplementedError

    def read_corpus(self, data, chosen):
        """The corpus `--data` names, read and checked before anything is
        written. `data` is None for the family's own corpus."""
        raise NotImplementedError

    def train(self, corpus, output_dir, chosen, *, verbose, strategy):
        """Trains on `corpus`, scores the test split and draws the figures.

        Returns:
            The recipe's typed result (`record()`, `summary()`, `notes`,
            `model`, `history`).
        """
        raise NotImplementedError

    def evaluate(self, trained, corpus, chosen):
        """The test figures (a dict) of a loaded run on `corpus`."""
        raise NotImplementedError

    def export(self, trained, export_dir, version):
        """Writes `<export_dir>/<version>/` from a loaded run; the path.

        Only families whose `commands` hold "export" implement it. Each
        export takes the run's own preprocessor (its saved lengths and
        buckets), so the served graph cuts and pads as training and the
        in-process API did.
        """
        raise NotImplementedError(f"{self.name} has no serving signature")

    def __repr__(self):
        return f"<Recipe {self.name}>"
