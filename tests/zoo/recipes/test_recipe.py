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


class _Fitted(Exception):
    """Raised by a stand-in `fit` with the `Fitted` it was handed."""


def _started(monkeypatch, tmp_path, machine):
    """The `Fitted.started` a classifier's training budget counts from."""
    from zoo.recipes import settings, workflow

    def fit(self, fitted, corpus, chosen, runtime):
        raise _Fitted(fitted.started)

    monkeypatch.setattr(type(FAMILIES["classifier"]), "fit", fit)
    pairs = [(f"text {i} good", "pos") for i in range(20)]
    pairs += [(f"text {i} bad", "neg") for i in range(20)]
    chosen = settings.ClassifierSettings(epochs=1, minutes=1.0, vocabulary_size=50)
    try:
        workflow.train("classifier", pairs, str(tmp_path), chosen, machine=machine)
    except _Fitted as fitted:
        return fitted.args[0]
    raise AssertionError("fit was not reached")


def test_the_time_budget_counts_from_when_the_run_began(monkeypatch, tmp_path):
    """`--minutes` is the user's clock: from the command's start (imports,
    data, vocabularies included) when the command says when it began, else
    from the call."""
    import time

    from zoo.recipes.settings import RuntimeSettings

    began = time.time() - 42.0
    assert _started(monkeypatch, tmp_path / "a", RuntimeSettings(began=began)) == began
    before = time.time()
    started = _started(monkeypatch, tmp_path / "b", None)
    assert before <= started <= time.time()


def test_train_counts_its_budget_from_the_commands_start(monkeypatch, tmp_path):
    from zoo.cli import main, startup
    from zoo.recipes import workflow

    machines = []

    def train(*args, machine, **kwargs):
        machines.append(machine)
        raise _Fitted()

    monkeypatch.setattr(workflow, "train", train)
    data = tmp_path / "reviews.tsv"
    data.write_text("a good film\tpos\na bad film\tneg\n", encoding="utf-8")
    argv = ["train", "classifier", "--data", str(data), "--minutes", "1",
            "--output-dir", str(tmp_path / "run")]  # fmt: skip
    try:
        main(argv)
    except _Fitted:
        pass
    assert [m.began for m in machines] == [startup.STARTED]
