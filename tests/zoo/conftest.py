"""Tiny trained runs shared by the command-line tests, each made once.

Training in a fresh process is the slow part of these tests; a directory
made once per session serves every test that only reads it.
"""

import os
import subprocess
import sys

import pytest

ENGLISH = ["i", "you", "he", "she", "we"]


def cli_command(*args):
    """`keras-seq ARGS` as a fresh process runs it."""
    return [sys.executable, "-m", "keras_seq_cli", *map(str, args)]


def cli_env(backend="tensorflow"):
    return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND=backend)


def write_lines(path):
    """200 lines of five rotated pronouns, a language model's corpus."""
    lines = [" ".join(ENGLISH[i:] + ENGLISH[:i]) for i in range(5)] * 40
    path.write_text("\n".join(lines) + "\n")
    return path


def write_pairs(path):
    """100 German-English pairs of a pronoun, a verb and an object."""
    german = ["ich", "du", "er", "sie", "wir"]
    verbs = [("sehe", "see"), ("rufe", "call"), ("kenne", "know"), ("mag", "like")]
    rows = [
        f"{de_s} {de_v} {de_o} {i}{j}{k}.\t{en_s} {en_v} {en_o}."
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
