"""`python -m benchmarks.run --accelerator`: its jobs, refusal and tables.

No GPU is at hand here: the refusal runs for real, the GPU run with the
accelerator found and the workers' results made up (their shapes are the
workers', `tests/benchmarks/test_no_tensorflow.py` runs a real worker).
"""

import json

import pytest

from benchmarks import report, run


def _capture():
    parsed = {}

    def keep(args, argv, accelerator):
        parsed.update(args=args, accelerator=accelerator)
        return 0

    return parsed, keep


def test_it_refuses_in_one_line_where_jax_sees_no_accelerator(tmp_path, capsys):
    assert run.main(["--accelerator", "--output-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == run.REFUSAL + "\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--backends", "tensorflow"], "runs the JAX backend only"),
        (["--in-process"], "leave out --in-process"),
        (["--configs", "small"], "leave out --configs"),
        (["--implementations", "keras-seq"], "leave out --configs"),
    ],
)
def test_arguments_it_cannot_honour_are_refused(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run.main(["--accelerator", *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("quick", [False, True])
def test_the_jobs_are_the_gpu_tables(monkeypatch, quick):
    parsed, keep = _capture()
    monkeypatch.setattr(run, "find_accelerator", lambda: "1 x Fake GPU (gpu)")
    monkeypatch.setattr(run, "run_accelerator", keep)
    argv = ["--accelerator", "--no-torch", "--repeats", "3"] + (
        ["--quick"] if quick else []
    )
    assert run.main(argv) == 0
    jobs = run.accelerator_jobs(parsed["args"])
    assert [(stage, name) for stage, name, _ in jobs] == (
        [
            ("matmul", None),
            ("training", "tiny-bf16"),
            ("training", "tiny"),
            ("decoding", "tiny"),
        ]
        if quick
        else [
            ("matmul", None),
            ("training", "base-256x64-bf16"),
            ("training", "base-64x32"),
            ("decoding", "small"),
        ]
    )
    matmul, decoding = jobs[0][2], jobs[-1][2]
    assert matmul[matmul.index("--matmul-dtypes") + 1 :][:2] == ["bfloat16", "float32"]
    assert matmul[matmul.index("--matmul-sizes") + 1] == ("256" if quick else "8192")
    sizes = decoding[decoding.index("--batch-sizes") + 1 :][:2]
    assert sizes == (["1", "2"] if quick else ["1", "64"])
    assert "--repeats" in decoding and "3" in decoding


def test_the_gpu_configurations():
    from benchmarks.config import CONFIGS

    bf16, fp32 = CONFIGS["base-256x64-bf16"], CONFIGS["base-64x32"]
    assert (bf16["batch_size"], bf16["length"], bf16["policy"]) == (
        256,
        64,
        "mixed_bfloat16",
    )
    assert (fp32["batch_size"], fp32["length"]) == (64, 32)
    assert fp32.get("policy", "float32") == "float32"
    for config in (bf16, fp32):
        assert config["model_dim"] == 512 and config["isolated"]


def _row(name, step_ms, flops_per_s, xla=True, nan=False, policy="float32"):
    return {
        "implementation": name,
        "xla": xla,
        "length": 64,
        "step_ms": step_ms,
        "cpu_step_ms": step_ms,
        "tokens_per_s": 1e6 / step_ms,
        "flops_per_s": flops_per_s,
        "times": [step_ms / 1e3],
        "loss": None if nan else 9.2,
        "loss_is_nan": nan,
        "policy": policy,
    }


def _decoding(ms, cpu_ms):
    return {"ms": ms, "cpu_ms": cpu_ms, "tokens_per_s": 32e3 / ms, "times": [ms]}


def _fake_worker(stage_args):
    if "matmul" in stage_args:
        return {
            "versions": {"jax": "0.0"},
            "device": {"jax": "gpu: Fake GPU"},
            "matmul_by_dtype": {
                "bfloat16": {"jax": [800e12, 50e12]},
                "float32": {"jax": [400e12, 50e12]},
            },
        }
    return {
        "versions": {"jax": "0.0"},
        "device": {"jax": "gpu: Fake GPU"},
        "decoding_agrees": True,
        "new_tokens": 32,
        "decoding": {
            batch: {
                "keras-seq | cached greedy": _decoding(3.0, 1.0),
                "keras-hub | cached greedy": _decoding(3.3, 1.0),
                "keras-seq | beam": _decoding(4.0, 1.0),
                "keras-hub | beam": _decoding(4.4, 1.1),
            }
            for batch in ("1", "64")
        },
    }


def _fake_isolated(args, backend, name, directory, torch_too, on_rows=None):
    policy = "mixed_bfloat16" if "bf16" in name else "float32"
    rows = {
        "keras-seq": _row("keras-seq", 30.0, 300e12, policy=policy),
        "keras-hub": _row("keras-hub", 40.0, 225e12, policy=policy),
    }
    if torch_too:
        rows["torch.nn.Transformer"] = _row(
            "torch.nn.Transformer", 50.0, 180e12, xla=None, nan=True, policy=policy
        )
    return rows


def test_a_gpu_run_writes_its_tables_beside_the_cpu_ones(monkeypatch, tmp_path):
    monkeypatch.setattr(run, "find_accelerator", lambda: "1 x Fake GPU (gpu)")
    monkeypatch.setattr(run, "_torch_available", lambda: True)
    monkeypatch.setattr(
        run,
        "run_worker",
        lambda backend, worker_args, *a, **k: _fake_worker(worker_args),
    )
    monkeypatch.setattr(run, "run_isolated", _fake_isolated)
    assert run.main(["--accelerator", "--output-dir", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "accelerator.json",
        "accelerator.md",
    ]
    results = json.loads((tmp_path / "accelerator.json").read_text())
    assert results["accelerator"] == "1 x Fake GPU (gpu)"
    assert set(results["training"]) == {"base-256x64-bf16", "base-64x32"}
    text = (tmp_path / "accelerator.md").read_text()
    assert text == report.render_accelerator(results)
    # The shares divide by the rate of the policy's compute dtype.
    assert "| keras-seq | jit | 30.00 | 30.00 | 33,333 | 300.0 | 37.5% | 1.33x |" in (
        text
    )
    assert "| keras-seq | jit | 30.00 | 30.00 | 33,333 | 300.0 | 75.0% | 1.33x |" in (
        text
    )
    assert "| torch.nn.Transformer | eager |" in text and "**NaN**" in text
    assert "- Training, `base-256x64-bf16`: ours 1.33x the fastest peer" in text
    assert "ours at 37.5% of the measured bfloat16 matmul rate (target 35%): met" in (
        text
    )
    assert "- Beam search, batch 64: processor time 25% of its wall time" in text
    assert "- Cached greedy decoding, batch 1: ours 1.10x keras-hub's speed" in text
    assert "- Beam search, batch 64: ours 1.10x keras-hub's speed" in text
    assert "### Decoding, `small`, 32 new tokens" in text
    # The PyTorch row's loss was NaN: it is no peer's speed.
    assert (
        "| torch.nn.Transformer | eager | 50.00 | 50.00 | 20,000 | 180.0 | 22.5% "
        "| 0.80x | **NaN** |" in text
    )
    assert "Cached greedy tokens equal recomputed ones: yes." in text


def test_a_gpu_run_cut_short_leaves_the_tables_of_what_it_finished(
    monkeypatch, tmp_path
):
    monkeypatch.setattr(run, "find_accelerator", lambda: "1 x Fake GPU (gpu)")
    monkeypatch.setattr(run, "_torch_available", lambda: True)
    seen = []

    def worker(backend, worker_args, *args, **kwargs):
        if "decoding" in worker_args:
            # What the machine's time limit does to the last process.
            seen.append(json.loads((tmp_path / "accelerator.json").read_text()))
            raise KeyboardInterrupt
        return _fake_worker(worker_args)

    def isolated(args, backend, name, directory, torch_too, on_rows=None):
        rows = _fake_isolated(args, backend, name, directory, torch_too)
        first = dict(list(rows.items())[:1])
        on_rows(first)  # After the first implementation's process.
        seen.append(json.loads((tmp_path / "accelerator.json").read_text()))
        on_rows(rows)
        return rows

    monkeypatch.setattr(run, "run_worker", worker)
    monkeypatch.setattr(run, "run_isolated", isolated)
    with pytest.raises(KeyboardInterrupt):
        run.main(["--accelerator", "--output-dir", str(tmp_path)])
    # Mid-way through the first training configuration: the matmul rates
    # and that configuration's first row are already on disk.
    assert list(seen[0]["training"]["base-256x64-bf16"]) == ["keras-seq"]
    assert "bfloat16" in seen[0]["matmul"] and seen[0]["complete"] is False
    results = json.loads((tmp_path / "accelerator.json").read_text())
    assert results == seen[-1]
    assert set(results["training"]) == {"base-256x64-bf16", "base-64x32"}
    assert "decoding" not in results and results["complete"] is False
    text = (tmp_path / "accelerator.md").read_text()
    assert text == report.render_accelerator(results)
    assert "**Partial**" in text
    assert "| keras-seq | jit | 30.00 | 30.00 | 33,333 | 300.0 | 37.5% | 1.33x |" in (
        text
    )
