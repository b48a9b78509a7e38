"""`keras-seq translate`: a model directory's translations, from arguments
or stdin, and its refusals."""

import json
import re
import shutil

import pytest

from keras_seq.text.vocabulary import RESERVED_TOKENS
from tests.zoo.conftest import run_cli


def test_translate_reads_arguments_and_stdin(translator_run):
    out = translator_run[0]
    by_args = run_cli("translate", "--model-dir", out, "ich sehe du.", "er mag sie.")
    assert by_args.returncode == 0, by_args.stderr[-2000:]
    lines = by_args.stdout.splitlines()
    assert len(lines) == 2
    by_stdin = run_cli(
        "translate", "--model-dir", out, input="ich sehe du.\ner mag sie.\n"
    )
    assert by_stdin.stdout.splitlines() == lines


def test_a_mismatched_vocabulary_is_refused(translator_run, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(translator_run[0], copy)
    vocabulary = (copy / "target_vocabulary.txt").read_text().splitlines()
    (copy / "target_vocabulary.txt").write_text("\n".join(vocabulary[:-3]) + "\n")
    result = run_cli("translate", "--model-dir", copy, "ich sehe du.", in_process=True)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    message = result.stderr.strip().splitlines()[-1]
    assert "target_vocabulary.txt" in message and str(len(vocabulary)) in message


def test_translate_refuses_a_missing_or_wrong_directory(tmp_path):
    result = run_cli("translate", "--model-dir", tmp_path, "hallo.", in_process=True)
    assert result.returncode == 1
    assert "has no run.json" in result.stderr and "Traceback" not in result.stderr
    both = run_cli(
        "translate", "--model-dir", tmp_path, "--saved-model", tmp_path,
        in_process=True,
    )  # fmt: skip
    assert both.returncode == 1
    assert "give exactly one of --model-dir, --saved-model and --ctranslate2" in (
        both.stderr
    )


def test_a_lowercased_directory_loads_and_translates(tiny_runs, tmp_path):
    """A run that lowercases (`--lowercase`, as every run did before case was
    kept: `"lowercase": true` in preprocessor.json) reads any case and writes
    lowercase, also without its preprocessor.json (older still)."""
    out, _ = tiny_runs("rnn-translator")
    settings = json.loads((out / "preprocessor.json").read_text())
    assert settings["lowercase"] is True
    words = (out / "target_vocabulary.txt").read_text().split()[len(RESERVED_TOKENS) :]
    assert words == [w.lower() for w in words] and "i" in words
    cased = ("Ich sehe du.", "Er mag sie.")
    lowered = run_cli(
        "translate", "--model-dir", out, *(s.lower() for s in cased), in_process=True
    )
    assert lowered.returncode == 0, lowered.stderr[-2000:]
    lines = lowered.stdout.splitlines()
    assert len(lines) == 2 and all(line == line.lower() for line in lines)
    # What the first call waits for is said, then how long it took.
    said = lowered.stderr.splitlines()
    first = said.index(
        "translating 2 sentences (each new batch size compiles its decoding "
        "loop first)..."
    )
    assert said.index(f"loading {out}...") < first
    done = [line for line in said[first:] if line.startswith("done in ")]
    assert re.fullmatch(r"done in \d+\.\d s, compiling included", done[0]), said
    older = tmp_path / "older"
    shutil.copytree(out, older)
    (older / "preprocessor.json").unlink()
    for directory in (out, older):
        result = run_cli("translate", "--model-dir", directory, *cased, in_process=True)
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.stdout.splitlines() == lines


def test_ctranslate2_and_the_model_dir_agree_at_the_defaults(
    translator_run, translator_ctranslate2
):
    """Both decode with `keras_seq.defaults` (4 beams, GNMT length penalty
    0.6) when --beam-width is left out, and give the same strings."""
    out, export_dir = translator_run[0], translator_ctranslate2
    sentences = ("Ich sehe du.", "Er mag sie.", "wir kennen ich.", "Du rufe er.")
    results = {
        flag: run_cli("translate", flag, path, *sentences, in_process=True)
        for flag, path in (("--model-dir", out), ("--ctranslate2", export_dir))
    }
    for result in results.values():
        assert result.returncode == 0, result.stderr[-2000:]
    lines = results["--model-dir"].stdout.splitlines()
    assert len(lines) == len(sentences) and any(lines)
    assert results["--ctranslate2"].stdout.splitlines() == lines


def test_the_length_penalty_reaches_the_model_dir_and_ctranslate2(
    translator_run, translator_ctranslate2, tmp_path
):
    """--length-penalty ranks the beams of both paths alike (the defaults'
    0.6 is held above), and a value either cannot honour is refused by the
    flag's name before any input is read."""
    from zoo.recipes.model_dir import load_model_dir

    out, export_dir = translator_run[0], translator_ctranslate2
    sentences = ("Ich sehe du.", "Er mag sie.", "wir kennen ich.", "Du rufe er.")
    trained = load_model_dir(out)
    for alpha in (0.0, 2.0):
        expected = trained.translate(
            list(sentences), beam_width=3, length_penalty=alpha
        )
        for flag, path in (("--model-dir", out), ("--ctranslate2", export_dir)):
            result = run_cli(
                "translate", flag, path, "--beam-width", "3",
                "--length-penalty", str(alpha), *sentences, in_process=True,
            )  # fmt: skip
            assert result.returncode == 0, result.stderr[-2000:]
            assert result.stdout.splitlines() == expected, (flag, alpha)
    nan = run_cli(
        "translate", "--model-dir", out, "--length-penalty", "nan", "hallo.",
        in_process=True,
    )  # fmt: skip
    assert nan.returncode != 0 and "Traceback" not in nan.stderr
    assert "--length-penalty must be a finite number; received nan" in nan.stderr
    exported_graph = run_cli(
        "translate", "--saved-model", tmp_path, "--length-penalty", "1", "hallo.",
        in_process=True,
    )  # fmt: skip
    assert exported_graph.returncode != 0
    assert "--length-penalty applies to --model-dir and --ctranslate2" in (
        exported_graph.stderr
    )
    with pytest.raises(ValueError, match="`length_penalty` must be a finite number"):
        trained.translate("hallo.", length_penalty=float("inf"))


def test_a_model_dir_streams_each_greedy_translation(translator_run):
    """`--stream` prints what `--beam-width 1` prints, each line as its
    words come (`TrainedModel.stream`), and refuses beams, scores and a
    SavedModel by the flags' names."""
    out = translator_run[0]
    sentences = ("Ich sehe du.", "Er mag sie.", "", "wir kennen ich.")
    streamed = run_cli(
        "translate", "--model-dir", out, "--stream", "--target-prefix", "I",
        *sentences, in_process=True,
    )  # fmt: skip
    assert streamed.returncode == 0, streamed.stderr[-2000:]
    whole = run_cli(
        "translate", "--model-dir", out, "--beam-width", "1", "--target-prefix",
        "I", *sentences, in_process=True,
    )  # fmt: skip
    assert streamed.stdout == whole.stdout and whole.stdout.count("\n") == 4
    for flags, message in (
        (["--model-dir", out, "--beam-width", "2"], "--stream decodes greedily"),
        (["--model-dir", out, "--scores"], "--stream writes text as it comes"),
        (["--saved-model", out], "--stream applies to --model-dir and --ctran"),
    ):
        refused = run_cli("translate", *flags, "--stream", "w1", in_process=True)
        assert refused.returncode != 0 and message in refused.stderr, refused.stderr
