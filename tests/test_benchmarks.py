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


@pytest.mark.parametrize(
    "stages, isolated",
    [
        ("matmul,training,decoding,serving", ["base"]),
        ("decoding", []),
        ("training", ["base"]),
    ],
)
def test_isolated_configs_run_only_with_training(stages, isolated):
    import argparse

    from benchmarks import run

    args = argparse.Namespace(configs=None, quick=False, stages=stages)
    shared, found = run._split_configs(args)
    assert shared == ["small"]
    assert found == isolated


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


def test_bucketed_batch_is_the_fixed_batch_without_its_padding_columns():
    from benchmarks import config

    small = config.CONFIGS["small"]
    # keras_seq's buckets for max_length 64 are 8, 16, 24, 40, 64: rows of
    # 24 real tokens go to the 24 bucket.
    assert config.bucket_length(small) == 24
    inputs, labels = config.training_batch(small)
    cut_inputs, cut_labels = config.bucketed_training_batch(small)
    for key, value in inputs.items():
        assert cut_inputs[key].shape == (64, 24)
        assert (cut_inputs[key] == value[:, :24]).all()
    assert (cut_labels == labels[:, :24]).all() and (cut_labels != 0).all()
    # Only the columns a bucketed step computes are counted.
    encoder, decoder, output = config.matmul_weights(small)
    attention = 3 * 6 * 2 * (2 * 64 * 24 * 24 * 128)
    expected = 6 * (encoder + decoder + output) * 64 * 24 + attention
    assert config.training_flops(small, length=24) == expected


def test_targets_report_ours_on_bucketed_and_on_fixed_batches():
    from benchmarks import report

    def row(name, length, tokens_per_s, cpu_ms):
        return {
            "implementation": name,
            "xla": True,
            "length": length,
            "step_ms": 100.0,
            "cpu_step_ms": cpu_ms,
            "tokens_per_s": tokens_per_s,
            "flops_per_s": 1e9,
        }

    rows = {
        "keras-seq": row("keras-seq", 32, 6000.0, 400.0),
        "keras-seq, bucketed": row("keras-seq", 24, 8100.0, 300.0),
        "keras-hub": row("keras-hub", 32, 6000.0, 420.0),
        "keras.io recipe": row("keras.io recipe", 32, 5400.0, 450.0),
    }
    results = {"backends": {"tensorflow": {"training": {"small": rows}}}}
    text = report.targets_section(results, peak=None)
    assert (
        "ours 1.35x the fastest peer on its length-bucketed batches (24 of 32 "
        "columns; 1.00x on the peers' fixed-length batch) (target 1.25x): met "
        "(1.40x by processor time)"
    ) in text
    assert "the slowest peer runs at 90% of the fastest's speed" in text


def _decoding_run(cached, recompute, hub):
    def row(ms):
        tokens_per_s = 32_000 / ms
        return {
            "ms": ms,
            "cpu_ms": 2 * ms,
            "tokens_per_s": tokens_per_s,
            "times": [ms / 1e3],
        }

    return {
        "32": {
            "keras-seq | cached greedy": row(cached),
            "keras-seq | recompute greedy": row(recompute),
            "keras-hub | cached greedy": row(hub),
        }
    }


def test_decoding_of_several_processes_is_the_median_of_their_medians():
    from benchmarks import run

    runs = [_decoding_run(10.0, 80.0, 15.0), _decoding_run(14.0, 84.0, 16.0)]
    runs.append(_decoding_run(12.0, 96.0, 30.0))
    merged = run.merge_decoding(runs)["32"]
    cached = merged["keras-seq | cached greedy"]
    assert cached["ms"] == 12.0 and cached["cpu_ms"] == 24.0
    assert cached["tokens_per_s"] == pytest.approx(32_000 / 12.0)
    assert cached["process_ms"] == [10.0, 14.0, 12.0]
    assert cached["times"] == [0.010, 0.014, 0.012]
    assert merged["keras-seq | recompute greedy"]["ms"] == 84.0
    assert merged["keras-hub | cached greedy"]["ms"] == 16.0


def test_decoding_report_gives_each_process_its_own_ratio():
    from benchmarks import report, run

    runs = [_decoding_run(10.0, 80.0, 15.0), _decoding_run(12.0, 96.0, 30.0)]
    runs.append(_decoding_run(14.0, 84.0, 16.0))
    worker = {"decoding": run.merge_decoding(runs), "decoding_processes": 3}
    text = report.decoding_section({"backends": {"tensorflow": worker}})
    # Medians 12, 84 and 16 ms; each process's ratios in its own order.
    assert (
        "- tensorflow, batch 32: ours 1.33x keras-hub's cached decoder "
        "(per process: 1.50x, 2.50x, 1.14x); recomputing takes 7.0x as long "
        "(per process: 8.0x, 8.0x, 6.0x)."
    ) in text
    note = report._decoding_processes_note({"backends": {"tensorflow": worker}})
    assert "in 3 separate processes per backend" in note


@pytest.mark.parametrize("name", ["keras-seq", "keras-hub", "keras.io recipe"])
def test_keras_trainer_runs_the_compiled_step_and_lowers_the_loss(name):
    from benchmarks import config, training

    tiny = dict(config.CONFIGS["tiny"], steps=3, dropout=0.0)
    inputs, labels = config.training_batch(tiny)
    model, train = training.keras_trainer(name, tiny, inputs, labels, False)
    losses = [train() for _ in range(4)]
    # 12 Adam steps at 1e-4 on one batch, no dropout: the loss falls every
    # repetition.
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert int(model.optimizer.iterations) == 12
