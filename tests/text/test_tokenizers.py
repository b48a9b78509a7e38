"""Tests for keras_seq.text.tokenizers: WordPiece ids and back to text."""

import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from keras_seq.text import (
    END_ID,
    PAD_ID,
    RESERVED_TOKENS,
    START_ID,
    UNK_ID,
    clean_up_spacing,
    detokenize,
    detokenize_graph,
    make_tokenizer,
    save_vocabulary,
)
from tests.text.conftest import SIMPLE_SENTENCES, english_sentences


def _ids(tokenizer, texts):
    return [list(map(int, row)) for row in tokenizer.tokenize(texts)]


def test_make_tokenizer(source_tokenizer, english_vocabulary, tmp_path):
    assert isinstance(source_tokenizer, keras_hub.tokenizers.WordPieceTokenizer)
    assert source_tokenizer.compute_dtype == "int32"
    cat = english_vocabulary.index("cat")
    the = english_vocabulary.index("the")
    assert _ids(source_tokenizer, ["The CAT"]) == [[the, cat]]
    # Unknown characters become [UNK]; known ones spell out unknown words.
    assert _ids(source_tokenizer, ["€"]) == [[UNK_ID]]
    # A path is read with the strict loader.
    path = tmp_path / "vocabulary.txt"
    save_vocabulary(english_vocabulary, path)
    assert make_tokenizer(path).get_vocabulary() == english_vocabulary
    with pytest.raises(ValueError, match="duplicate"):
        make_tokenizer(english_vocabulary + ["cat"])


def test_ids_inside_tf_data_are_ragged_int32(source_tokenizer):
    dataset = tf.data.Dataset.from_tensor_slices(list(SIMPLE_SENTENCES)).batch(5)
    ids = next(iter(dataset.map(source_tokenizer.tokenize)))
    assert isinstance(ids, tf.RaggedTensor) and ids.dtype == tf.int32
    assert ids.to_list() == _ids(source_tokenizer, list(SIMPLE_SENTENCES))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("i don ' t know , do you ?", "i don't know, do you?"),
        ("( a )", "(a)"),
        ("play ##ing with ##in", "playing within"),
        ("3 . 5 or 10 , 000 ; 50 % more", "3.5 or 10,000; 50% more"),
        ("an e - mail and / or fax", "an e-mail and/or fax"),
        ('he said " hello " .', 'he said "hello".'),
        ("the dogs ' bones", "the dogs ' bones"),
        ("wait … what ?!", "wait… what?!"),
        ("¿ qué ? [ x ] { y } $ 5", "¿qué? [x] {y} $5"),
        ("", ""),
    ],
)
def test_clean_up_spacing(text, expected):
    assert clean_up_spacing(text) == expected


def test_round_trip_gives_the_lowercased_input(source_tokenizer):
    texts = list(SIMPLE_SENTENCES) + english_sentences(12)
    ids = _ids(source_tokenizer, texts)
    assert detokenize(source_tokenizer, ids) == [text.lower() for text in texts]
    # Packed and 0-padded rows, as decoding returns them, read the same.
    width = max(map(len, ids)) + 4
    packed = np.zeros((len(ids), width), "int32")
    for row, row_ids in enumerate(ids):
        packed[row, : len(row_ids) + 2] = [START_ID] + row_ids + [END_ID]
    assert detokenize(source_tokenizer, packed) == [text.lower() for text in texts]


def test_detokenize_stops_at_end_and_drops_pad_and_start(english_vocabulary):
    tokenizer = make_tokenizer(english_vocabulary)
    cat, dog = english_vocabulary.index("cat"), english_vocabulary.index("dog")
    rows = [
        [START_ID, cat, PAD_ID, dog, END_ID, cat, cat],
        [cat, START_ID, END_ID, dog, PAD_ID, PAD_ID, PAD_ID],
        [END_ID, cat, dog, PAD_ID, PAD_ID, PAD_ID, PAD_ID],
        [UNK_ID, dog, PAD_ID, PAD_ID, PAD_ID, PAD_ID, PAD_ID],
    ]
    assert detokenize(tokenizer, rows) == ["cat dog", "cat", "", "[UNK] dog"]
    assert detokenize(tokenizer, rows[0]) == "cat dog"
    assert detokenize(tokenizer, [[], []]) == ["", ""]
    assert detokenize(tokenizer, np.zeros((0, 3), "int32")) == []
    ragged = tf.ragged.constant([[cat, END_ID], [dog, dog]])
    assert detokenize(tokenizer, ragged) == ["cat", "dog dog"]


def test_detokenize_refuses_bad_ids(source_tokenizer):
    size = source_tokenizer.vocabulary_size()
    with pytest.raises(ValueError, match=rf"\[0, {size}\).*received id {size}"):
        detokenize(source_tokenizer, [[5, size]])
    with pytest.raises(ValueError, match="integer token ids.*float"):
        detokenize(source_tokenizer, np.ones((2, 3), "float32"))
    with pytest.raises(ValueError, match="integer token ids.*float"):
        detokenize(source_tokenizer, [[1.0, 2.0]])
    with pytest.raises(ValueError, match="rank 2"):
        detokenize(source_tokenizer, np.ones((2, 3, 4), "int32"))


def test_detokenize_graph_equals_detokenize(source_tokenizer):
    texts = list(SIMPLE_SENTENCES) + english_sentences(20) + [""]
    ids = _ids(source_tokenizer, texts)
    rng = np.random.default_rng(0)
    # Packed rows with [START], [END], tokens after [END] and padding.
    rows = [
        [START_ID] + row + [END_ID] + rng.integers(5, 50, 3).tolist() for row in ids
    ]
    ragged = tf.ragged.constant(rows, dtype=tf.int32)
    dense = ragged.to_tensor(default_value=PAD_ID)
    expected = detokenize(source_tokenizer, dense.numpy())
    assert expected[: len(SIMPLE_SENTENCES)] == [t.lower() for t in SIMPLE_SENTENCES]
    for ids_tensor in (dense, ragged, tf.cast(dense, tf.int64)):
        result = detokenize_graph(source_tokenizer, ids_tensor)
        assert result.dtype == tf.string and result.shape == (len(texts),)
        assert [text.decode("utf-8") for text in result.numpy()] == expected
    # Inside a graph, as a SavedModel signature would run it.
    graph = tf.function(
        lambda x: detokenize_graph(source_tokenizer, x),
        input_signature=[tf.TensorSpec((None, None), tf.int32)],
    )
    assert [text.decode() for text in graph(dense).numpy()] == expected
    ops = {op.type for op in graph.get_concrete_function().graph.get_operations()}
    assert not {"PyFunc", "EagerPyFunc"} & ops
    assert not any("Wordpiece" in op or "WordPiece" in op for op in ops)


def test_detokenize_graph_reads_unknown_ids_as_unk(source_tokenizer):
    size = source_tokenizer.vocabulary_size()
    the = source_tokenizer.token_to_id("the")
    result = detokenize_graph(source_tokenizer, tf.constant([[the, size, -1]]))
    assert result.numpy().tolist() == [b"the [UNK] [UNK]"]
    assert detokenize_graph(source_tokenizer, tf.constant([the])).numpy() == b"the"
    with pytest.raises(ValueError, match="integer token ids"):
        detokenize_graph(source_tokenizer, tf.ones((1, 2)))


def test_reserved_tokens_are_the_tokenizer_special_ids(source_tokenizer):
    vocabulary = source_tokenizer.get_vocabulary()
    assert tuple(vocabulary[:5]) == RESERVED_TOKENS
    assert source_tokenizer.token_to_id("[PAD]") == PAD_ID
