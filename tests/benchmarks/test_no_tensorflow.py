"""The JAX harness runs where TensorFlow is not installed.

A GPU machine may have JAX and PyTorch only. Each test starts Python with
a `sitecustomize` that makes every import of `tensorflow` (and its
submodules) fail as it fails there, before anything else is imported, in
that process and in the processes it starts; then runs the harness on
the JAX backend at tiny sizes.
"""

import json
import os
import subprocess
import sys

import pytest

from benchmarks import run

NO_TENSORFLOW = '''
import sys


class _NoTensorFlow:
    """Fails every import of tensorflow, as on a machine without it."""

    def find_spec(self, name, path=None, target=None):
        if name == "tensorflow" or name.startswith("tensorflow."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoTensorFlow())
'''


def _environment(directory):
    (directory / "sitecustomize.py").write_text(NO_TENSORFLOW)
    return dict(
        os.environ,
        KERAS_BACKEND="jax",
        PYTHONPATH=os.pathsep.join([str(directory), run.ROOT]),
        TF_CPP_MIN_LOG_LEVEL="3",
        # Compiled code's speed is not measured here: compile it quickly.
        XLA_FLAGS="--xla_backend_optimization_level=0 "
        "--xla_llvm_disable_expensive_passes=true",
    )


def _python(env, *arguments, timeout=600):
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=run.ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_tensorflow_cannot_be_imported_under_the_blocker(tmp_path):
    env = _environment(tmp_path)
    done = _python(env, "-c", "import tensorflow.python")
    assert done.returncode == 1
    assert "No module named 'tensorflow" in done.stderr


@pytest.mark.slow  # ~1 minute of compilation on 2 cores
def test_the_jax_worker_trains_and_decodes_every_implementation(tmp_path):
    env = _environment(tmp_path)
    output = tmp_path / "jax.json"
    done = _python(
        env,
        "-m", "benchmarks.worker",
        "--output", str(output),
        "--stages", "training,decoding",
        "--configs", "tiny",
        "--decoding-config", "tiny",
        "--repeats", "1",
        "--batch-sizes", "1",
        "--new-tokens", "2",
        "--min-seconds", "0",
        "--no-torch",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(output.read_text())
    assert result["backend"] == "jax"
    assert "tensorflow" not in result["versions"]
    assert result["device"] == {"jax": "cpu: cpu"}
    rows = result["training"]["tiny"]
    assert set(rows) == {"keras-seq", "keras-hub", "keras.io recipe"}
    for row in rows.values():
        assert row["step_ms"] > 0 and not row["loss_is_nan"]
    assert set(result["decoding"]["1"]) == {
        "keras-seq | cached greedy",
        "keras-seq | recompute greedy",
        "keras-seq | beam",
        "keras-hub | cached greedy",
        "keras-hub | recompute greedy",
        "keras-hub | beam",
        "keras.io recipe | recompute greedy",
    }
    assert result["decoding_agrees"] is True


def test_the_accelerator_command_refuses_without_tensorflow_too(tmp_path):
    env = _environment(tmp_path)
    done = _python(env, "-m", "benchmarks.run", "--accelerator")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "no accelerator found" in done.stderr
