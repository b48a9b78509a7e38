"""`keras-seq export`: a run directory as a TF Serving version, which
translates as the run directory does."""

import functools
import re

import pytest

from tests.zoo.conftest import run_cli
from tests.zoo.serving.http_client import call

# Cased as the shared run's data (`write_pairs`); one sentence lowercased.
SENTENCES = ("Ich sehe du.", "Er mag sie.", "wir kennen ich.")


@pytest.fixture(scope="module")
def exported(translator_run, tmp_path_factory):
    """The shared translator run exported once: `<base>/1/`."""
    base = tmp_path_factory.mktemp("export")
    result = run_cli(
        "export", "--model-dir", translator_run[0], "--export-dir", base,
        in_process=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert (base / "1" / "saved_model.pb").is_file()
    return base


def _lines(*args):
    return list(_translated(*map(str, args)))


@functools.cache
def _translated(*args):
    # The same command on the same shared run prints the same lines: the
    # tests that compare paths run each command once between them.
    result = run_cli("translate", *args, *SENTENCES, in_process=True)
    assert result.returncode == 0, result.stderr[-2000:]
    return tuple(result.stdout.splitlines())


def test_export_then_translate_through_the_saved_model(translator_run, exported):
    out = translator_run[0]
    # A fresh process (`translate --model-dir` in one is in test_translate.py).
    served = run_cli("translate", "--saved-model", exported, "--beam-width", "1",
                     *SENTENCES)  # fmt: skip
    assert served.returncode == 0, served.stderr[-2000:]
    assert served.stdout.splitlines() == _lines("--model-dir", out, "--beam-width", "1")
    # A cut sentence is reported on both paths, in the same words.
    long = " ".join(["du"] * 80) + "."  # Past the tiny max_length of 32.
    sentences = ("Ich sehe du.", long, "Er mag sie.")
    direct = run_cli("translate", "--model-dir", out, "--beam-width", "1",
                     *sentences, in_process=True)  # fmt: skip
    cut = run_cli("translate", "--saved-model", exported, "--beam-width", "1",
                  *sentences, in_process=True)  # fmt: skip
    assert cut.stdout == direct.stdout
    note = (
        "keras-seq: note: 1 of 3 sentences are longer than the model's "
        "max_length (32 tokens); each was cut to it."
    )
    assert direct.stderr.splitlines()[-1] == note
    assert cut.stderr.splitlines() == [note]
    again = run_cli(
        "export", "--model-dir", out, "--export-dir", exported, in_process=True
    )
    assert again.returncode == 1 and "already holds version 1" in again.stderr


def test_the_saved_model_translates_under_the_controls(translator_run, exported):
    """`--target-prefix`, `--min-new-tokens` and `--repetition-penalty` with
    `--saved-model` (its `translate_with_controls` signature) print what
    `--model-dir` prints with them greedily; the other controls, beams and
    values out of range are refused naming the flag."""
    out = translator_run[0]
    controls = ("--target-prefix", "I", "--min-new-tokens", "6",
                "--repetition-penalty", "1.3")  # fmt: skip
    served = _lines("--saved-model", exported, "--beam-width", "1", *controls)
    assert served == _lines("--model-dir", out, "--beam-width", "1", *controls)
    assert all(line.startswith("I") for line in served)
    assert served != _lines("--saved-model", exported, "--beam-width", "1")
    for flags, message in (
        ([*controls], "the decoding controls decode greedily"),
        (["--beam-width", "1", "--no-repeat-ngram-size", "2", "--scores"],
         "--no-repeat-ngram-size, --scores: with --saved-model, only"),
        (["--beam-width", "1", "--min-new-tokens", "-1"],
         "--min-new-tokens must be at least 0; received -1."),
        (["--beam-width", "1", "--min-new-tokens", "999"],
         "`min_new_tokens` must be at most"),
        (["--beam-width", "1", "--repetition-penalty", "nan"],
         "--repetition-penalty must be a finite number above 0"),
    ):  # fmt: skip
        refused = run_cli(
            "translate", "--saved-model", exported, *flags, "du.", in_process=True
        )
        assert refused.returncode == 1, (flags, refused.stderr[-2000:])
        assert message in refused.stderr and "Traceback" not in refused.stderr


def test_every_path_gives_the_same_cased_translations(translator_run, exported):
    """`TrainedModel`, `translate --model-dir`, `translate --saved-model` and
    the server give one set of strings greedily and one with 4 beams, case
    kept."""
    from zoo.recipes.model_dir import load_model_dir
    from zoo.serving import ModelServer

    out = translator_run[0]
    trained = load_model_dir(str(out))
    assert trained.preprocessor.settings()["lowercase"] is False
    vocabulary = (out / "target_vocabulary.txt").read_text().split()
    assert "I" in vocabulary and "She" in vocabulary  # learned with case
    expected = {width: trained.translate(list(SENTENCES), width) for width in (1, 4)}
    assert any(re.search("[A-Z]", line) for line in expected[1] + expected[4])
    # The run's default (4 beams) on both, and each width named.
    assert _lines("--model-dir", out) == _lines("--saved-model", exported)
    assert _lines("--saved-model", exported) == expected[4]
    for width in (1, 4):
        assert _lines("--model-dir", out, "--beam-width", str(width)) == expected[width]
        assert (
            _lines("--saved-model", exported, "--beam-width", str(width))
            == (expected[width])
        )
    server = ModelServer(str(exported / "1"), 1, "cased", port=0).start().load()
    try:
        path = "/v1/models/cased:predict"
        status, body = call(server.url, "POST", path, {"instances": SENTENCES})
        assert status == 200 and body["predictions"] == expected[1]
        request = {"signature_name": "beam_search", "instances": SENTENCES}
        status, body = call(server.url, "POST", path, request)
        assert status == 200
        assert [p["translations"][0] for p in body["predictions"]] == expected[4]
    finally:
        server.stop(grace=5)


@pytest.mark.parametrize(
    "width, reason",
    [
        ("5", "was exported with 4 beams, the most it decodes with"),
        ("2", "decodes with its exported 4 beams or greedily, no width between"),
    ],
)
def test_a_beam_width_the_export_cannot_decode_is_one_line(exported, width, reason):
    result = run_cli(
        "translate", "--saved-model", exported, "--beam-width", width, "Hallo.",
        in_process=True,
    )  # fmt: skip
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"keras-seq: --beam-width {width}: the SavedModel {exported} {reason}; "
        "give --beam-width 4 or 1, or translate with --model-dir."
    )


def test_export_ctranslate2_then_translate_without_tensorflow(
    translator_run, translator_ctranslate2
):
    out, export_dir = translator_run[0], translator_ctranslate2
    assert (export_dir / "model.bin").is_file()
    sentences = (*SENTENCES, "")
    direct = run_cli(
        "translate", "--model-dir", out, "--beam-width", "1", *sentences,
        in_process=True,
    )  # fmt: skip
    # A fresh process: the CTranslate2 path loads neither TensorFlow nor Keras.
    ct2 = run_cli(
        "translate", "--ctranslate2", export_dir, "--beam-width", "1", *sentences
    )
    assert ct2.returncode == 0, ct2.stderr[-2000:]
    assert ct2.stdout == direct.stdout
    refused = run_cli(
        "export", "--model-dir", out, "--export-dir", export_dir,
        "--format", "ctranslate2", in_process=True,
    )  # fmt: skip
    assert refused.returncode == 1 and "choose a new directory" in refused.stderr
