"""`keras-seq classify`: one `label<TAB>probability` line per input line."""

from tests.zoo.conftest import run_cli


def test_classify_answers_every_line(tiny_runs):
    out, _ = tiny_runs("classifier")
    classified = run_cli("classify", "--model-dir", out, "du is good", "")
    assert classified.returncode == 0, classified.stderr[-2000:]
    rows = [line.split("\t") for line in classified.stdout.splitlines()]
    assert len(rows) == 2  # one line per input, the blank one too
    assert all(label in ("0", "1") and 0.5 <= float(p) <= 1 for label, p in rows)
    by_stdin = run_cli("classify", "--model-dir", out, input="du is good\n\n")
    assert by_stdin.stdout == classified.stdout
