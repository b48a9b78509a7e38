"""Benchmark configurations, their batches and their FLOP counts.

Every implementation (ours and the peers) is built from one of these dicts
and trained on the same batches, so that the figures compare code, not
models. A configuration's `policy` (default `"float32"`) is the Keras dtype
policy every implementation trains under (PyTorch: bfloat16 autocast for
`"mixed_bfloat16"`).

Shape legend:
    B: batch size
    S: source length
    T: target length (decoder input and labels)
    D: model width
    F: feed-forward width
    V: vocabulary size
"""

import numpy as np

START_ID, END_ID = 2, 3  # keras_seq.text's reserved ids: [START], [END].

CONFIGS = {
    # The `small` preset's sizes: the configuration every target is stated for.
    "small": {
        "source_vocabulary_size": 8000,
        "target_vocabulary_size": 8000,
        "model_dim": 128,
        "num_heads": 4,
        "ff_dim": 512,
        "num_encoder_layers": 2,
        "num_decoder_layers": 2,
        "dropout": 0.1,
        "max_length": 64,
        "length": 32,
        "batch_size": 64,
        "steps": 5,  # training steps per timed repetition
        "xla": "both",  # TensorFlow: time the Keras models with XLA on and off
        "preset": "small",
    },
    # Transformer base (Vaswani et al., 2017) on the same batch shape, for
    # training throughput only; untied here so that every peer has the same
    # matmul weights (the peers have no tied output layer).
    "base": {
        "source_vocabulary_size": 37000,
        "target_vocabulary_size": 37000,
        "model_dim": 512,
        "num_heads": 8,
        "ff_dim": 2048,
        "num_encoder_layers": 6,
        "num_decoder_layers": 6,
        "dropout": 0.1,
        "max_length": 256,
        "length": 32,
        "batch_size": 64,
        "steps": 1,
        # Each implementation trains in a process of its own, one after the
        # other, not round-robin, and with XLA on only: several 101M-parameter
        # models with their Adam slots do not fit in memory side by side.
        "xla": "on",
        "isolated": True,
        "preset": "base",
    },
    # Seconds to run; for the smoke test only.
    "tiny": {
        "source_vocabulary_size": 100,
        "target_vocabulary_size": 100,
        "model_dim": 16,
        "num_heads": 2,
        "ff_dim": 32,
        "num_encoder_layers": 1,
        "num_decoder_layers": 1,
        "dropout": 0.1,
        "max_length": 40,
        "length": 8,
        "batch_size": 4,
        "steps": 1,
        "xla": "both",
        "preset": "tiny",
    },
}

# The accelerator's tables (`python -m benchmarks.run --accelerator`):
# `base` at a batch that fills a GPU, in mixed precision, and more steps
# per repetition, as a step takes tens of milliseconds there.
CONFIGS["base-256x64-bf16"] = dict(
    CONFIGS["base"],
    batch_size=256,
    length=64,
    steps=10,
    policy="mixed_bfloat16",
)
# The float32 `base` row on the accelerator: the CPU's batch, more steps.
CONFIGS["base-64x32"] = dict(CONFIGS["base"], steps=10)
# The accelerator command's smoke test (`--quick`): the bf16 path, tiny.
CONFIGS["tiny-bf16"] = dict(CONFIGS["tiny"], policy="mixed_bfloat16")

MODEL_KEYS = (
    "source_vocabulary_size",
    "target_vocabulary_size",
    "model_dim",
    "num_heads",
    "ff_dim",
    "num_encoder_layers",
    "num_decoder_layers",
    "dropout",
    "max_length",
)


def model_kwargs(config):
    """The `zoo.build_translator` arguments of a configuration."""
    return {key: config[key] for key in MODEL_KEYS}


def real_length(length):
    """Tokens that are not padding: the last quarter of each row is padding."""
    return length - length // 4


def source_batch(config, batch_size, seed=0):
    """(B, S) int32 source ids with the last quarter of every row padded."""
    rng = np.random.default_rng(seed)
    length = config["length"]
    ids = rng.integers(5, config["source_vocabulary_size"], (batch_size, length))
    ids[:, real_length(length) :] = 0
    return ids.astype("int32")


def training_batch(config, seed=0):
    """One batch: `(inputs, labels)` as `model.fit` takes it.

    Returns:
        `({"encoder_token_ids": (B, S), "decoder_token_ids": (B, T)},
        labels (B, T))`: the decoder input is the labels shifted right
        behind the start token; both end in padding for the last quarter.
    """
    rng = np.random.default_rng(seed + 1)
    batch, length = config["batch_size"], config["length"]
    real = real_length(length)
    labels = rng.integers(5, config["target_vocabulary_size"], (batch, length))
    labels[:, real - 1] = END_ID
    labels[:, real:] = 0
    decoder = np.concatenate(
        [np.full((batch, 1), START_ID), labels[:, :-1]], axis=1
    )  # (B, T)
    inputs = {
        "encoder_token_ids": source_batch(config, batch, seed),
        "decoder_token_ids": decoder.astype("int32"),
    }
    return inputs, labels.astype("int32")


def bucket_length(config):
    """The length `keras_seq.text`'s pipeline pads this batch shape to.

    `make_translation_dataset` pads every batch to the smallest bucket
    boundary (`default_bucket_boundaries(max_length)`: 8, 16, 24, 40, 64
    for `small`) that holds its longest pair, here the `real_length`
    tokens of every row: 24 of the 32 for `small`.
    """
    real = real_length(config["length"])
    boundaries = bucket_boundaries(config["max_length"])
    return min(next(b for b in boundaries if b >= real), config["length"])


def bucket_boundaries(max_length):
    """`keras_seq.text.default_bucket_boundaries`, without TensorFlow.

    The pipelines' module imports TensorFlow, which the JAX harness must
    not need (a GPU machine may have JAX and PyTorch only), so the rule
    is restated here: start at 8, grow by 1.5 rounded up to a multiple of
    8, end at `max_length`. `tests/benchmarks/test_config.py` checks that
    it gives the pipelines' boundaries.
    """
    boundaries, length = [], 8
    while length < max_length:
        boundaries.append(length)
        length = -(-int(length * 1.5) // 8) * 8
    return boundaries + [max_length]


def bucketed_training_batch(config, seed=0):
    """`training_batch` as keras-seq's length-bucketed pipeline feeds it.

    The same ids, with the columns past `bucket_length` (padding in every
    row) left out: the peers' recipes pad every batch to the fixed
    length, keras-seq's pipeline to the bucket of the longest pair.
    """
    inputs, labels = training_batch(config, seed)
    n = bucket_length(config)
    return {key: value[:, :n] for key, value in inputs.items()}, labels[:, :n]


def target_tokens_per_step(config):
    """Real (not padding) target tokens in one training batch."""
    return config["batch_size"] * real_length(config["length"])


def matmul_weights(config):
    """Weights that multiply activations: (encoder, decoder, output) counts.

    Attention projections (4 D^2 per attention, biases left out), the two
    feed-forward matrices (2 D F) and the output layer (D V). Embedding
    lookups are gathers, not matmuls, and are not counted.
    """
    d, f = config["model_dim"], config["ff_dim"]
    encoder = config["num_encoder_layers"] * (4 * d * d + 2 * d * f)
    decoder = config["num_decoder_layers"] * (8 * d * d + 2 * d * f)
    return encoder, decoder, d * config["target_vocabulary_size"]


def training_flops(config, length=None):
    """FLOPs of one training step (forward and backward).

    6 x matmul weights x tokens (2 for the forward matmul, 4 for the two
    backward ones), plus the attention matmuls (Q K^T and weights x V, each
    2 B T S D FLOPs forward, also x 3 with the backward pass). Tokens are
    every position the step computes, padding included, because every
    implementation computes them: B x S for the encoder, B x T for the
    decoder and the output layer. Causal attention is counted in full
    (T x T), as the implementations compute it. `length` (default the
    configuration's) is the batch's source and target length: the FLOPs of
    a bucketed batch count only the columns it has.
    """
    b, n = config["batch_size"], length or config["length"]
    d = config["model_dim"]
    encoder, decoder, output = matmul_weights(config)
    dense = 6 * (encoder * b * n + (decoder + output) * b * n)
    attentions = config["num_encoder_layers"] + 2 * config["num_decoder_layers"]
    attention = 3 * attentions * 2 * (2 * b * n * n * d)
    return dense + attention


def parameter_count(config):
    """Parameters of the untied translator (for the tables' captions)."""
    d = config["model_dim"]
    encoder, decoder, output = matmul_weights(config)
    embeddings = d * (
        config["source_vocabulary_size"] + config["target_vocabulary_size"]
    )
    return encoder + decoder + output + embeddings
