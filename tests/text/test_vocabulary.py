"""Tests for keras_seq.text.vocabulary: training, saving, strict loading."""

import re

import pytest

from keras_seq.text import (
    END_ID,
    MASK_ID,
    PAD_ID,
    RESERVED_TOKENS,
    START_ID,
    UNK_ID,
    load_vocabulary,
    save_vocabulary,
    train_wordpiece_vocabulary,
)
from tests.text.conftest import english_sentences

# Training.


def test_reserved_ids_are_fixed():
    assert RESERVED_TOKENS == ("[PAD]", "[UNK]", "[START]", "[END]", "[MASK]")
    assert (PAD_ID, UNK_ID, START_ID, END_ID, MASK_ID) == (0, 1, 2, 3, 4)


def test_vocabulary_has_reserved_tokens_characters_and_frequent_words():
    texts = english_sentences()
    vocabulary = train_wordpiece_vocabulary(texts, 400, lowercase=True)
    assert tuple(vocabulary[:5]) == RESERVED_TOKENS
    assert len(vocabulary) == len(set(vocabulary)) <= 400
    # Every word of the corpus occurs at least 10 times, so all are learned
    # whole, lowercased; every character is there as a fallback.
    for word in ("the", "cat", "neighbour", "visits", "and", "."):
        assert word in vocabulary
    assert "The" not in vocabulary
    assert set("".join(texts).lower()) - {" "} <= set(vocabulary)
    # Most frequent subwords come first after the single characters.
    assert vocabulary.index("the") < vocabulary.index("neighbour")


def test_vocabulary_size_is_an_upper_bound_that_is_nearly_reached():
    vocabulary = train_wordpiece_vocabulary(english_sentences(), 60)
    assert tuple(vocabulary[:5]) == RESERVED_TOKENS
    assert 50 <= len(vocabulary) <= 60


def test_unreachable_size_gives_everything_above_the_floor():
    texts = english_sentences()
    large = train_wordpiece_vocabulary(texts, 5_000)
    larger = train_wordpiece_vocabulary(texts, 50_000)
    assert large == larger
    assert len(large) < 400


def test_min_frequency_and_lowercase():
    texts = ["Zebras graze."] * 3 + english_sentences()
    lowercased = {"lowercase": True}
    assert "zebras" not in train_wordpiece_vocabulary(texts, 400, **lowercased)
    rare = train_wordpiece_vocabulary(texts, 400, min_frequency=3, **lowercased)
    assert "zebras" in rare
    cased = train_wordpiece_vocabulary(texts, 400)  # Case is kept by default.
    assert "The" in cased and "the" in cased


@pytest.mark.parametrize(
    "texts, size, error",
    [
        ("one string", 100, TypeError),
        ([], 100, ValueError),
        (["", " \n"], 100, ValueError),
        (["fine", 3], 100, TypeError),
        (["fine"], 5, ValueError),
        (["fine"], 10.0, ValueError),
    ],
)
def test_training_refuses_bad_arguments(texts, size, error):
    with pytest.raises(error):
        train_wordpiece_vocabulary(texts, size)


# Saving and loading.


def test_save_load_round_trip(tmp_path):
    vocabulary = list(RESERVED_TOKENS) + ["straße", "über", "##ß", "é", "?"]
    path = tmp_path / "nested" / "vocabulary.txt"
    save_vocabulary(vocabulary, path)
    assert path.read_bytes() == ("\n".join(vocabulary) + "\n").encode("utf-8")
    assert load_vocabulary(path) == vocabulary
    assert load_vocabulary(str(path), expected_size=10) == vocabulary


def test_load_accepts_windows_line_ends(tmp_path):
    path = tmp_path / "vocabulary.txt"
    path.write_bytes(b"\r\n".join(t.encode() for t in RESERVED_TOKENS) + b"\r\n")
    assert load_vocabulary(path) == list(RESERVED_TOKENS)


def _write(path, content):
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


RESERVED_TEXT = "".join(token + "\n" for token in RESERVED_TOKENS)


@pytest.mark.parametrize(
    "content, problem",
    [
        (None, "does not exist"),
        ("", "is empty"),
        (RESERVED_TEXT + "cat\ndog\ncat\n", "duplicate tokens: 'cat' at lines 6 and 8"),
        ("[UNK]\n[PAD]\n[START]\n[END]\n[MASK]\ncat\n", "must start with"),
        ("[PAD]\n[UNK]\n[START]\n[END]\ncat\n", "must start with"),
        (RESERVED_TEXT.encode() + b"caf\xe9\n", "not valid UTF-8"),
        (RESERVED_TEXT + "cat\n\ndog\n", "empty token at line 7"),
    ],
    ids=["missing", "empty", "duplicates", "order", "no-mask", "bytes", "blank"],
)
def test_load_refuses_bad_files(tmp_path, content, problem):
    path = tmp_path / "vocabulary.txt"
    if content is not None:
        _write(path, content)
    with pytest.raises(ValueError, match=re.escape(problem)) as info:
        load_vocabulary(path)
    assert str(path) in str(info.value)


def test_load_refuses_a_size_the_model_does_not_expect(tmp_path):
    path = _write(tmp_path / "vocabulary.txt", RESERVED_TEXT + "cat\n")
    message = f"vocabulary {path} has 6 tokens; the model expects 8000"
    with pytest.raises(ValueError, match=re.escape(message)):
        load_vocabulary(path, expected_size=8000)


def test_undecodable_bytes_are_located(tmp_path):
    path = _write(tmp_path / "v.txt", RESERVED_TEXT.encode() + b"ok\nbad\xff\n")
    with pytest.raises(ValueError, match=r"b'\\xff' at byte 39 \(line 7\)"):
        load_vocabulary(path)


def test_save_refuses_what_load_would_refuse(tmp_path):
    path = tmp_path / "vocabulary.txt"
    with pytest.raises(ValueError, match="duplicate"):
        save_vocabulary(list(RESERVED_TOKENS) + ["a", "a"], path)
    with pytest.raises(ValueError, match="must start with"):
        save_vocabulary(["a"] + list(RESERVED_TOKENS), path)
    with pytest.raises(ValueError, match="token 5"):
        save_vocabulary(list(RESERVED_TOKENS) + ["two words"], path)
    assert not path.exists()
