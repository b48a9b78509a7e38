"""`keras-seq score` and `keras-seq translate`'s decoding controls: the
figures of `TrainedModel.score` and `TrainedModel.translate`, and the
refusals, naming the flags."""

import numpy as np
import pytest

from tests.zoo.conftest import run_cli

PAIRS = ["ich sehe du.\ti see you.", "er mag sie.\the likes her.", "du.\t"]


@pytest.fixture(scope="module")
def trained(translator_run):
    from zoo import load_model_dir

    return load_model_dir(translator_run[0])


def test_score_prints_what_trained_score_gives(translator_run, trained):
    result = run_cli(
        "score", "--model-dir", translator_run[0], "--tokens", *PAIRS,
        in_process=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    sources, targets = zip(*(pair.split("\t") for pair in PAIRS))
    expected = trained.score(list(sources), list(targets))
    lines = result.stdout.splitlines()
    assert len(lines) == len(PAIRS)
    for line, scored in zip(lines, expected):
        total, mean, pieces = line.split("\t")
        assert float(total) == pytest.approx(scored.log_prob, abs=1e-3)
        assert float(mean) == pytest.approx(
            scored.log_prob / len(scored.tokens), abs=1e-3
        )
        tokens = [piece.rsplit("=", 1) for piece in pieces.split(" ")]
        assert [t for t, _ in tokens] == scored.tokens
        np.testing.assert_allclose(
            [float(v) for _, v in tokens], scored.log_probs, atol=1e-3
        )
    assert expected[2].tokens == ["[END]"] and expected[0].tokens[-1] == "[END]"
    by_stdin = run_cli(
        "score", "--model-dir", translator_run[0], input="\n".join(PAIRS) + "\n",
        in_process=True,
    )  # fmt: skip
    assert by_stdin.stdout.splitlines() == [line.rsplit("\t", 1)[0] for line in lines]


def test_score_refuses_a_line_without_a_tab(translator_run):
    result = run_cli(
        "score", "--model-dir", translator_run[0], PAIRS[0], "er mag sie.",
        in_process=True,
    )  # fmt: skip
    assert result.returncode == 1
    assert "pair 2 has no tab; expected source<TAB>target" in result.stderr
    batch = run_cli(
        "score", "--model-dir", translator_run[0], "--batch-size", "0", *PAIRS,
        in_process=True,
    )  # fmt: skip
    assert batch.returncode == 1 and "--batch-size must be" in batch.stderr


def test_translate_scores_and_controls_reach_the_model_dir(translator_run, trained):
    out = translator_run[0]
    sentences = ["ich sehe du.", "er mag sie."]
    result = run_cli(
        "translate", "--model-dir", out, "--scores", "--beam-width", "1",
        *sentences, in_process=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    expected = trained.translate(sentences, beam_width=1, return_scores=True)
    for line, scored in zip(result.stdout.splitlines(), expected):
        text, log_prob = line.rsplit("\t", 1)
        assert text == scored.text
        assert float(log_prob) == pytest.approx(scored.log_prob, abs=1e-3)
    prefixed = run_cli(
        "translate", "--model-dir", out, "--target-prefix", "she", "--suppress",
        "[UNK]", "--no-repeat-ngram-size", "2", *sentences, in_process=True,
    )  # fmt: skip
    assert prefixed.returncode == 0, prefixed.stderr[-2000:]
    assert prefixed.stdout.splitlines() == trained.translate(
        sentences, target_prefix="she", suppress=["[UNK]"], no_repeat_ngram_size=2
    )
    assert all(line.startswith("she") for line in prefixed.stdout.splitlines())


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--repetition-penalty", "nan"], "--repetition-penalty must be"),
        (["--suppress", "nowhere"], "--suppress names 'nowhere', which is no token"),
        (["--min-new-tokens", "-1"], "--min-new-tokens must be"),
    ],
)
def test_translate_refuses_a_control_naming_its_flag(translator_run, flags, message):
    result = run_cli(
        "translate", "--model-dir", translator_run[0], *flags, "du.", in_process=True
    )
    assert result.returncode == 1, result.stderr[-2000:]
    assert message in result.stderr and "Traceback" not in result.stderr


def test_the_controls_a_saved_model_lacks_are_refused(tmp_path):
    # Its `translate_with_controls` takes the prefix (test_export.py).
    result = run_cli(
        "translate", "--saved-model", tmp_path, "--scores", "--target-prefix", "x",
        "--suppress", "du", "du.", in_process=True,
    )  # fmt: skip
    assert result.returncode == 1
    assert (
        "--suppress, --scores: with --saved-model, only --target-prefix, "
        "--min-new-tokens and --repetition-penalty apply" in result.stderr
    )


def test_the_ctranslate2_export_scores_and_decodes_with_the_controls(
    translator_run, translator_ctranslate2, trained
):
    """CTranslate2's `score_batch` rules out no id, so its log-probabilities
    are at most the model's (which renormalise over the ids a translator
    writes), and close to them for a trained model; the controls decode
    as `TrainedModel.translate`'s."""
    from zoo.serving.ctranslate2_model import CTranslate2Model

    sources, targets = zip(*(pair.split("\t") for pair in PAIRS))
    engine = CTranslate2Model(translator_ctranslate2)
    got = engine.score(list(sources), list(targets))
    want = trained.score(list(sources), list(targets))
    for ours, theirs in zip(want, got):
        assert theirs.tokens == ours.tokens
        difference = np.asarray(ours.log_probs) - np.asarray(theirs.log_probs)
        assert np.all(difference >= -1e-4) and np.all(difference < 0.5), difference
    result = run_cli(
        "score", "--ctranslate2", translator_ctranslate2, *PAIRS, in_process=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    totals = [float(line.split("\t")[0]) for line in result.stdout.splitlines()]
    np.testing.assert_allclose(totals, [s.log_prob for s in got], atol=1e-3)

    # `score_batch` would answer 0 (certain) for each token after nothing.
    with pytest.raises(ValueError, match=r"^`sources\[1\]` has no tokens"):
        engine.score(["du.", " "], ["you.", "you."])

    sentences = ["ich sehe du.", "er mag sie."]
    for beam_width in (1, 3):
        controls = {
            "target_prefix": "she",
            "no_repeat_ngram_size": 2,
            "suppress": ["[UNK]"],
            "min_new_tokens": 3,
        }
        assert engine.translate(sentences, beam_width, 0.0, **controls) == (
            trained.translate(sentences, beam_width, length_penalty=0.0, **controls)
        )
    flagged = run_cli(
        "translate", "--ctranslate2", translator_ctranslate2, "--beam-width", "1",
        "--target-prefix", "she", *sentences, in_process=True,
    )  # fmt: skip
    assert flagged.returncode == 0, flagged.stderr[-2000:]
    assert flagged.stdout.splitlines() == trained.translate(
        sentences, 1, target_prefix="she"
    )
    refused = run_cli(
        "translate", "--ctranslate2", translator_ctranslate2, "--suppress", "nowhere",
        "du.", in_process=True,
    )  # fmt: skip
    assert refused.returncode == 1
    assert "--suppress names 'nowhere', which is no token" in refused.stderr


def test_only_the_option_checks_speak_in_flags(
    translator_run, translator_ctranslate2, monkeypatch
):
    """An error raised while translating is not a flag's: it keeps its
    traceback instead of turning into a usage line that names a flag."""
    from zoo.recipes.trained import TrainedModel
    from zoo.serving.ctranslate2_model import CTranslate2Model

    def broken(self, *args, **kwargs):
        raise ValueError("`beam_width` broke inside")

    for cls, flag, directory in (
        (TrainedModel, "--model-dir", translator_run[0]),
        (CTranslate2Model, "--ctranslate2", translator_ctranslate2),
    ):
        monkeypatch.setattr(cls, "translate", broken)
        with pytest.raises(ValueError, match="`beam_width` broke inside"):
            run_cli("translate", flag, directory, "du.", in_process=True)
