"""`zoo.recipes.recipe`: the skeleton every family trains through."""

import os
import types

from zoo.recipes import recipe, run_dir
from zoo.recipes.families import FAMILIES


def test_the_checkpoints_write_the_run_directorys_paths(tmp_path):
    run = run_dir.RunDir(str(tmp_path / "run"))
    history, backup, best = recipe.checkpoint_callbacks(run)
    assert history.filename == run.history_path
    assert backup.backup_dir == run.backup_dir
    assert best.filepath == run.best_weights_path
    assert run.history_path == os.path.join(run.path, "history.csv")


def test_each_family_declares_its_optimizer_and_trains_through_the_template():
    for family in FAMILIES.values():
        assert type(family).optimizer is not recipe.Recipe.optimizer, family
        assert type(family).compile_options is not recipe.Recipe.compile_options
        assert type(family).train is recipe.Recipe.train, family
        assert type(family).fit_model is recipe.Recipe.fit_model, family


def test_the_minimum_frequency_is_the_vocabularys_floor():
    """On a small text the floor, not the size asked, decides the size."""
    from zoo.recipes.language_model import RECIPE
    from zoo.recipes.settings import LanguageModelSettings

    rare = [f"word{i} common" for i in range(30)]
    corpus = types.SimpleNamespace(train=rare + ["common again"] * 10)
    sizes = {}
    for floor in (1, 20):
        settings = LanguageModelSettings(vocabulary_size=500, min_frequency=floor)
        (vocabulary,) = RECIPE.learn_vocabularies(corpus, settings)
        sizes[floor] = len(vocabulary)
        assert "common" in vocabulary
    assert sizes[1] < 500 and sizes[20] < sizes[1]
    assert (
        "word7"
        not in RECIPE.learn_vocabularies(
            corpus, LanguageModelSettings(vocabulary_size=500, min_frequency=20)
        )[0]
    )
