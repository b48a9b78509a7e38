"""The PyTorch peer: `torch.nn.Transformer`, on CUDA when there is one.

The same translator as ours (sinusoidal positions, token embeddings scaled
by sqrt(D), post-norm blocks, dropout 0.1, an untied output layer), trained
with `F.cross_entropy(ignore_index=0, label_smoothing=0.1)` and Adam. Run
eagerly, as PyTorch runs by default. `nn.Transformer` has no key/value
cache, so it decodes by recomputation: at every step the decoder runs over
the tokens so far (its prefix grows, there is no padded buffer).

Every tensor, the causal mask included, lives on `pick_device()`: CUDA
when PyTorch sees a GPU, else the CPU. Under the `mixed_bfloat16` policy
the forward pass and the loss run in `torch.autocast` with bfloat16, as
Keras' policy computes in bfloat16 with float32 weights. CUDA runs
asynchronously, so every function here synchronizes the device before it
returns: the caller's clock then covers the work, not its queuing.

Needs `torch==2.13.0` (`benchmarks/requirements.txt`); it is not a
dependency of keras-seq.

Shape legend:
    B: batch size
    S: source length
    T: target length
    D: model width
    V: target vocabulary size
    K: beam width
"""

import contextlib
import math

import numpy as np

from benchmarks.config import START_ID


def available():
    try:
        import torch  # noqa: F401  Optional: benchmarks/requirements.txt.
    except ImportError:
        return False
    return True


def pick_device():
    """`cuda` when PyTorch sees a GPU, else `cpu`, as a `torch.device`."""
    import torch  # Optional, and absent from the Keras processes' memory.

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def autocast(device, policy):
    """bfloat16 autocast on `device` for `mixed_bfloat16`, else nothing.

    Args:
        device: the `torch.device` the model runs on.
        policy: a Keras dtype policy name: `"float32"` or
            `"mixed_bfloat16"`.
    """
    import torch  # Optional, and absent from the Keras processes' memory.

    if policy == "mixed_bfloat16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    if policy not in (None, "float32"):
        raise ValueError(
            f"`policy` must be 'float32' or 'mixed_bfloat16'; received {policy!r}."
        )
    return contextlib.nullcontext()


def synchronize(device):
    """Wait for the work queued on `device` (CUDA runs asynchronously)."""
    import torch  # Optional, and absent from the Keras processes' memory.

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _ids(array, device):
    """int64 ids on `device` from a NumPy array."""
    import torch  # Optional, and absent from the Keras processes' memory.

    return torch.as_tensor(np.asarray(array), dtype=torch.long, device=device)


def _sinusoids(length, width):
    """(length, width) sines and cosines of Eq. (7.29)."""
    positions = np.arange(length)[:, None]
    rates = 1.0 / 10000 ** (np.arange(0, width, 2) / width)
    table = np.zeros((length, width), "float32")
    table[:, 0::2] = np.sin(positions * rates)
    table[:, 1::2] = np.cos(positions * rates)
    return table


def build_torch_translator(config, device=None):
    """An `nn.Module` translator around `nn.Transformer`, on `device`.

    `device` defaults to `pick_device()`.
    """
    import torch  # Optional, and absent from the Keras processes' memory.
    from torch import nn

    class TorchTranslator(nn.Module):
        def __init__(self):
            super().__init__()
            d = config["model_dim"]
            self.scale = math.sqrt(d)
            self.source_embedding = nn.Embedding(config["source_vocabulary_size"], d)
            self.target_embedding = nn.Embedding(config["target_vocabulary_size"], d)
            table = torch.from_numpy(_sinusoids(config["max_length"], d))
            self.register_buffer("positions", table)
            self.dropout = nn.Dropout(config["dropout"])
            self.transformer = nn.Transformer(
                d_model=d,
                nhead=config["num_heads"],
                num_encoder_layers=config["num_encoder_layers"],
                num_decoder_layers=config["num_decoder_layers"],
                dim_feedforward=config["ff_dim"],
                dropout=config["dropout"],
                batch_first=True,
            )
            self.output = nn.Linear(d, config["target_vocabulary_size"])

        def embed(self, table, ids):
            x = table(ids) * self.scale + self.positions[: ids.shape[1]]
            return self.dropout(x)  # (B, T, D)

        def encode(self, source):
            padding = source == 0  # (B, S), True = padding in torch
            x = self.embed(self.source_embedding, source)
            return self.transformer.encoder(x, src_key_padding_mask=padding), padding

        def decode(self, target, memory, source_padding):
            length = target.shape[1]
            causal = torch.triu(
                torch.ones(length, length, dtype=torch.bool, device=target.device), 1
            )
            y = self.transformer.decoder(
                self.embed(self.target_embedding, target),
                memory,
                tgt_mask=causal,
                tgt_key_padding_mask=target == 0,
                memory_key_padding_mask=source_padding,
                tgt_is_causal=True,
            )
            return self.output(y)  # (B, T, V)

        def forward(self, source, target):
            memory, padding = self.encode(source)
            return self.decode(target, memory, padding)

    torch.manual_seed(0)
    return TorchTranslator().to(device or pick_device())


def make_trainer(config, inputs, labels, device=None):
    """A zero-argument function running `config["steps"]` training steps.

    It returns the last step's loss as a Python float, NaN included (the
    caller reports it), after synchronizing the device. Under the
    configuration's `policy` `"mixed_bfloat16"` the forward pass and the
    loss run under bfloat16 autocast; the weights and Adam stay float32.
    """
    import torch  # Optional, and absent from the Keras processes' memory.
    import torch.nn.functional as F

    device = device or pick_device()
    model = build_torch_translator(config, device)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), 1e-4, (0.9, 0.98), eps=1e-9)
    source = _ids(inputs["encoder_token_ids"], device)
    target = _ids(inputs["decoder_token_ids"], device)
    labels = _ids(labels, device)
    policy = config.get("policy", "float32")

    def train():
        for _ in range(config["steps"]):
            with autocast(device, policy):
                logits = model(source, target)  # (B, T, V)
                loss = F.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]),
                    labels.reshape(-1),
                    ignore_index=0,
                    label_smoothing=0.1,
                )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        synchronize(device)
        return float(loss.detach())

    return model, train


def greedy(model, source, new_tokens):
    """Greedy decoding by recomputation; returns (B, new_tokens) ids."""
    import torch  # Optional, and absent from the Keras processes' memory.

    model.eval()
    device = next(model.parameters()).device
    with torch.inference_mode():
        source = _ids(source, device)
        memory, padding = model.encode(source)
        tokens = torch.full(
            (source.shape[0], 1), START_ID, dtype=torch.long, device=device
        )
        for _ in range(new_tokens):
            logits = model.decode(tokens, memory, padding)[:, -1]  # (B, V)
            tokens = torch.cat([tokens, logits.argmax(-1, keepdim=True)], dim=1)
        synchronize(device)
    return tokens[:, 1:].cpu().numpy()


def beam(model, source, new_tokens, beam_width=4):
    """Beam search by recomputation (summed log-probabilities, no early stop)."""
    import torch  # Optional, and absent from the Keras processes' memory.

    model.eval()
    device = next(model.parameters()).device
    k = beam_width
    with torch.inference_mode():
        source = _ids(source, device)
        batch = source.shape[0]
        memory, padding = model.encode(source)
        memory = memory.repeat_interleave(k, dim=0)  # (B*K, S, D)
        padding = padding.repeat_interleave(k, dim=0)
        tokens = torch.full((batch * k, 1), START_ID, dtype=torch.long, device=device)
        scores = torch.full((batch, k), -1e9, device=device)
        scores[:, 0] = 0.0  # Only one live hypothesis at the start.
        offsets = torch.arange(batch, device=device)[:, None] * k  # (B, 1)
        for _ in range(new_tokens):
            logits = model.decode(tokens, memory, padding)[:, -1]  # (B*K, V)
            log_probs = logits.log_softmax(-1).view(batch, k, -1)
            candidates = (scores[..., None] + log_probs).view(batch, -1)
            scores, flat = candidates.topk(k, dim=-1)  # (B, K)
            vocabulary = log_probs.shape[-1]
            rows = (flat // vocabulary + offsets).view(-1)
            new = (flat % vocabulary).view(-1, 1)
            tokens = torch.cat([tokens[rows], new], dim=1)
        best = scores.argmax(-1) + offsets[:, 0]
        synchronize(device)
    return tokens[best, 1:].cpu().numpy()
