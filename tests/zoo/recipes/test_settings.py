"""`zoo.recipes.settings`: each default written once, named recipes as
variants, and the command line reading both."""

import dataclasses

import pytest

from zoo.cli import demo, train
from zoo.cli.main import build_parser
from zoo.recipes import settings
from zoo.recipes.families import FAMILIES


def test_named_recipes_are_settings_variants():
    low = settings.TRANSLATOR_RECIPES["low-resource"]
    assert (low.label_smoothing, low.token_dropout) == (0.2, 0.1)
    assert low.early_stopping_patience == 15 and low.average_last_epochs == 5
    assert low.overrides == {"dropout": 0.2}
    # Everything else is the default recipe's.
    default = settings.TRANSLATOR_RECIPES["default"]
    assert default == settings.TranslatorSettings()
    assert low.warmup_steps == default.warmup_steps == 300
    assert settings.DEMO.epochs == 60 and settings.DEMO.minutes == 15.0
    assert settings.DEMO.beam_width == default.beam_width == 4
    assert settings.described(low) == (
        "overrides={'dropout': 0.2}, label_smoothing=0.2, average_last_epochs=5, "
        "token_dropout=0.1, early_stopping_patience=15"
    )


def test_replace_sets_fields_and_adds_builder_arguments():
    low = settings.LOW_RESOURCE
    changed = low.replace(epochs=300, early_stopping_patience=None, dropout=0.1,
                          model_dim=16)  # fmt: skip
    assert changed.epochs == 300 and changed.early_stopping_patience is None
    # The caller's builder arguments over the recipe's.
    assert changed.overrides == {"dropout": 0.1, "model_dim": 16}
    assert low.overrides == {"dropout": 0.2}, "the variant itself is unchanged"
    with pytest.raises(dataclasses.FrozenInstanceError):
        low.epochs = 3


def test_identity_leaves_out_what_a_resumed_run_may_change():
    one = settings.TranslatorSettings(epochs=3, minutes=1.0, beam_width=1)
    other = settings.TranslatorSettings(epochs=9, beam_width=8)
    assert one.identity() == other.identity()
    assert "epochs" not in one.identity() and "beam_width" not in one.identity()
    assert one.identity() != settings.LOW_RESOURCE.identity()
    lm = settings.LanguageModelSettings()
    assert set(lm.identity()) == {f.name for f in dataclasses.fields(lm)} - {
        "epochs",
        "minutes",
    }


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_train_flags_take_the_recipes_defaults(family):
    args = build_parser().parse_args(["train", family])
    chosen = train._check(args)
    expected = FAMILIES[family].settings()
    assert chosen == expected
    assert (chosen.epochs, chosen.preset, chosen.vocabulary_size) == (10, "small", 8000)


def test_train_flags_and_the_named_recipe_combine():
    args = build_parser().parse_args(
        ["train", "translator", "--recipe", "low-resource", "--epochs", "2",
         "--average-epochs", "2", "--set", "dropout=0.3", "--beam-width", "1"]
    )  # fmt: skip
    chosen = train._check(args)
    assert chosen == settings.LOW_RESOURCE.replace(
        epochs=2, average_last_epochs=2, beam_width=1, overrides={"dropout": 0.3}
    )


def test_demo_flags_take_the_demos_settings():
    args = build_parser().parse_args(["demo"])
    assert train.chosen_settings(args, settings.DEMO, {}) == settings.DEMO
    args = build_parser().parse_args(["demo", "--epochs", "1", "--train-pairs", "7"])
    chosen = train.chosen_settings(args, settings.DEMO, {})
    assert (chosen.epochs, chosen.train_pairs, chosen.minutes) == (1, 7, 15.0)
    assert demo.run is args.run


def test_a_short_low_resource_run_is_told_that_the_default_wins():
    from zoo.recipes import settings

    short = settings.LOW_RESOURCE.replace(minutes=settings.LOW_RESOURCE_MINUTES / 2)
    line = settings.recipe_advice(short)
    assert line.count("\n") == 0
    assert f"more than {settings.LOW_RESOURCE_MINUTES:g} minutes" in line
    assert "default recipe scores higher" in line
    long = short.replace(minutes=settings.LOW_RESOURCE_MINUTES)
    others = (settings.TranslatorSettings(minutes=1), settings.ClassifierSettings())
    for quiet in (long, settings.LOW_RESOURCE, *others):
        assert settings.recipe_advice(quiet) is None


def test_the_legacy_identity_is_the_defaults_but_what_runs_did_then():
    from zoo.recipes.settings import LOW_RESOURCE, TranslatorSettings

    # Every setting at its default, whatever the recipe; case as it was.
    legacy = LOW_RESOURCE.legacy_identity()
    assert legacy == {**TranslatorSettings().identity(), "lowercase": True}
    assert set(legacy) == set(LOW_RESOURCE.identity())
