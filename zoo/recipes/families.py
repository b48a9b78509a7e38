"""The table of model families: one `Recipe` per module, one line each.

`FAMILIES` maps a family's name (as `keras-seq train FAMILY` and `run.json`
spell it) to its `zoo.recipes.recipe.Recipe`. Commands and loaders ask the
table, never a family's name: `supporting("translate")` names the families a
command takes. Adding a family is one module and one line here
(docs/adding-a-family.md). Importing the table starts no TensorFlow.
"""

from zoo.recipes import (
    classifier,
    language_model,
    masked_language_model,
    rnn_language_model,
    rnn_seq2seq,
    rnn_translator,
    translator,
)

FAMILIES = {
    recipe.name: recipe
    for recipe in (
        translator.RECIPE,
        classifier.RECIPE,
        masked_language_model.RECIPE,
        language_model.RECIPE,
        rnn_translator.RECIPE,
        rnn_language_model.RECIPE,
        rnn_seq2seq.RECIPE,
    )
}


# `keras-seq demo` trains this family with `settings.DEMO`.
DEMO = translator.RECIPE


def supporting(command):
    """The names of the families whose runs `command` takes, in table order."""
    return tuple(name for name, recipe in FAMILIES.items() if recipe.supports(command))


def listed(command, conjunction="and"):
    """The names of `supporting(command)` as an English list, the one form
    every message that names them takes: "translator, rnn-translator and
    rnn-seq2seq" (`conjunction` "or": "... or rnn-seq2seq")."""
    names = supporting(command)
    if len(names) < 2:
        return "".join(names)
    return f"{', '.join(names[:-1])} {conjunction} {names[-1]}"
