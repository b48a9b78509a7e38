"""Fuzzing the text pipeline and the served signatures with hypothesis.

Random Unicode (every category but lone surrogates), control characters,
invalid UTF-8 bytes and very long inputs go through the tokenizer, the
`tf.data` pipelines, detokenization and the `serving_default` signatures of
an exported translator and classifier. The properties are the contracts
users rely on: no exception, one output per input, ids inside the
vocabulary with padding only at the end, valid UTF-8 out, bounded lengths,
and the graph detokenizer agreeing with the Python one.

Every test runs a bounded number of examples with no deadline, so the file
stays under a minute on two cores.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_seq import text
from tests.reliability.conftest import (
    BEAM_WIDTH,
    CLASS_NAMES,
    MAX_NEW_TOKENS,
    VOCABULARY,
    WORDS,
    requires_tensorflow,
)

pytestmark = requires_tensorflow()

# Building a `tf.data` pipeline costs about a second on two busy cores, so
# the pipeline tests take fewer examples of larger batches.
PIPELINE = settings(max_examples=12, deadline=None)
FEW = settings(max_examples=25, deadline=None)
MORE = settings(max_examples=40, deadline=None)

# Text of every kind a user or a client may send.
unicode_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
control_text = st.text(
    st.characters(min_codepoint=0, max_codepoint=0x9F).filter(
        lambda c: not c.isprintable()
    ),
    max_size=20,
)
# Characters that tokenize to nothing or to [UNK]: spaces of every kind,
# zero-width and format characters, a byte-order mark.
invisible_text = st.text(
    st.characters(categories=("Cc", "Cf", "Zs", "Zl", "Zp")), max_size=6
)
known_words = st.lists(st.sampled_from(WORDS + ["."]), max_size=12).map(" ".join)
long_text = st.builds(
    lambda word, count: (word + " ") * count,
    st.sampled_from(WORDS + ["ß", "☃", "x"]),
    st.integers(500, 3000),
)
any_text = st.one_of(unicode_text, control_text, invisible_text, known_words, long_text)
# What reaches a served signature: bytes, valid UTF-8 or not.
any_bytes = st.one_of(any_text.map(lambda s: s.encode("utf-8")), st.binary(max_size=60))


def _batches(dataset):
    return [
        (
            {k: v.numpy() for k, v in x.items()} if isinstance(x, dict) else x.numpy(),
            y.numpy(),
        )
        for x, y in dataset
    ]


def _rows(ids):
    """Token id rows as lists, from a ragged tensor or the eager lists."""
    return ids.to_list() if hasattr(ids, "to_list") else [list(r) for r in ids]


def _padding_only_at_the_end(ids):
    """True when no real token follows a 0 in any row."""
    real = ids != text.PAD_ID
    return bool(np.all(real[:, 1:] <= real[:, :-1]))


@FEW
@given(texts=st.lists(any_text, min_size=1, max_size=6))
def test_tokenizer_maps_any_text_into_the_vocabulary(tokenizer, texts):
    import tensorflow as tf

    rows = _rows(tokenizer(tf.constant(texts)))
    assert len(rows) == len(texts)
    flat = np.array([i for row in rows for i in row], "int64")
    assert np.all((flat > text.PAD_ID) & (flat < len(VOCABULARY)))


@PIPELINE
@given(
    texts=st.lists(any_text, min_size=1, max_size=10),
    max_length=st.integers(1, 12),
    batch_size=st.integers(1, 4),
)
def test_classification_batches_keep_every_text_in_range(
    tokenizer, texts, max_length, batch_size
):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Truncation warnings are expected.
        dataset = text.make_classification_dataset(
            texts, list(range(len(texts))), tokenizer, max_length, batch_size
        )
    batches = _batches(dataset)
    ids = np.concatenate([x for x, _ in batches])
    labels = np.concatenate([y for _, y in batches])
    assert ids.shape == (len(texts), max_length) and ids.dtype == np.int32
    assert labels.tolist() == list(range(len(texts)))
    assert np.all((ids >= 0) & (ids < len(VOCABULARY)))
    assert _padding_only_at_the_end(ids)


@PIPELINE
@given(
    pairs=st.lists(st.tuples(any_text, any_text), min_size=1, max_size=10),
    max_length=st.integers(2, 12),
)
def test_translation_batches_are_shifted_teacher_forcing(tokenizer, pairs, max_length):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset = text.make_translation_dataset(
            pairs, tokenizer, tokenizer, max_length, batch_size=2
        )
    count = 0
    for features, labels in _batches(dataset):
        source = features["encoder_token_ids"]
        decoder = features["decoder_token_ids"]
        count += len(labels)
        assert source.shape[1] == decoder.shape[1] == labels.shape[1] <= max_length
        assert np.all(decoder[:, 0] == text.START_ID)
        # Each target row ends with exactly one [END], and the decoder reads
        # the labels before [END] one step late (Sec. 7.5).
        assert np.all(np.sum(labels == text.END_ID, axis=1) == 1)
        fed = (labels != text.PAD_ID) & (labels != text.END_ID)
        assert np.all(decoder[:, 1:][fed[:, :-1]] == labels[:, :-1][fed[:, :-1]])
        for ids in (source, decoder, labels):
            assert np.all((ids >= 0) & (ids < len(VOCABULARY)))
            assert _padding_only_at_the_end(ids)
    assert count == len(pairs)


class _VocabularyOnly:
    """All that detokenization reads from a tokenizer."""

    def __init__(self, tokens):
        self.tokens = tokens

    def get_vocabulary(self):
        return self.tokens


# Tokens WordPiece may hold: no whitespace, some glued on with `##`.
token = st.text(
    st.characters(exclude_categories=("Cs", "Zs", "Zl", "Zp", "Cc")),
    min_size=1,
    max_size=4,
).filter(lambda t: not any(c.isspace() for c in t))
punctuation_tokens = st.sampled_from(list(".,!?;:%)]}…([{¿¡„$'’-/\"") + ["s", "t"])


@MORE
@given(
    extra=st.lists(
        st.one_of(token, punctuation_tokens, token.map(lambda t: "##" + t)),
        min_size=1,
        max_size=20,
        unique=True,
    ),
    data=st.data(),
)
def test_graph_detokenizer_agrees_with_python(extra, data):
    """Serving detokenizes with RE2, the CLI with Python `re`: same text."""
    tokens = list(dict.fromkeys(list(text.RESERVED_TOKENS) + extra))
    rows = data.draw(
        st.lists(
            st.lists(st.integers(0, len(tokens) - 1), max_size=10),
            min_size=1,
            max_size=4,
        )
    )
    width = max(len(row) for row in rows)
    ids = np.array([row + [0] * (width - len(row)) for row in rows], "int32")
    ids = ids.reshape(len(rows), width)
    vocabulary = _VocabularyOnly(tokens)
    expected = text.detokenize(vocabulary, ids)
    served = [s.decode("utf-8") for s in text.detokenize_graph(vocabulary, ids).numpy()]
    assert served == expected


@MORE
@given(tokens=st.lists(token, max_size=30, unique=True))
def test_vocabulary_files_round_trip(tmp_path_factory, tokens):
    tokens = list(text.RESERVED_TOKENS) + [
        t for t in tokens if t not in text.RESERVED_TOKENS
    ]
    path = tmp_path_factory.mktemp("vocabulary") / "vocabulary.txt"
    text.save_vocabulary(tokens, path)
    assert text.load_vocabulary(path, expected_size=len(tokens)) == tokens


def _max_characters(tokens):
    """The longest text `tokens` new tokens can detokenize to."""
    return tokens * (max(len(t) for t in VOCABULARY) + 1)


@MORE
@given(sentences=st.lists(any_bytes, max_size=6))
def test_served_translator_answers_every_batch(served_translator, tokenizer, sentences):
    import tensorflow as tf

    signatures = served_translator[1].signatures
    batch = tf.constant(sentences, tf.string, shape=[len(sentences)])
    translations = signatures["serving_default"](sentences=batch)["translations"]
    assert translations.shape == (len(sentences),)
    # The graph replaces invalid UTF-8 by U+FFFD before tokenizing.
    cleaned = [s.decode("utf-8", errors="replace") for s in sentences] or [""]
    lengths = [len(row) for row in _rows(tokenizer(tf.constant(cleaned)))]
    for length, translation in zip(lengths, translations.numpy()):
        decoded = translation.decode("utf-8")  # Valid UTF-8, whatever came in.
        assert len(decoded) <= _max_characters(MAX_NEW_TOKENS)
        if length == 0:  # Nothing to translate: an empty answer.
            assert decoded == ""

    beams = signatures["beam_search"](sentences=batch)
    assert beams["translations"].shape == (len(sentences), BEAM_WIDTH)
    scores = beams["scores"].numpy()
    assert scores.shape == (len(sentences), BEAM_WIDTH)
    assert np.all(np.isfinite(scores))
    assert np.all(np.diff(scores, axis=1) <= 1e-6)  # Best first.


@FEW
@given(texts=st.lists(any_bytes, max_size=6))
def test_served_classifier_answers_every_batch(served_classifier, texts):
    import tensorflow as tf

    signature = served_classifier[1].signatures["serving_default"]
    out = signature(texts=tf.constant(texts, tf.string, shape=[len(texts)]))
    probabilities = out["probabilities"].numpy()
    assert probabilities.shape == (len(texts), len(CLASS_NAMES))
    assert np.all(np.isfinite(probabilities))
    np.testing.assert_allclose(probabilities.sum(axis=-1), 1.0, atol=1e-5)
    labels = [label.decode("utf-8") for label in out["label"].numpy()]
    assert labels == [CLASS_NAMES[i] for i in probabilities.argmax(axis=-1)]
    assert out["label_id"].numpy().tolist() == probabilities.argmax(axis=-1).tolist()


def test_sentences_without_tokens_get_empty_translations(served_translator):
    """Control, format and zero-width characters tokenize to nothing."""
    import tensorflow as tf

    blank = ["", "   ", "\x00", "\x1c", "\x85", "\u200b", "\ufeff", " \x01\t"]
    signatures = served_translator[1].signatures
    batch = tf.constant(blank + ["w1 w2."])
    out = signatures["serving_default"](sentences=batch)["translations"].numpy()
    assert out[:-1].tolist() == [b""] * len(blank)
    assert out[-1] != b""  # The model never stops early (see conftest).
    beams = signatures["beam_search"](sentences=batch)["translations"].numpy()
    assert beams[:-1].tolist() == [[b""] * BEAM_WIDTH] * len(blank)


@pytest.mark.parametrize("length", [0, 1, 10_000])
def test_served_translator_on_extreme_lengths(served_translator, length):
    """Empty, one-character and 10,000-word sentences in one batch."""
    import tensorflow as tf

    sentence = " ".join(["w1"] * length)
    signature = served_translator[1].signatures["serving_default"]
    out = signature(sentences=tf.constant([sentence, "w2 w3."]))["translations"]
    assert out.shape == (2,)
    if length == 0:
        assert out.numpy()[0] == b""
