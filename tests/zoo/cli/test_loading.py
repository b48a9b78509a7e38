"""`zoo.cli.loading`: `--model-dir`'s refusals as one line naming the flag."""

import re

import pytest

from zoo.cli.errors import UsageError
from zoo.cli.loading import compiling_said, load_model_dir
from zoo.recipes import run_dir


def test_a_missing_directory_names_the_flag(tmp_path, capsys):
    with pytest.raises(UsageError, match=r"^--model-dir .* has no run.json"):
        load_model_dir(str(tmp_path))
    assert capsys.readouterr().err == f"loading {tmp_path}...\n"


def test_a_bad_run_json_names_the_flag(tmp_path):
    run_dir.write_json(tmp_path / run_dir.RUN_FILE, ["not", "an", "object"])
    (tmp_path / run_dir.MODEL_FILE).write_bytes(b"")
    with pytest.raises(UsageError, match=r"^--model-dir .*run.json must hold a JSON"):
        load_model_dir(str(tmp_path), "classify")


def test_a_first_call_says_it_compiles_then_how_long_it_took(capsys):
    with compiling_said("translating 1 sentence"):
        print("Hello.")
    captured = capsys.readouterr()
    assert captured.out == "Hello.\n"
    first, done = captured.err.splitlines()
    assert first == (
        "translating 1 sentence (each new batch size compiles its decoding "
        "loop first)..."
    )
    assert re.fullmatch(r"done in \d+\.\d s, compiling included", done)
