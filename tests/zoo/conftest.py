"""Tiny trained runs shared by the command-line tests, each made once.

Training is the slow part of these tests; a directory made once per
session serves every test that only reads it. The runs train in this
process (`run_cli(..., in_process=True)`): what a fresh process adds, the
entry point and its start-up, is tested in tests/zoo/cli/test_main.py, and
the two `train` commands started together stay fresh processes.
"""

import subprocess

import pytest

from tests.command_line import cli_command, cli_env, run_cli

__all__ = ["cli_command", "cli_env", "run_cli"]

ENGLISH = ["i", "you", "he", "she", "we"]


def write_lines(path):
    """200 lines of five rotated pronouns, a language model's corpus."""
    lines = [" ".join(ENGLISH[i:] + ENGLISH[:i]) for i in range(5)] * 40
    path.write_text("\n".join(lines) + "\n")
    return path


def write_pairs(path):
    """100 German-English pairs of a pronoun, a verb and an object, each
    sentence capitalised (a cased translator learns both forms)."""
    german = ["ich", "du", "er", "sie", "wir"]
    verbs = [("sehe", "see"), ("rufe", "call"), ("kenne", "know"), ("mag", "like")]
    rows = [
        f"{de_s.capitalize()} {de_v} {de_o} {i}{j}{k}.\t"
        f"{en_s.capitalize()} {en_v} {en_o}."
        for i, (de_s, en_s) in enumerate(zip(german, ENGLISH))
        for j, (de_v, en_v) in enumerate(verbs)
        for k, (de_o, en_o) in enumerate(zip(german, ENGLISH))
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def language_model_run(tmp_path_factory):
    """A tiny language model, trained by the first of two `train` commands
    started together into one `--output-dir` (the second is refused).

    Returns:
        `(output_dir, data, [winner, loser])`, each a finished
        `subprocess.Popen` with `stdout` and `stderr` read into `.out` and
        `.err`.
    """
    root = tmp_path_factory.mktemp("language_model")
    data = write_lines(root / "lines.txt")
    out = root / "run"
    command = cli_command(
        "train", "language-model", "--data", data, "--preset", "tiny",
        "--epochs", "1", "--output-dir", out,
    )  # fmt: skip
    processes = [
        subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(),
        )
        for _ in range(2)
    ]
    for process in processes:
        process.out, process.err = process.communicate(timeout=600)
    processes.sort(key=lambda p: p.returncode)
    return out, data, processes


def write_labels(path):
    """100 `text<TAB>label` lines of two classes."""
    german = ["ich", "du", "er", "sie", "wir"]
    rows = [
        f"{w} is {'good' if i % 2 else 'bad'}\t{i % 2}"
        for i, w in enumerate(german * 20)
    ]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="session")
def translator_run(tmp_path_factory):
    """A tiny translator trained by `keras-seq train` for 2 epochs with the
    low-resource recipe and `--average-epochs 2`; shared by the tests of
    `train`, `translate`, `evaluate` and `export`. Its `--data` is named
    relative to the working directory of the command, as users type it.

    Returns:
        `(output_dir, data, the finished train process)`.
    """
    root = tmp_path_factory.mktemp("translator")
    data = write_pairs(root / "pairs.tsv")
    out = root / "translator"
    result = run_cli(
        "train", "translator", "--data", data.name, "--preset", "tiny",
        "--epochs", "2", "--average-epochs", "2", "--output-dir", out,
        "--recipe", "low-resource", cwd=root, in_process=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return out, data, result


@pytest.fixture(scope="session")
def translator_ctranslate2(translator_run, tmp_path_factory):
    """`translator_run` exported by `keras-seq export --format ctranslate2`
    (float32), once for the tests of `export` and `translate`; the
    directory."""
    pytest.importorskip("ctranslate2")
    export_dir = tmp_path_factory.mktemp("ctranslate2") / "translator"
    exported = run_cli(
        "export", "--model-dir", translator_run[0], "--export-dir", export_dir,
        "--format", "ctranslate2", in_process=True,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr[-2000:]
    return export_dir


_WRITERS = {
    "rnn-translator": write_pairs,
    "classifier": write_labels,
    "masked-language-model": write_lines,
}


@pytest.fixture(scope="session")
def tiny_runs(tmp_path_factory):
    """`tiny_runs(family)`: a tiny run of `family` trained for 1 epoch by
    `keras-seq train`, once per session: `(output_dir, train process)`.
    The RNN translator's run lowercases (`--lowercase`), as runs did before
    case was kept."""
    made = {}

    def make(family):
        if family not in made:
            root = tmp_path_factory.mktemp(family)
            data = _WRITERS[family](root / "data.txt")
            out = root / family
            result = run_cli(
                "train", family, "--data", data, "--preset", "tiny", "--epochs",
                "1", "--output-dir", out,
                *(["--lowercase"] if family == "rnn-translator" else []),
                in_process=True,
            )  # fmt: skip
            assert result.returncode == 0, result.stderr[-2000:]
            made[family] = out, result
        return made[family]

    return make
