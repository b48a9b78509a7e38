"""`keras-seq train`: one run per output directory, in real processes."""

import json
import re

from tests.zoo.conftest import ENGLISH


def test_two_runs_started_together_into_one_directory(language_model_run):
    out, _, (winner, loser) = language_model_run
    assert winner.returncode == 0, winner.err[-2000:]
    assert f"saved to {out}" in winner.out
    # The second is refused at once, in one line naming the first.
    assert loser.returncode == 1, loser.err[-2000:]
    assert "saved to" not in loser.out and "Traceback" not in loser.err
    message = loser.err.strip().splitlines()[-1]
    assert re.fullmatch(
        rf"keras-seq: --output-dir {out} is in use by another run \(pid "
        rf"{winner.pid} on \S+, started \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC\); "
        r"wait for it to end, or choose another --output-dir\.",
        message,
    ), message
    # The finished run is the winner's alone, and holds no lock.
    run = json.loads((out / "run.json").read_text())
    assert run["family"] == "language-model" and run["epochs"] == 1
    assert not (out / ".keras-seq.lock").exists()
    sample = winner.out.split("sample: ")[1].splitlines()[0]
    # The prompt is the start of the first validation line (line 1).
    assert sample.split()[:4] == (ENGLISH[1:] + ENGLISH[:1])[:4]
    assert len(sample.split()) > 4
