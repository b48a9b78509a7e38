"""`zoo.cli.startup`: TensorFlow's start-up lines held back, the others kept."""

import os

from zoo.cli.startup import STARTUP_LOG_PREFIXES, startup_lines_held


def test_only_the_start_up_lines_are_held_back(capfd):
    lines = [
        f"{prefix} something the runtime says\n" for prefix in STARTUP_LOG_PREFIXES
    ]
    kept = ["a warning the user should read\n", "I0000x is not a log prefix\n"]
    with startup_lines_held():
        # Written to the file descriptor, as a C++ runtime writes them.
        for line in [lines[0], kept[0], *lines[1:], kept[1]]:
            os.write(2, line.encode())
    assert capfd.readouterr().err == "".join(kept)
