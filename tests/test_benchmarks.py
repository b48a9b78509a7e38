"""Smoke test: the benchmark scripts run end to end and write their table.

Tiny sizes, one repetition, training only (ours and keras-hub), on the
TensorFlow backend in the test's own process; the real measurement is
`keras-seq bench` (see benchmarks/run.py).
"""

import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _repository_on_path(monkeypatch):
    monkeypatch.syspath_prepend(ROOT)


def test_config_counts_flops_of_the_small_translator():
    from benchmarks import config

    small = config.CONFIGS["small"]
    encoder, decoder, output = config.matmul_weights(small)
    # 2 x (4 x 128^2 + 2 x 128 x 512), 2 x (8 x 128^2 + 2 x 128 x 512), 128 x 8000.
    assert (encoder, decoder, output) == (393_216, 524_288, 1_024_000)
    tokens = 64 * 32
    attention = 3 * 6 * 2 * (2 * 64 * 32 * 32 * 128)
    expected = 6 * (encoder + decoder + output) * tokens + attention
    assert config.training_flops(small) == expected
    inputs, labels = config.training_batch(small)
    assert inputs["encoder_token_ids"].shape == (64, 32)
    assert (inputs["encoder_token_ids"][:, 24:] == 0).all()
    assert (labels[:, 24:] == 0).all() and (labels[:, :24] != 0).all()
    assert (inputs["decoder_token_ids"][:, 1:] == labels[:, :-1]).all()


def test_run_writes_a_table(tmp_path):
    from benchmarks import run

    status = run.main(
        [
            "--quick",
            "--backends", "tensorflow",
            "--stages", "training",
            "--no-memory",
            "--no-torch",
            "--implementations", "keras-seq", "keras-hub",
            "--in-process",
            "--output-dir", str(tmp_path),
        ]
    )  # fmt: skip
    assert status == 0
    text = (tmp_path / "benchmarks.md").read_text()
    assert "### Training, `tiny`" in text
    for name in ("keras-seq", "keras-hub"):
        assert f"| tensorflow | {name} |" in text
    results = json.loads((tmp_path / "benchmarks.json").read_text())
    rows = results["backends"]["tensorflow"]["training"]["tiny"]
    assert all(row["tokens_per_s"] > 0 for row in rows.values())


def test_cli_has_a_bench_command():
    from keras_seq import cli

    args = cli.build_parser().parse_args(["bench", "--quick", "--no-memory"])
    assert args.run is cli._bench and args.quick and not args.memory
    assert sys.executable


def test_report_replaces_only_the_text_between_readme_markers(tmp_path):
    from benchmarks import report

    readme = tmp_path / "README.md"
    readme.write_text(
        "# x\n\n## Results\n\nbefore\n<!-- benchmarks:start -->\nold\n"
        "<!-- benchmarks:end -->\nafter\n"
    )
    report.update_readme(
        str(readme), "## Benchmarks\n\nintro\n\n### Targets\n\n- one\n"
    )
    assert readme.read_text() == (
        "# x\n\n## Results\n\nbefore\n<!-- benchmarks:start -->\nintro\n\n"
        "#### Targets\n\n- one\n<!-- benchmarks:end -->\nafter\n"
    )
    readme.write_text("no markers")
    with pytest.raises(ValueError, match="markers"):
        report.update_readme(str(readme), "## Benchmarks\n")
