"""`zoo.cli.loading`: `--model-dir`'s refusals as one line naming the flag."""

import pytest

from zoo.cli.errors import UsageError
from zoo.cli.loading import load_model_dir
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
