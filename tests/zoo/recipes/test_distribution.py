"""Training across devices and machines on existing engines (issue:
reliability and scale, item 3). Each case runs in fresh processes, since
devices and clusters are fixed when a backend starts."""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from tests.zoo.recipes.test_resume import _weights, _write_pairs

TIMEOUT = 600


def _env(**extra):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    env.pop("TF_CONFIG", None)
    return {**env, **extra}


def _fit(mode, output, backend):
    command = [sys.executable, "-m", "tests.zoo.recipes.distributed_fit", mode, output]
    result = subprocess.run(
        command,
        env=_env(KERAS_BACKEND=backend),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    saved = np.load(output)
    weights = [saved[f"weight_{i}"] for i in range(len(saved.files) - 2)]
    return int(saved["replicas"]), float(saved["loss"]), weights


def _assert_same(weights, expected):
    assert len(weights) == len(expected)
    for ours, theirs in zip(weights, expected):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5)


def test_mirrored_strategy_over_two_cpus_matches_one_device(tmp_path):
    replicas, loss, weights = _fit("mirrored", tmp_path / "two.npz", "tensorflow")
    _, single_loss, single = _fit("single", tmp_path / "one.npz", "tensorflow")
    assert replicas == 2
    assert loss == pytest.approx(single_loss, rel=1e-6)
    _assert_same(weights, single)


def test_jax_data_parallel_over_two_devices_matches_one_device(tmp_path):
    pytest.importorskip("jax")
    replicas, loss, weights = _fit("data-parallel", tmp_path / "two.npz", "jax")
    _, single_loss, single = _fit("single", tmp_path / "one.npz", "jax")
    assert replicas == 2
    assert loss == pytest.approx(single_loss, rel=1e-6)
    _assert_same(weights, single)


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_multi_worker_training_from_the_command_line(tmp_path):
    """Two worker processes on 127.0.0.1 run `keras-seq train --strategy
    multi-worker`; each trains on its half of the batches and both end with
    the same weights."""
    data = tmp_path / "pairs.tsv"
    _write_pairs(data, count=1200)
    workers = [f"127.0.0.1:{port}" for port in _free_ports(2)]
    processes = []
    for index in range(2):
        task = {"type": "worker", "index": index}
        config = {"cluster": {"worker": workers}, "task": task}
        command = [
            sys.executable, "-m", "zoo.cli", "train", "translator",
            "--data", str(data), "--preset", "tiny", "--epochs", "2",
            "--seed", "0", "--vocabulary-size", "300", "--strategy",
            "multi-worker", "--output-dir", str(tmp_path / f"worker{index}"),
        ]  # fmt: skip
        env = _env(KERAS_BACKEND="tensorflow", TF_CONFIG=json.dumps(config))
        processes.append(
            subprocess.Popen(
                command,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outputs = []
    try:
        for process in processes:
            outputs.append(process.communicate(timeout=TIMEOUT))
    finally:
        for process in processes:
            process.kill()
    for process, (_, stderr) in zip(processes, outputs):
        assert process.returncode == 0, stderr[-3000:]
    first = _weights(tmp_path / "worker0" / "model.keras")
    second = _weights(tmp_path / "worker1" / "model.keras")
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    # Both report the same steps and metrics for every epoch.
    epochs = [
        [
            line.split(" - ", 1)[0] + line.split("loss:", 1)[1]
            for line in stdout.splitlines()
            if "/step" in line
        ]
        for stdout, _ in outputs
    ]
    assert len(epochs[0]) == 2 and epochs[0] == epochs[1]
