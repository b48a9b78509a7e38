"""benchmarks/cli_wait.py: each tree's own console script, timed to its first line."""

import json

import pytest

from benchmarks import cli_wait

FAKE_CLI = """
import sys, time
def main():
    print(" ".join(sys.argv[1:]), flush=True)
    time.sleep(0.2)  # what runs after the first line counts to exit only
    return 0
"""


def test_a_tree_before_the_move_runs_its_keras_seq_cli(tmp_path):
    (tmp_path / "keras_seq_cli.py").write_text(FAKE_CLI, encoding="utf-8")
    waits = cli_wait._first_line(str(tmp_path), "RUN")
    assert 0 < waits["first line"] < waits["exit"]
    assert waits["exit"] - waits["first line"] >= 0.2


def test_a_failed_translation_is_an_error_not_a_time(tmp_path):
    (tmp_path / "keras_seq_cli.py").write_text(
        "def main():\n    return 3\n", encoding="utf-8"
    )
    with pytest.raises(RuntimeError, match="failed: 3"):
        cli_wait._first_line(str(tmp_path), "RUN")


def test_the_busy_core_spins_only_inside_its_context():
    with cli_wait._busy_core(True) as spinner:
        assert spinner.poll() is None
    assert spinner.returncode is not None
    with cli_wait._busy_core(False) as nothing:
        assert nothing is None


def test_the_table_gives_each_tree_its_waits():
    record = json.loads(
        json.dumps({
            "minutes asked": 2,
            "trees": {
                "b1a9f69": {"train_s": 124.4, "translate_first_line_s": 7.22},
                "after": {"train_s": 125.6, "translate_first_line_s": 6.0},
            },
        })
    )  # fmt: skip
    table = cli_wait.render(record)
    assert "| b1a9f69 | 124 | 7.2 |" in table
    assert "| after | 126 | 6.0 |" in table
    assert "train --minutes 2" in table
