"""`keras-seq evaluate`: a run directory's test figures, as `run.json`
keys them."""

import hashlib
import json
import shutil

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


def test_a_copied_run_evaluates_from_anywhere_as_in_place(translator_run, tmp_path):
    """The run was trained with `--data pairs.tsv`, relative to where
    `train` ran; its directory, copied elsewhere and named from a third
    directory, finds that file and scores the same figures."""
    out, data, _ = translator_run
    run = json.loads((out / "run.json").read_text())
    assert run["data"] == str(data)  # Resolved, whatever was typed.
    assert run["data_sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    in_place = _figures(run_cli("evaluate", "--model-dir", out, in_process=True))
    copy, third = tmp_path / "elsewhere" / "copy", tmp_path / "third"
    shutil.copytree(out, copy)
    third.mkdir()
    moved = run_cli("evaluate", "--model-dir", copy, in_process=True, cwd=third)
    assert _figures(moved) == in_place
    assert in_place["bleu_beam4"] == pytest.approx(run["bleu_beam4"], abs=1e-3)
    translated = run_cli(
        "translate", "--model-dir", copy, "ich sehe du.", in_process=True, cwd=third
    )
    assert translated.returncode == 0 and translated.stdout.strip()


def _with_run(copy, **changes):
    run = json.loads((copy / "run.json").read_text())
    run.update(changes)
    (copy / "run.json").write_text(json.dumps(run))


def test_data_that_moved_or_changed_is_named_and_data_overrides(
    translator_run, tmp_path
):
    out, data, _ = translator_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    gone = tmp_path / "gone.tsv"
    _with_run(copy, data=str(gone))
    refused = run_cli("evaluate", "--model-dir", copy, in_process=True)
    assert refused.returncode == 1 and refused.stderr.strip().splitlines()[-1] == (
        f"keras-seq: --model-dir {copy} was trained on {gone}, which no longer "
        "exists; pass --data with that file where it is now."
    )
    changed = tmp_path / "changed.tsv"
    changed.write_text(data.read_text() + "neu.\tnew.\n")
    _with_run(copy, data=str(changed))
    refused = run_cli("evaluate", "--model-dir", copy, in_process=True)
    assert refused.returncode == 1
    assert f"{changed}, whose content has changed since" in refused.stderr
    assert "pass --data with the file it was trained on" in refused.stderr
    # --data names the data instead, wherever it is.
    shutil.copy(data, gone)
    scored = run_cli("evaluate", "--model-dir", copy, "--data", gone, in_process=True)
    run = json.loads((out / "run.json").read_text())
    assert _figures(scored)["bleu_beam4"] == pytest.approx(run["bleu_beam4"], abs=1e-3)


def test_a_run_json_that_keeps_the_data_as_typed_still_evaluates(
    translator_run, tmp_path
):
    out, data, _ = translator_run
    copy = tmp_path / "legacy"
    shutil.copytree(out, copy)
    run = json.loads((copy / "run.json").read_text())
    del run["data_sha256"]
    run["data"] = data.name  # As typed, relative to where it was trained.
    (copy / "run.json").write_text(json.dumps(run))
    legacy = run_cli("evaluate", "--model-dir", copy, in_process=True, cwd=data.parent)
    assert _figures(legacy)["bleu_beam4"] == pytest.approx(run["bleu_beam4"], abs=1e-3)


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
        assert "--beam-width applies to translator, rnn-translator and rnn-seq2seq" in (
            refused.stderr
        )
