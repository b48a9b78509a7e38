"""`keras-seq translate`: a model directory's translations, from arguments
or stdin, and its refusals."""

import shutil

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
    greedy = run_cli(
        "translate", "--saved-model", tmp_path, "--beam-width", "2", in_process=True
    )
    assert greedy.returncode == 1
    assert "--beam-width applies to --model-dir" in greedy.stderr
