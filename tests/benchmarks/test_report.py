"""`benchmarks.report`: the tables, the targets and the marked section."""

import pytest

from benchmarks import report, run
from tests.benchmarks.test_run import _decoding_run


def test_report_replaces_only_the_text_between_readme_markers(tmp_path):
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


def test_targets_report_ours_on_bucketed_and_on_fixed_batches():
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


def test_decoding_report_gives_each_process_its_own_ratio():
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


def test_throughput_tables_divide_each_row_by_its_baseline():
    cases = ((1, 1), (32, 4))
    runs = {
        "jax float32": [{"1x1": 0.5, "32x4": 4.0}, {"1x1": 0.1, "32x4": 2.0}],
        "jax int8": [{"1x1": 0.25, "32x4": 1.0}, {"1x1": 0.25, "32x4": 3.0}],
    }
    table = report.throughput_rows(runs, cases)
    # The batch over the median of the per-process medians.
    assert table["jax float32"]["1x1"]["sentences_per_s"] == pytest.approx(1 / 0.3)
    assert table["jax int8"]["32x4"]["sentences_per_s"] == pytest.approx(16.0)
    assert table["jax int8"]["32x4"]["per_process_s"] == [1.0, 3.0]
    assert report.throughput_table(
        "weights", table, cases, lambda name: name.split()[0] + " float32"
    ) == (
        "| weights | batch 1, greedy | batch 32, 4 beams |\n"
        "|---|---|---|\n"
        "| jax float32 | 3.3 (1.00x) | 10.7 (1.00x) |\n"
        "| jax int8 | 4.0 (1.20x) | 16.0 (1.50x) |"
    )
    sizes = {"float32_bytes": 4e6, "int8_bytes": 1e6}
    assert report.size_line("model.bin", sizes) == (
        "model.bin: float32 4.00 MB, int8 1.00 MB (4.00x smaller)"
    )
