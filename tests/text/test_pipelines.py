"""Tests for keras_seq.text.pipelines: the tf.data pipelines of every family."""

import collections
import math
import warnings

import numpy as np
import pytest

from keras_seq.text import (
    END_ID,
    MASK_ID,
    PAD_ID,
    START_ID,
    UNK_ID,
    default_bucket_boundaries,
    make_classification_dataset,
    make_language_model_dataset,
    make_masked_language_model_dataset,
    make_translation_dataset,
)
from tests.text.conftest import english_sentences

MAX_LENGTH = 16
BATCH_TOKENS = 96


def _ids(tokenizer, texts):
    return [list(map(int, row)) for row in tokenizer.tokenize(texts)]


def _epoch(dataset):
    """All batches of one epoch as NumPy: a list of (features, labels)."""
    batches = []
    for features, labels in dataset:
        if isinstance(features, dict):
            features = {key: value.numpy() for key, value in features.items()}
        else:
            features = features.numpy()
        batches.append((features, labels.numpy()))
    return batches


def _translation(pairs, source_tokenizer, target_tokenizer, **kwargs):
    kwargs.setdefault("max_length", MAX_LENGTH)
    kwargs.setdefault("batch_tokens", BATCH_TOKENS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = make_translation_dataset(
            pairs, source_tokenizer, target_tokenizer, **kwargs
        )
    return dataset, [str(warning.message) for warning in caught]


@pytest.fixture(scope="module")
def evaluation(pairs, source_tokenizer, target_tokenizer):
    dataset, messages = _translation(pairs, source_tokenizer, target_tokenizer)
    batches = _epoch(dataset)
    assert dataset.cardinality().numpy() == len(batches)
    return batches, messages


# Translation.


def test_default_bucket_boundaries():
    assert default_bucket_boundaries(64) == [8, 16, 24, 40, 64]
    assert default_bucket_boundaries(128) == [8, 16, 24, 40, 64, 96, 128]
    assert default_bucket_boundaries(16) == [8, 16]
    assert default_bucket_boundaries(5) == [5]


def test_teacher_forcing_layout(evaluation, pairs, source_tokenizer, target_tokenizer):
    batches, _ = evaluation
    sources = _ids(source_tokenizer, [source for source, _ in pairs])
    targets = _ids(target_tokenizer, [target for _, target in pairs])
    expected = {
        tuple(source[:MAX_LENGTH]): target[: MAX_LENGTH - 1]
        for source, target in zip(sources, targets)
    }
    for features, labels in batches:
        encoder = features["encoder_token_ids"]
        decoder = features["decoder_token_ids"]
        for source, inputs, row_labels in zip(encoder, decoder, labels):
            length = int(np.count_nonzero(row_labels))
            target = expected[tuple(source[source != PAD_ID])]
            assert inputs[0] == START_ID
            assert row_labels[length - 1] == END_ID
            assert row_labels[: length - 1].tolist() == target
            # Labels are the decoder input shifted by one, then padding.
            np.testing.assert_array_equal(inputs[1:length], row_labels[: length - 1])
            assert not inputs[length:].any() and not row_labels[length:].any()


def test_padding_is_id_zero_at_the_end(evaluation):
    for features, labels in evaluation[0]:
        for ids in (
            features["encoder_token_ids"],
            features["decoder_token_ids"],
            labels,
        ):
            assert ids.dtype == np.int32
            real = ids != PAD_ID
            # Real tokens form a prefix of every row: 1...1 0...0.
            np.testing.assert_array_equal(real, np.sort(real, axis=1)[:, ::-1])


def test_evaluation_keeps_every_pair_with_few_shapes(evaluation, pairs):
    batches, _ = evaluation
    sources = collections.Counter()
    shapes = set()
    for features, labels in batches:
        encoder = features["encoder_token_ids"]
        shapes.add(encoder.shape[1])
        assert encoder.shape[1] == features["decoder_token_ids"].shape[1]
        assert encoder.shape == labels.shape
        sources.update(tuple(row[row != PAD_ID]) for row in encoder)
        # Each pair sits in the shortest bucket its longer side fits.
        longer = np.maximum(
            np.count_nonzero(encoder, axis=1), np.count_nonzero(labels, axis=1)
        )
        lower = {8: 0, 16: 8}[encoder.shape[1]]
        assert (lower < longer).all() and (longer <= encoder.shape[1]).all()
    assert sum(sources.values()) == len(pairs) == len(sources)
    # Lengths come from the buckets: 8 and 16 for max_length=16.
    assert shapes == {8, 16}


def test_truncation_is_counted_in_one_warning(
    evaluation, pairs, source_tokenizer, target_tokenizer
):
    _, messages = evaluation
    sources = _ids(source_tokenizer, [source for source, _ in pairs])
    targets = _ids(target_tokenizer, [target for _, target in pairs])
    # [START] target [END] is cut to MAX_LENGTH + 1 tokens.
    count = sum(
        len(source) > MAX_LENGTH or len(target) + 2 > MAX_LENGTH + 1
        for source, target in zip(sources, targets)
    )
    assert 0 < count < len(pairs)
    assert messages == [
        f"{count} of {len(pairs)} sentence pairs were longer than "
        f"max_length={MAX_LENGTH} tokens and were truncated."
    ]
    _, messages = _translation(
        pairs[:8], source_tokenizer, target_tokenizer, max_length=64
    )
    assert messages == []


def test_training_batches_have_fixed_shapes_per_bucket(
    pairs, source_tokenizer, target_tokenizer
):
    dataset, _ = _translation(
        pairs, source_tokenizer, target_tokenizer, training=True, shuffle=True
    )
    shapes = collections.Counter()
    batches = _epoch(dataset)
    assert dataset.cardinality().numpy() == len(batches)
    for features, labels in batches:
        shapes[features["encoder_token_ids"].shape] += 1
        assert features["decoder_token_ids"].shape == labels.shape
    # One shape per bucket: the batch size is the token budget over the
    # bucket length.
    assert set(shapes) == {(BATCH_TOKENS // 8, 8), (BATCH_TOKENS // 16, 16)}
    # Only each bucket's last, partial batch is dropped.
    kept = sum(size * count for (size, _), count in shapes.items())
    assert len(pairs) - kept < BATCH_TOKENS // 8 + BATCH_TOKENS // 16


def test_a_bucket_smaller_than_a_batch_still_trains(
    pairs, source_tokenizer, target_tokenizer
):
    """Dropping incomplete batches must not drop a small corpus whole."""
    few = pairs[:7]
    dataset, _ = _translation(
        few, source_tokenizer, target_tokenizer, training=True, batch_tokens=4096
    )
    batches = _epoch(dataset)
    assert dataset.cardinality().numpy() == len(batches) >= 1
    assert sum(len(labels) for _, labels in batches) == len(few)


def test_shuffle_is_seeded_and_batch_size_can_be_fixed(
    pairs, source_tokenizer, target_tokenizer
):
    def epoch_sources(dataset):
        return [features["encoder_token_ids"] for features, _ in _epoch(dataset)]

    datasets = [
        _translation(
            pairs, source_tokenizer, target_tokenizer, shuffle=True, seed=1,
            batch_size=5, bucket_boundaries=[10],
        )[0]
        for _ in range(2)
    ]  # fmt: skip
    first = epoch_sources(datasets[0])
    assert {batch.shape for batch in first[:-2]} <= {(5, 10), (5, 16)}
    # The same seed gives the same order; the next epoch is reshuffled.
    for batch, again in zip(first, epoch_sources(datasets[1])):
        np.testing.assert_array_equal(batch, again)
    second = epoch_sources(datasets[0])
    assert not all(np.array_equal(a, b) for a, b in zip(first, second))


def test_token_dropout_hides_input_words_only(
    pairs, source_tokenizer, target_tokenizer
):
    def dataset(rate):
        return _translation(
            pairs, source_tokenizer, target_tokenizer, seed=3, training=True,
            token_dropout=rate,
        )[0]  # fmt: skip

    plain = _epoch(dataset(0.0))
    dropping = dataset(0.3)
    first, second = _epoch(dropping), _epoch(dropping)
    assert len(first) == len(plain) == dropping.cardinality().numpy()
    dropped_shares = []
    for (features, labels), (kept, kept_labels) in zip(first, plain):
        np.testing.assert_array_equal(labels, kept_labels)  # labels untouched
        for name in ("encoder_token_ids", "decoder_token_ids"):
            ids, original = features[name], kept[name]
            changed = ids != original
            assert (ids[changed] == UNK_ID).all()
            # Padding, [START] and [END] stay, so masks and lengths do too.
            assert not changed[original < 5].any()
            dropped_shares.append((changed.sum(), (original >= 5).sum()))
    dropped, words = np.sum(dropped_shares, axis=0)
    assert words > 2000 and abs(dropped / words - 0.3) < 0.03
    # The same batches in the same order, but a new draw of hidden words.
    again = [f["encoder_token_ids"] for f, _ in second]
    assert not all(
        np.array_equal(f["encoder_token_ids"], a) for (f, _), a in zip(first, again)
    )


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"token_dropout": 1.0}, ValueError, "`token_dropout` must be in"),
        ({"max_length": 1}, ValueError, "max_length"),
        ({"bucket_boundaries": [16, 8]}, ValueError, "bucket_boundaries"),
        ({"bucket_boundaries": [8, 32]}, ValueError, "bucket_boundaries"),
        ({"batch_tokens": 0}, ValueError, "batch_tokens"),
        ({"batch_size": 2.0}, ValueError, "`batch_size` must be a positive integer"),
    ],
)
def test_translation_refuses_bad_arguments(
    kwargs, error, message, source_tokenizer, target_tokenizer
):
    pairs = [("a cat.", "eine katze.")]
    with pytest.raises(error, match=message):
        _translation(pairs, source_tokenizer, target_tokenizer, **kwargs)
    with pytest.raises(TypeError, match="item 1"):
        _translation(pairs + ["no pair"], source_tokenizer, target_tokenizer)


# Classification.


def test_classification_batches(source_tokenizer):
    texts = english_sentences(10)
    labels = np.arange(10) % 3
    note = r"^\d+ of 10 texts are longer than the model's max_length \(12 tokens\)"
    with pytest.warns(UserWarning, match=note):
        dataset = make_classification_dataset(
            texts, labels, source_tokenizer, max_length=12, batch_size=4
        )
    batches = _epoch(dataset)
    assert dataset.cardinality().numpy() == 3
    assert [ids.shape for ids, _ in batches] == [(4, 12), (4, 12), (2, 12)]
    ids = np.concatenate([ids for ids, _ in batches])
    np.testing.assert_array_equal(np.concatenate([y for _, y in batches]), labels)
    assert batches[0][1].dtype == np.int32 and ids.dtype == np.int32
    for row, tokens in zip(ids, _ids(source_tokenizer, texts)):
        kept = tokens[:12]
        assert row.tolist() == kept + [PAD_ID] * (12 - len(kept))
    scores = make_classification_dataset(
        texts, np.linspace(-4, 4, 10), source_tokenizer, 32, 10
    )
    _, y = next(iter(scores))
    assert y.dtype == "float32" and np.allclose(y.numpy(), np.linspace(-4, 4, 10))
    with pytest.raises(ValueError, match="one label per text"):
        make_classification_dataset(texts, labels[:9], source_tokenizer, 12, 4)


# Language modelling.


def test_language_model_windows_shift_by_one(source_tokenizer):
    texts = english_sentences(30)
    length = 8
    dataset = make_language_model_dataset(
        texts, source_tokenizer, sequence_length=length, batch_size=4
    )
    batches = _epoch(dataset)
    assert dataset.cardinality().numpy() == len(batches)
    inputs = np.concatenate([x for x, _ in batches])
    labels = np.concatenate([y for _, y in batches])
    stream = [i for row in _ids(source_tokenizer, texts) for i in row + [END_ID]]
    assert inputs.shape == labels.shape == ((len(stream) - 1) // length, length)
    np.testing.assert_array_equal(inputs[:, 1:], labels[:, :-1])
    # Windows tile the stream: inputs are consecutive chunks, and each
    # window's last label is the next window's first input.
    np.testing.assert_array_equal(inputs.reshape(-1), stream[: inputs.size])
    np.testing.assert_array_equal(labels[:-1, -1], inputs[1:, 0])
    assert inputs.dtype == labels.dtype == np.int32


def test_language_model_needs_enough_tokens(source_tokenizer):
    with pytest.raises(ValueError, match="sequence_length"):
        make_language_model_dataset(["a cat."], source_tokenizer, 64, 2)


# Masked language modelling.


def test_masked_language_model_labels(source_tokenizer):
    # Four-clause sentences: about 20 tokens each, so that ceil(0.15 n)
    # stays close to 0.15 n.
    texts = [s for s in english_sentences() if s.count(" and ") == 3]
    max_length = 32
    originals = [row[:max_length] for row in _ids(source_tokenizer, texts)]
    dataset = make_masked_language_model_dataset(
        texts, source_tokenizer, max_length=max_length, batch_size=16
    )
    batches = _epoch(dataset)
    assert dataset.cardinality().numpy() == len(batches)
    inputs = np.concatenate([x for x, _ in batches])
    labels = np.concatenate([y for _, y in batches])
    assert inputs.shape == labels.shape == (len(texts), max_length)
    assert inputs.dtype == labels.dtype == np.int32
    original = np.zeros_like(inputs)
    for row, ids in enumerate(originals):
        original[row, : len(ids)] = ids
    selected = labels != PAD_ID
    # Labels hold the original ids exactly at the selected positions.
    np.testing.assert_array_equal(labels[selected], original[selected])
    np.testing.assert_array_equal(inputs[~selected], original[~selected])
    real = original != PAD_ID
    assert not (selected & ~real).any()
    assert (inputs[real] != PAD_ID).all()
    # ceil(0.15 n) tokens per text, about 0.15 overall.
    lengths = real.sum(axis=1)
    assert selected.sum() == sum(math.ceil(0.15 * n) for n in lengths)
    assert abs(selected.sum() / real.sum() - 0.15) < 0.02
    # About 80% of the selected tokens read [MASK].
    masked_share = (inputs[selected] == MASK_ID).mean()
    assert 0.65 < masked_share < 0.95


def test_masks_follow_the_seed_and_the_epoch(source_tokenizer):
    """Evaluation masks repeat on every pass and from a new dataset; a
    shuffled dataset masks anew each epoch and replays an epoch's masks."""
    import tensorflow as tf

    texts = [s for s in english_sentences() if s.count(" and ") == 3][:48]

    def masks(**options):
        dataset = make_masked_language_model_dataset(
            texts, source_tokenizer, max_length=32, batch_size=16, **options
        )
        return dataset, lambda: sorted(
            tuple(row) for _, y in _epoch(dataset) for row in y.tolist()
        )

    _, first = masks(seed=3)
    evaluation, again = masks(seed=3)
    assert first() == again() == again()
    _, other_seed = masks(seed=4)
    assert other_seed() != first()
    epoch = tf.Variable(0, dtype="int64")
    _, shuffled = masks(seed=3, shuffle=True, epoch=epoch)
    epoch_0 = shuffled()
    epoch.assign(1)
    epoch_1 = shuffled()
    assert epoch_1 != epoch_0
    epoch.assign(0)
    assert shuffled() == epoch_0
    # Without an epoch variable, each pass is a new epoch.
    _, passes = masks(seed=3, shuffle=True)
    assert passes() != passes()
