"""`keras_seq.generation.beam_search` against a plain beam search in NumPy.

The step function is a fixed table of next-token logits indexed by the
previous token (a Markov chain), so the reference can enumerate every
candidate of every beam at every step.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from keras import ops

from keras_seq import generation
from keras_seq.generation.beam import length_penalty_factor, top_k_by_blocks

END = 3


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def reference_beam_search(table, starts, steps, k, alpha):
    """Beam search over `table[previous] -> logits`, one row at a time."""
    log_probs = _log_softmax(table.astype("float64"))
    results = []
    for start in starts:
        beams = [((), 0.0, False)]  # (tokens, summed log-prob, finished)
        for _ in range(steps):
            candidates = []
            for index, (tokens, score, done) in enumerate(beams):
                if done:
                    candidates.append((score, index, 0))
                    continue
                previous = tokens[-1] if tokens else start
                for token, value in enumerate(log_probs[previous]):
                    candidates.append((score + value, index, token))
            candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
            new = []
            for score, index, token in candidates[:k]:
                tokens, _, done = beams[index]
                new.append((tokens + (token,), score, done or token == END))
            beams = new
            if all(done for _, _, done in beams):
                break
        ranked = []
        for tokens, score, _ in beams:
            length = max(
                1, next((i + 1 for i, t in enumerate(tokens) if t == END), len(tokens))
            )
            ranked.append((score / ((5 + length) / 6) ** alpha, tokens))
        ranked.sort(key=lambda r: -r[0])
        results.append(ranked)
    return results


@pytest.mark.parametrize("vocabulary_size", [7, 300])  # 300: the block path
@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_beam_search_matches_a_plain_beam_search(vocabulary_size, alpha):
    rng = np.random.default_rng(vocabulary_size)
    table = rng.normal(0, 2, (vocabulary_size, vocabulary_size)).astype("float32")
    table[:, END] += 1.0  # Some hypotheses end early.
    starts = np.array([1, 4, 5], "int32")
    steps, k = 6, 4

    def step(previous, index, state):
        return ops.take(ops.convert_to_tensor(table), previous[:, 0], axis=0), state

    ids, scores = generation.beam_search(
        step,
        lambda state, rows: state,
        ops.zeros((len(starts) * k,)),
        len(starts),
        steps,
        starts,
        END,
        beam_width=k,
        length_penalty=alpha,
        num_return=k,
    )
    ids, scores = ops.convert_to_numpy(ids), ops.convert_to_numpy(scores)
    expected = reference_beam_search(table, starts, steps, k, alpha)
    for row, ranked in enumerate(expected):
        np.testing.assert_allclose(scores[row], [s for s, _ in ranked], rtol=1e-5)
        for rank, (_, tokens) in enumerate(ranked):
            got = list(ids[row, rank, : len(tokens)])
            assert got == list(tokens), (row, rank)
            assert not ids[row, rank, len(tokens) :].any()


@settings(max_examples=40, deadline=None)
@given(
    k=st.integers(1, 5),
    size=st.integers(1, 700),
    levels=st.integers(2, 50),
    seed=st.integers(0, 2**16),
)
def test_top_k_by_blocks_equals_top_k(k, size, levels, seed):
    # Few distinct values, so ties are common: both must pick the lower index.
    rng = np.random.default_rng(seed)
    values = rng.integers(0, levels, (3, size)).astype("float32")
    best, indices = top_k_by_blocks(ops.convert_to_tensor(values), k, block_size=8)
    best, indices = ops.convert_to_numpy(best), ops.convert_to_numpy(indices)
    if size < k:  # Padded with -inf, at indices past the end.
        values = np.pad(values, [(0, 0), (0, k - size)], constant_values=-np.inf)
    order = np.argsort(-values, axis=-1, kind="stable")[:, :k]
    np.testing.assert_array_equal(indices, order)
    np.testing.assert_array_equal(best, np.take_along_axis(values, order, -1))


def test_length_penalty_factor_is_gnmt():
    factor = length_penalty_factor(ops.convert_to_tensor(7), 0.6)
    assert np.isclose(float(factor), 2**0.6)
