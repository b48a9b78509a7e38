"""`benchmarks.peers_torch`: the PyTorch peer on the device it is given.

PyTorch is optional (`benchmarks/requirements.txt`); without it these
tests are skipped. No GPU is needed: the device is picked from
`torch.cuda.is_available()`, which the tests set, and placement is checked
on PyTorch's `meta` device, where any tensor made on the CPU by mistake
shows up as a CPU tensor.
"""

import math

import numpy as np
import pytest

from benchmarks import config, peers_torch, report, training

torch = pytest.importorskip("torch")
from torch.overrides import TorchFunctionMode  # noqa: E402
from torch.utils._pytree import tree_leaves  # noqa: E402

TINY = config.CONFIGS["tiny"]


class _Devices(TorchFunctionMode):
    """The devices of the non-scalar tensors every torch function returns.

    Scalars are left out: Adam keeps its step count on the CPU whatever
    the device, as PyTorch does on CUDA.
    """

    def __init__(self):
        super().__init__()
        self.seen = {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for value in tree_leaves(out):
            if isinstance(value, torch.Tensor) and value.dim() > 0:
                name = getattr(func, "__name__", str(func))
                self.seen.setdefault(value.device.type, set()).add(name)
        return out


@pytest.fixture
def no_fast_path():
    # The encoder's inference fast path builds nested tensors, which the
    # meta device does not implement.
    before = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    yield
    torch.backends.mha.set_fastpath_enabled(before)


@pytest.mark.parametrize("cuda, expected", [(True, "cuda"), (False, "cpu")])
def test_the_device_is_cuda_when_pytorch_sees_a_gpu(monkeypatch, cuda, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    assert peers_torch.pick_device() == torch.device(expected)


def test_training_makes_every_tensor_on_the_device(no_fast_path):
    meta = torch.device("meta")
    inputs, labels = config.training_batch(TINY)
    model, train = peers_torch.make_trainer(TINY, inputs, labels, device=meta)
    assert {p.device.type for p in model.parameters()} == {"meta"}
    assert {b.device.type for b in model.buffers()} == {"meta"}
    devices = _Devices()
    # A meta tensor has no value to read: the step runs up to the loss's.
    with devices, pytest.raises(RuntimeError, match="meta"):
        train()
    assert set(devices.seen) == {"meta"}, devices.seen
    assert {"linear", "multi_head_attention_forward"} <= devices.seen["meta"]


@pytest.mark.parametrize("decode", [peers_torch.greedy, peers_torch.beam])
def test_decoding_makes_every_tensor_and_the_mask_on_the_device(decode, no_fast_path):
    model = peers_torch.build_torch_translator(TINY, torch.device("meta"))
    devices = _Devices()
    with devices, pytest.raises(NotImplementedError, match="meta"):
        decode(model, config.source_batch(TINY, 2), 3)
    assert set(devices.seen) == {"meta"}, devices.seen
    # The causal mask (ones, triu) and the token buffer (full) among them.
    assert {"ones", "triu", "full"} <= devices.seen["meta"]


def test_synchronize_waits_for_cuda_only(monkeypatch):
    waited = []
    monkeypatch.setattr(torch.cuda, "synchronize", waited.append)
    peers_torch.synchronize(torch.device("cpu"))
    assert waited == []
    peers_torch.synchronize(torch.device("cuda"))
    assert waited == [torch.device("cuda")]


def test_every_timed_call_synchronizes_before_it_returns(monkeypatch):
    waited = []
    monkeypatch.setattr(peers_torch, "synchronize", waited.append)
    cpu = torch.device("cpu")
    inputs, labels = config.training_batch(TINY)
    model, train = peers_torch.make_trainer(TINY, inputs, labels, device=cpu)
    train()
    source = config.source_batch(TINY, 2)
    assert peers_torch.greedy(model, source, 3).shape == (2, 3)
    assert peers_torch.beam(model, source, 3).shape == (2, 3)
    assert waited == [cpu, cpu, cpu]


def test_mixed_bfloat16_runs_the_forward_pass_in_bfloat16():
    cpu = torch.device("cpu")
    model = peers_torch.build_torch_translator(TINY, cpu)
    inputs, _ = config.training_batch(TINY)
    source = torch.as_tensor(inputs["encoder_token_ids"], dtype=torch.long)
    target = torch.as_tensor(inputs["decoder_token_ids"], dtype=torch.long)
    with peers_torch.autocast(cpu, "mixed_bfloat16"):
        assert model(source, target).dtype == torch.bfloat16
    with peers_torch.autocast(cpu, "float32"):
        assert model(source, target).dtype == torch.float32
    with pytest.raises(ValueError, match="`policy` must be"):
        peers_torch.autocast(cpu, "mixed_float16")


def test_mixed_bfloat16_training_keeps_float32_weights_and_trains():
    bf16 = dict(config.CONFIGS["tiny-bf16"], steps=3, dropout=0.0)
    inputs, labels = config.training_batch(bf16)
    model, train = peers_torch.make_trainer(
        bf16, inputs, labels, device=torch.device("cpu")
    )
    losses = [train() for _ in range(3)]
    assert all(math.isfinite(x) for x in losses)
    assert losses[-1] < losses[0]
    assert {p.dtype for p in model.parameters()} == {torch.float32}


def test_a_nan_loss_is_reported_as_such(monkeypatch):
    build = peers_torch.build_torch_translator

    def broken(config, device=None):
        model = build(config, device)
        with torch.no_grad():
            model.output.bias.fill_(float("nan"))
        return model

    monkeypatch.setattr(peers_torch, "build_torch_translator", broken)
    rows = training.measure(TINY, 1, implementations=(), with_torch=True)
    row = rows[training.TORCH]
    assert row["loss_is_nan"] is True and row["loss"] is None
    assert row["step_ms"] > 0
    results = {"backends": {"jax": {"training": {"tiny": rows}}}}
    assert "(**loss NaN**)" in report.training_section(results, "tiny", 1e9, 1e9)
    accelerator = {"training": {"tiny": rows}, "matmul": {}}
    section = report.accelerator_training_section(accelerator, "tiny")
    assert "**NaN**" in section and "was NaN" in section


def test_the_matmul_rate_of_torch_in_bfloat16():
    rates = training.timing.matmul_rates(
        sizes=(64,), repeats=1, torch_too=True, dtype="bfloat16"
    )
    assert rates["torch"][0] > 0
    assert np.isfinite(rates["torch"][1])
