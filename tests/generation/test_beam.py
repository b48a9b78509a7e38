"""`keras_seq.generation.beam_search` against a plain beam search in NumPy.

The step function is a fixed table of next-token logits indexed by the
previous token (a Markov chain), so the reference can enumerate every
candidate of every beam at every step.
"""

import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from keras import ops

from keras_seq import generation
from keras_seq.generation.beam import (
    default_steps_per_check,
    length_penalty_factor,
    top_k_by_blocks,
)
from tests.generation.loops import compiled_trip_counts, host_callbacks

END = 3


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def reference_beam_search(table, starts, steps, k, alpha, end=END):
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
                new.append((tokens + (token,), score, done or token == end))
            beams = new
            if all(done for _, _, done in beams):
                break
        ranked = []
        for tokens, score, _ in beams:
            length = max(
                1, next((i + 1 for i, t in enumerate(tokens) if t == end), len(tokens))
            )
            ranked.append((score / ((5 + length) / 6) ** alpha, tokens))
        ranked.sort(key=lambda r: -r[0])
        results.append(ranked)
    return results


def _table(vocabulary_size):
    rng = np.random.default_rng(vocabulary_size)
    table = rng.normal(0, 2, (vocabulary_size, vocabulary_size)).astype("float32")
    table[:, END] += 1.0  # Some hypotheses end early.
    return table


def _search(table, starts, steps, k, alpha, end=END, steps_per_check=None):
    def step(previous, index, state):
        return ops.take(ops.convert_to_tensor(table), previous[:, 0], axis=0), state

    return generation.beam_search(
        step,
        lambda state, rows: state,
        ops.zeros((len(starts) * k,)),
        len(starts),
        steps,
        starts,
        end,
        beam_width=k,
        length_penalty=alpha,
        num_return=k,
        steps_per_check=steps_per_check,
    )


def _assert_matches(ids, scores, expected):
    ids, scores = ops.convert_to_numpy(ids), ops.convert_to_numpy(scores)
    for row, ranked in enumerate(expected):
        np.testing.assert_allclose(
            scores[row], [s for s, _ in ranked], rtol=1e-5, atol=1e-6
        )
        for rank, (_, tokens) in enumerate(ranked):
            got = list(ids[row, rank, : len(tokens)])
            assert got == list(tokens), (row, rank)
            assert not ids[row, rank, len(tokens) :].any()


@pytest.mark.parametrize("vocabulary_size", [7, 300])  # 300: the block path
@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_beam_search_matches_a_plain_beam_search(vocabulary_size, alpha):
    table = _table(vocabulary_size)
    starts = np.array([1, 4, 5], "int32")
    ids, scores = _search(table, starts, 6, 4, alpha)
    _assert_matches(ids, scores, reference_beam_search(table, starts, 6, 4, alpha))


@pytest.mark.parametrize(
    "end, steps_per_check, end_bonus",
    [
        (END, 1, 1.0),  # checked after every step
        (END, 3, 1.0),  # two chunks of 3 steps
        (END, 4, 1.0),  # one chunk of 4, then 2 steps unchecked
        (END, 9, 1.0),  # one chunk of all 6 steps
        # Every beam ends within 3 steps: steps run after the end.
        (END, 4, 6.0),
        (END, 9, 6.0),
        (None, None, 1.0),  # no end token: a loop of static trip count
        (-1, None, 1.0),  # a negative id is no token's: the same
    ],
)
def test_beam_search_checks_for_the_end_every_few_steps_with_the_same_result(
    end, steps_per_check, end_bonus
):
    # Steps run after every beam has ended change nothing, so checking
    # every few steps returns what checking after every step returns.
    table = _table(7)
    table[:, END] += end_bonus - 1.0
    starts = np.array([1, 4, 5], "int32")
    ids, scores = _search(table, starts, 6, 4, 0.6, end, steps_per_check)
    never = -1  # the reference's end id that no token equals
    expected = reference_beam_search(
        table, starts, 6, 4, 0.6, END if end == END else never
    )
    if end == END and end_bonus > 1:
        # Every beam of every row ends before the last step, so the
        # chunks run steps after the end.
        assert all(len(tokens) <= 3 for ranked in expected for _, tokens in ranked)
    _assert_matches(ids, scores, expected)


def test_steps_per_check_must_be_a_positive_int():
    with pytest.raises(ValueError, match="`steps_per_check` must be a positive"):
        _search(_table(7), np.array([1], "int32"), 2, 2, 0.6, END, 0)


@pytest.mark.skipif(
    keras.backend.backend() == "torch",
    reason="PyTorch runs ops.top_k itself, whose order among ties is not fixed",
)
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


def _search_of(end, steps_per_check):
    table = _table(7)
    return lambda starts: _search(table, starts, 6, 4, 0.6, end, steps_per_check)


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="XLA via jax.jit")
@pytest.mark.parametrize(
    "end, steps_per_check, trip_counts",
    [
        # No end token: one loop whose trip count XLA knows, so a GPU runs
        # it without waiting on the host between steps.
        (None, None, [6]),
        (-1, None, [6]),
        # An end token checked every 3 steps: the check's loop (2 chunks,
        # not known) around a loop of 3 known steps.
        (END, 3, [None, 3]),
        # Checked after every step, as the CPU does.
        (END, 1, [None]),
    ],
)
def test_beam_search_waits_on_the_host_only_to_check_for_the_end(
    end, steps_per_check, trip_counts
):
    search = _search_of(end, steps_per_check)
    starts = np.array([1, 4, 5], "int32")
    assert sorted(compiled_trip_counts(search, starts), key=str) == sorted(
        trip_counts, key=str
    )
    assert host_callbacks(search, starts) == []


@pytest.mark.skipif(
    keras.backend.backend() == "torch",
    reason="PyTorch reads the end condition on the host: every 8 steps anywhere",
)
def test_the_end_is_checked_every_step_on_the_cpu_and_every_8_elsewhere(
    monkeypatch,
):
    assert default_steps_per_check() == 1  # this machine's CPU
    monkeypatch.setattr(keras.distribution, "list_devices", lambda: ["gpu:0"])
    assert default_steps_per_check() == 8
