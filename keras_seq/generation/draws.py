"""Seeded sampling as a hash: the same seed and input draw the same tokens.

Sampling draws token `v` at step `t` of row `b` with the Gumbel-max trick:
the argmax over `v` of `logits[b, v] / temperature + g[b, t, v]`, with
`g = -log(-log(u))` and `u` uniform in (0, 1), picks `v` with probability
`softmax(logits / temperature)[v]` (Gumbel, 1954; Maddison et al., 2014).
Here `u` is not drawn from a random-number generator but hashed from a
counter, as `keras_seq.layers.hashed_dropout` hashes its mask:

    u[b, t, v] = hash(v; key_0 = row_key[b], key_1 = hash(t; seed))

Why keras-hub's samplers do not draw: they draw from a backend generator
whose state advances with every call and differs between TensorFlow, JAX
and PyTorch, and their `get_next_token` sees neither the step nor the row.
A hash of (seed, the row's own input, step, token) gives the same tokens on
every call and on every backend, and a row's tokens do not depend on the
rows beside it: the row key hashes its input ids (padding left out), not
its place in the batch. keras-hub's greedy loop then takes the argmax.

Shape legend:
    B: batch size
    S: input length (a source, a prompt)
    V: vocabulary size
"""

import numpy as np
from keras import ops

from keras_seq.layers.hashed_dropout import counter_hashes, to_words
from keras_seq.masks import masked_value, padding_mask

# A second word of the seed's key, so that the row keys and the step keys
# are hashed under different keys.
_STEP_SALT = 0x2545F491


def fresh_seed():
    """A seed for a call without one: NumPy's generator, which
    `keras.utils.set_random_seed` seeds."""
    return int(np.random.randint(0, 2**31 - 1))


def row_keys(token_ids, seed):
    """One 32-bit key per row from its non-padding ids and the seed: (B,).

    Each (position, id) pair is hashed, padding (id 0) counts as nothing,
    and the 16-bit halves of the hashes are summed per row: integer sums
    that every backend computes alike (no 32-bit wrap-around needed below
    2**15 positions), then mixed into one key.
    """
    token_ids = ops.convert_to_tensor(token_ids, "int32")  # (B, S)
    positions = ops.arange(ops.shape(token_ids)[1], dtype="int32")[None]  # (1, S)
    hashes = counter_hashes(positions, seed, token_ids)  # (B, S)
    real = padding_mask(token_ids)
    low = ops.cast(ops.bitwise_and(hashes, to_words(0xFFFF)), "int32")
    high = ops.cast(ops.right_shift(hashes, to_words(16)), "int32")
    low = ops.sum(ops.where(real, low, 0), axis=1)  # (B,)
    high = ops.sum(ops.where(real, high, 0), axis=1)  # (B,)
    return counter_hashes(low, high, seed)  # (B,)


def uniforms(row_key, step, seed, size):
    """(B, V) numbers in (0, 1), one per row and token, at one step.

    The top 24 bits of each hash, centred in their interval: exact in
    float32 and never 0 or 1, so both logarithms of the Gumbel noise are
    finite.
    """
    step_key = counter_hashes(step, seed, _STEP_SALT)
    tokens = ops.arange(size, dtype="int32")[None]  # (1, V)
    hashes = counter_hashes(tokens, row_key[:, None], step_key)  # (B, V)
    top = ops.cast(ops.right_shift(hashes, to_words(8)), "float32")
    return (top + 0.5) * (1.0 / 2**24)


def allowed_tokens(logits, top_k=None, top_p=None):
    """Which tokens top-k and top-p sampling may draw: (B, V) boolean.

    Top-k keeps the logits at least as large as the k-th largest (ties
    with it included); top-p keeps the most likely tokens whose
    probabilities, largest first, reach p before them (at least one), among
    the top k when both are given, as keras-hub's `TopPSampler` does.
    """
    allowed = ops.ones_like(logits, dtype="bool")
    size = logits.shape[-1]
    k = size if top_k is None else min(int(top_k), size)
    if top_k is not None:
        kth = ops.top_k(logits, k)[0][:, -1:]  # (B, 1)
        allowed = ops.greater_equal(logits, kth)
    if top_p is not None:
        probabilities = ops.softmax(logits, axis=-1)  # (B, V)
        largest, _ = ops.top_k(probabilities, k)  # (B, k), descending
        before = ops.cumsum(largest, axis=-1) - largest  # mass before each
        kept = ops.less(before, top_p)
        kept = ops.logical_or(kept, ops.arange(k) == 0)  # the first always
        smallest = ops.min(ops.where(kept, largest, 2.0), axis=-1, keepdims=True)
        allowed = ops.logical_and(allowed, ops.greater_equal(probabilities, smallest))
    return allowed


def gumbel_scores(logits, row_key, step, seed, temperature, top_k, top_p):
    """Scores whose argmax over the vocabulary is a seeded draw: (B, V).

    Args:
        logits: (B, V) logits of the next token.
        row_key: (B,) keys from `row_keys`.
        step: the position being chosen, an int or an int scalar tensor.
        seed: an int32 scalar tensor or int.
        temperature: float > 0.
        top_k: int or None.
        top_p: float in (0, 1] or None.

    Returns:
        (B, V) float32 scores; tokens top-k / top-p leave out score the
        masks' sentinel.
    """
    logits = ops.cast(logits, "float32") / temperature
    u = uniforms(row_key, step, seed, logits.shape[-1])
    scores = logits - ops.log(-ops.log(u))
    if top_k is None and top_p is None:
        return scores
    allowed = allowed_tokens(logits, top_k, top_p)
    return ops.where(allowed, scores, masked_value("float32"))
