"""`keras-seq evaluate`: a run directory's test figures, as `run.json`
keys them."""

import json

import pytest

from tests.zoo.conftest import run_cli


def _figures(result):
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_evaluate_reports_the_training_bleu(translator_run):
    out = translator_run[0]
    scores = _figures(run_cli("evaluate", "--model-dir", out))
    run = json.loads((out / "run.json").read_text())
    assert scores["bleu_beam4"] == pytest.approx(run["bleu_beam4"], abs=1e-3)


def test_a_language_model_run_evaluates(language_model_run):
    """The run of `tests/zoo/cli/test_train.py`'s two-process test, shared."""
    evaluated = run_cli(
        "evaluate", "--model-dir", language_model_run[0], in_process=True
    )
    assert _figures(evaluated)["test_perplexity"] > 1
    # `generate` is tested on the same run in tests/zoo/cli/test_generate.py.


@pytest.mark.parametrize(
    "family, key",
    [
        ("rnn-translator", "bleu_beam4"),
        ("classifier", "test_accuracy"),
        ("masked-language-model", "test_masked_loss"),
    ],
)
def test_every_family_evaluates(tiny_runs, family, key):
    out, _ = tiny_runs(family)
    # In this process (the fresh-process path is the test above).
    figures = _figures(run_cli("evaluate", "--model-dir", out, in_process=True))
    assert next(iter(figures)) == key and figures[key] >= 0
    if family == "classifier":
        run = json.loads((out / "run.json").read_text())
        assert figures[key] == pytest.approx(run[key], abs=1e-4)
        refused = run_cli(
            "evaluate", "--model-dir", out, "--beam-width", "2", in_process=True
        )
        assert refused.returncode == 1
        assert "--beam-width applies to translator and rnn-translator" in (
            refused.stderr
        )
