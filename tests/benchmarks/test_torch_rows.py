"""The PyTorch backend's rows: `python -m benchmarks.run --backends torch`.

One tiny run end to end, in a process of its own (the backend is fixed per
process), without timing assertions; then the report's torch lines on
made-up results.
"""

import json
import os
import subprocess
import sys

import pytest

from benchmarks import report, run

pytest.importorskip("torch")


def test_a_torch_run_writes_its_rows_beside_the_other_backends(tmp_path):
    command = [sys.executable, "-m", "benchmarks.run", "--quick"]
    command += ["--backends", "torch", "--no-memory", "--output-dir", str(tmp_path)]
    command += ["--stages", "training,decoding,positions"]
    command += ["--implementations", "keras-seq", "keras-hub"]
    env = dict(os.environ, KERAS_BACKEND="torch")
    subprocess.run(command, cwd=run.ROOT, env=env, check=True, capture_output=True)
    # Beside the TensorFlow and JAX tables, not over them.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["torch.json", "torch.md"]
    results = json.loads((tmp_path / "torch.json").read_text())
    assert results["stem"] == "torch" and list(results["backends"]) == ["torch"]
    worker = results["backends"]["torch"]
    training = worker["training"]["tiny"]
    assert {row["implementation"] for row in training.values()} == {
        "keras-seq",
        "keras-hub",
        "torch.nn.Transformer",
    }
    assert all(row["tokens_per_s"] > 0 for row in training.values())
    for batch in ("1", "2"):
        decoding = worker["decoding"][batch]
        for key in (
            "keras-seq | cached greedy",
            "keras-seq | beam",
            "keras-hub | cached greedy",
            "keras-hub | beam",
            "torch.nn.Transformer | recompute greedy",
        ):
            assert decoding[key]["ms"] > 0, key
        positions = worker["positions"][batch]
        assert set(positions) == {
            f"{n} | {p}" for n in ("keras-seq", "keras-hub") for p in (2, 6)
        }
        assert positions["keras-seq | 6"]["ratio"] > 0
    text = (tmp_path / "torch.md").read_text()
    assert text == report.render(results)
    assert "| torch | keras-seq | eager | 8 |" in text
    assert "- Cached greedy decoding, torch, batch 1: ours" in text
    assert "- Time per token, torch, batch 2: ours" in text
    assert "### Time per token, early and late" in text


def _training(name, tokens_per_s, length=32):
    return {
        "implementation": name,
        "xla": None if name == "torch.nn.Transformer" else False,
        "length": length,
        "step_ms": 1e5 / tokens_per_s,
        "cpu_step_ms": 2e5 / tokens_per_s,
        "tokens_per_s": tokens_per_s,
        "flops_per_s": 1e9,
        "times": [0.1],
        "loss": 9.0,
        "loss_is_nan": False,
    }


def _results():
    def step(ms, times):
        return {"ms": ms, "cpu_ms": ms, "times": times}

    late = step(6.0, [0.006, 0.006, 0.007])
    late.update(ratio=1.2, paired_ratio=1.17)
    return {
        "machine": {"cpu": "x", "logical_cpus": 2},
        "command": "python -m benchmarks.run --backends torch",
        "started": "now",
        "load": {"start": 1.0, "end": 2.0},
        "backends": {
            "torch": {
                "load": {"start": 1.0, "end": 2.0},
                "repeats": 3,
                "training": {
                    "small": {
                        "keras-seq": _training("keras-seq", 1100.0),
                        "keras-seq, bucketed": _training("keras-seq", 1320.0, 24),
                        "keras-hub": _training("keras-hub", 1000.0),
                        "keras.io recipe": {
                            "implementation": "keras.io recipe",
                            "failed": "RuntimeError: no such op",
                        },
                        "torch.nn.Transformer": _training(
                            "torch.nn.Transformer", 2200.0
                        ),
                    }
                },
                "decoding": {
                    "1": {
                        "keras-seq | cached greedy": dict(
                            step(100.0, [0.1]), tokens_per_s=320.0
                        ),
                        "keras-hub | cached greedy": dict(
                            step(150.0, [0.15]), tokens_per_s=213.0
                        ),
                        "keras-hub | beam": {"failed": "ValueError: bad beams"},
                    }
                },
                "positions": {
                    "1": {
                        "keras-seq | 8": step(5.0, [0.005, 0.005, 0.006]),
                        "keras-seq | 56": late,
                    }
                },
            }
        },
        "memory": [],
    }


def test_the_torch_targets_and_failures_are_reported():
    text = report.render(_results())
    assert (
        "- Training, `small`, torch: ours 1.10x keras-hub on the same batch "
        "(target 1.0x): met (1.10x by processor time); 1.32x on its "
        "length-bucketed batches." in text
    )
    assert (
        "- Training, `small`, torch: ours 0.50x torch.nn.Transformer on the same "
        "batch (no target)" in text
    )
    assert (
        "torch, batch 1: ours 1.50x keras-hub's cached decoder (target 1.25x): met"
        in text
    )
    assert (
        "- Time per token, torch, batch 1: ours 1.20x at position 56 what it is "
        "at position 8 (paired 1.17x; target at most 1.3x): met." in text
    )
    assert "| torch | keras-seq | 1 | 5.00 | 6.00 | 1.20x | 1.17x |" in text
    # What failed is in the tables, in one line, and no figure stands for it.
    assert (
        "- torch: keras.io recipe training failed: `RuntimeError: no such op`" in text
    )
    assert "| torch | keras-hub | beam | failed | see below |" in text
    assert "keras-hub | beam failed: `ValueError: bad beams`" in text
    assert "the fastest peer" not in text.split("### Matmul")[0]


def test_the_torch_tables_have_their_own_readme_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(
        "<!-- benchmarks:start -->\nkeep\n<!-- benchmarks:end -->\n"
        "<!-- torch:start -->\nold\n<!-- torch:end -->\n"
    )
    report.update_readme(str(readme), "## Benchmarks\n\nnew\n", "torch")
    assert readme.read_text() == (
        "<!-- benchmarks:start -->\nkeep\n<!-- benchmarks:end -->\n"
        "<!-- torch:start -->\nnew\n<!-- torch:end -->\n"
    )
    assert run.output_stem(["torch"]) == "torch"
    assert run.output_stem(["tensorflow", "jax", "torch"]) == "benchmarks"
