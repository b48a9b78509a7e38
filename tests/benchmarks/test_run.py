"""`benchmarks.run`: the entry point, end to end at tiny sizes.

Tiny sizes, one repetition, training only (ours and keras-hub), on the
TensorFlow backend in the test's own process; the real measurement is
`python -m benchmarks.run`.
"""

import argparse
import json

import pytest

from benchmarks import run


@pytest.mark.parametrize(
    "stages, isolated",
    [
        ("matmul,training,decoding,serving", ["base"]),
        ("decoding", []),
        ("training", ["base"]),
    ],
)
def test_isolated_configs_run_only_with_training(stages, isolated):

    args = argparse.Namespace(configs=None, quick=False, stages=stages)
    shared, found = run._split_configs(args)
    assert shared == ["small"]
    assert found == isolated


def test_run_writes_a_table(tmp_path):
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


def test_the_machine_names_the_gpu_that_nvidia_smi_lists(tmp_path, monkeypatch):
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1234)'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert run.machine()["gpu"] == "NVIDIA H100 80GB HBM3"
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert run.machine()["gpu"] == "none (CPU only)"


def test_the_report_says_where_the_figures_were_computed():
    from benchmarks import report

    gpu = report._device_words({"gpu": "NVIDIA H100 80GB HBM3"})
    assert gpu.startswith("GPU NVIDIA H100 80GB HBM3")
    assert report._device_words({"gpu": "none (CPU only)"}) == (
        "no GPU (every figure is CPU)"
    )
