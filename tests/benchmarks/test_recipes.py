"""The recipe grid's settings, its reversed task and its paired table."""

from benchmarks import recipes


def test_each_recipe_runs_with_the_budget_and_greedy_scoring():
    default = recipes._settings("default", 5.0, 2)
    low = recipes._settings("low-resource", 5.0, 2)
    for chosen in (default, low):
        assert (chosen.minutes, chosen.seed, chosen.beam_width) == (5.0, 2, 1)
        assert chosen.average_last_epochs == 5
    # Only the recipe's own settings differ.
    assert (default.label_smoothing, low.label_smoothing) == (0.1, 0.2)
    assert (dict(default.overrides), dict(low.overrides)) == ({}, {"dropout": 0.2})


def test_english_to_german_is_the_corpus_reversed():
    forward = recipes._corpus("de-en", "300", 1)
    backward = recipes._corpus("en-de", "300", 1)
    assert len(forward.train) == 300
    assert backward.train == [(t, s) for s, t in forward.train]
    assert backward.test == [(t, s) for s, t in forward.test]


def _row(recipe, seed, bleu):
    return {
        "task": "de-en", "train_pairs": 2000, "minutes": 5.0, "seed": seed,
        "recipe": recipe, "bleu": bleu, "bleu_lowercase": bleu, "epochs": 9,
        "kept": "last", "wall_minutes": 5.0,
    }  # fmt: skip


def test_the_table_pairs_runs_and_counts_the_wins():
    rows = [
        _row("default", 0, 1.5), _row("low-resource", 0, 0.5),
        _row("low-resource", 1, 2.0), _row("default", 1, 2.0),
        _row("default", 2, 1.0),  # Its pair did not finish: left out.
    ]  # fmt: skip
    # As the CSV file gives them back: every value a string.
    table = recipes._pairs_table([{k: str(v) for k, v in r.items()} for r in rows])
    assert table.count("| de-en | 2,000 |") == 2
    assert table.endswith(
        "paired runs: 2; default higher in 1, low-resource higher in 0, tied 1"
    )
