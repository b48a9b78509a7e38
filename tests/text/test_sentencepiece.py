"""SentencePiece tokenizers: the same ids eagerly, in `tf.function`, in
`tf.data` and in a SavedModel; files that round-trip; refusals in one line."""

import json

import numpy as np
import pytest
import tensorflow as tf

from keras_seq.text import (
    END_ID,
    PAD_ID,
    RESERVED_TOKENS,
    UNK_ID,
    TranslationPreprocessor,
    detokenize,
    detokenize_graph,
    make_tokenizer,
    tokenize_graph,
)
from keras_seq.text.portable_tokenizer import PortableTokenizer
from keras_seq.text.sentencepiece_tokenizer import (
    SentencePieceTokenizer,
    check_model_proto,
    make_sentencepiece_tokenizer,
    model_vocabulary,
    train_sentencepiece,
)
from tests.text.conftest import english_sentences, to_german

sentencepiece = pytest.importorskip("sentencepiece")

ODD = ["", "  ", "Grüße, café!", "日本語", "a\u00a0b\tc\x00d", ">>de<< the cat", "😀"]


@pytest.fixture(scope="module")
def english():
    return english_sentences()


@pytest.fixture(scope="module")
def trained(english):
    """`(source, target)` (proto, vocabulary) pairs: unigram and BPE."""
    source = train_sentencepiece([to_german(s) for s in english], 120)
    target = train_sentencepiece(english, 100, model_type="bpe")
    return source, target


@pytest.fixture(scope="module")
def preprocessor(trained):
    (source_proto, source), (target_proto, target) = trained
    return TranslationPreprocessor(
        SentencePieceTokenizer(source_proto, source),
        SentencePieceTokenizer(target_proto, target),
        max_length=16,
    )


def test_trained_vocabulary_is_reserved_tokens_then_the_models_pieces(trained):
    proto, vocabulary = trained[1]
    assert tuple(vocabulary[:5]) == RESERVED_TOKENS
    assert len(vocabulary) == 100
    processor = sentencepiece.SentencePieceProcessor(model_proto=proto)
    assert vocabulary[5:] == [processor.id_to_piece(i) for i in range(1, 96)]
    assert model_vocabulary(proto) == vocabulary


def test_ids_are_the_pieces_of_the_python_package(trained, english):
    proto, vocabulary = trained[0]
    tokenizer = SentencePieceTokenizer(proto, vocabulary)
    processor = sentencepiece.SentencePieceProcessor(model_proto=proto)
    texts = english[:50] + ODD
    ids = tokenize_graph(tokenizer, tf.constant(texts)).to_list()
    index = {token: i for i, token in enumerate(vocabulary)}
    for text, row in zip(texts, ids):
        pieces = processor.encode(text, out_type=str)
        assert row == [index.get(p, UNK_ID) for p in pieces]


def test_graph_and_eager_and_tf_data_agree(preprocessor, english):
    texts = english + ODD
    eager = preprocessor.tokenize_source(tf.constant(texts)).to_list()
    graph = preprocessor._tokenize_sources(tf.constant(texts)).to_list()
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(7)
    batches = dataset.map(preprocessor.tokenize_target)
    piped = [row for batch in batches for row in batch.to_list()]
    assert eager == graph
    assert piped == preprocessor.tokenize_target(tf.constant(texts)).to_list()


def test_a_single_string_gives_one_row_as_keras_hub_tokenizers_do(preprocessor):
    tokenizer = preprocessor.source_tokenizer
    texts = ["Grüße, café!", "", "der Hund"]
    rows = tokenizer(tf.constant(texts)).to_list()
    for text, row in zip(texts, rows):
        assert tokenizer.tokenize(text).numpy().tolist() == row
        graph = tf.function(lambda t: tokenizer(t))(tf.constant(text))
        assert graph.shape.rank == 1 and graph.numpy().tolist() == row


def test_detokenize_is_the_pieces_joined_and_skips_reserved_ids(preprocessor):
    tokenizer = preprocessor.target_tokenizer
    ids = tokenizer(tf.constant(["the cat sees a dog."])).to_list()[0]
    row = [2, UNK_ID, *ids[:3], 4, *ids[3:], END_ID, *ids[:2], PAD_ID]
    expected = "the cat sees a dog."
    assert detokenize(tokenizer, [row]) == [expected]
    graph = detokenize_graph(tokenizer, tf.constant([row]))
    assert graph.numpy().tolist() == [expected.encode()]


def test_a_piece_spelling_a_reserved_token_is_unknown_not_padding():
    proto, vocabulary = train_sentencepiece(["a b c"] * 20, 9)
    tokenizer = SentencePieceTokenizer(proto, vocabulary)
    # The model lacks "[", "P", ...: the run of unknown characters is one
    # piece "[PAD]", which must not become id 0.
    assert tokenizer.pieces(tf.constant(["a [PAD]"])).to_list()[0][-1] == b"[PAD]"
    assert tokenizer(tf.constant(["a [PAD]"])).to_list() == [[5, 6, 5, UNK_ID]]


def test_save_and_load_round_trip(preprocessor, english, tmp_path):
    preprocessor.save(tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {
        "source_vocabulary.txt",
        "target_vocabulary.txt",
        "preprocessor.json",
        "source.spm",
        "target.spm",
    }
    settings = json.loads((tmp_path / "preprocessor.json").read_text())
    assert settings["tokenizer"] == "sentencepiece"
    assert "source_end" not in settings  # only a Marian source ends in [END]
    loaded = TranslationPreprocessor.load(tmp_path)
    texts = tf.constant(english[:40] + ODD)
    assert np.array_equal(
        loaded.generate_preprocess(texts).numpy(),
        preprocessor.generate_preprocess(texts).numpy(),
    )
    assert loaded.get_config() == preprocessor.get_config()
    revived = TranslationPreprocessor.from_config(preprocessor.get_config())
    assert revived.settings() == preprocessor.settings()


def test_a_shared_vocabulary_keeps_two_models(trained, tmp_path):
    (source_proto, vocabulary), (target_proto, _) = trained
    shared = TranslationPreprocessor(
        SentencePieceTokenizer(source_proto, vocabulary),
        SentencePieceTokenizer(target_proto, vocabulary),
        max_length=16,
    )
    assert shared.shared and shared.get_config()["target_vocabulary"] is None
    shared.save(tmp_path)
    loaded = TranslationPreprocessor.load(tmp_path)
    assert loaded.target_tokenizer.proto == target_proto
    assert loaded.source_tokenizer.proto == source_proto


def test_a_directory_without_the_field_loads_as_wordpiece(tmp_path):
    vocabulary = list(RESERVED_TOKENS) + ["hi", "!"]
    TranslationPreprocessor(make_tokenizer(vocabulary), max_length=8).save(tmp_path)
    settings = json.loads((tmp_path / "preprocessor.json").read_text())
    assert "tokenizer" not in settings and "source_end" not in settings
    loaded = TranslationPreprocessor.load(tmp_path)
    assert loaded.tokenizer_kind == "wordpiece"
    assert loaded.generate_preprocess(tf.constant(["hi!"])).numpy()[0, :2].tolist() == [
        5,
        6,
    ]


def test_the_portable_tokenizer_reads_a_saved_directory(
    preprocessor, english, tmp_path
):
    preprocessor.save(tmp_path)
    texts = english + ODD
    for side in ("source", "target"):
        portable = PortableTokenizer.from_directory(tmp_path, side)
        ours = getattr(preprocessor, f"tokenize_{side}")(tf.constant(texts)).to_list()
        assert portable.tokenize(texts) == ours
    ids = preprocessor.generate_preprocess(tf.constant(texts)).numpy()
    rows, cut = PortableTokenizer.from_directory(tmp_path).encode(texts)
    assert rows == [[int(i) for i in row if i] for row in ids]
    assert cut == preprocessor.truncated(tf.constant(texts)).numpy().tolist()


def test_a_source_end_row_cut_keeps_its_end(trained, english):
    proto, vocabulary = trained[0]
    tokenizer = SentencePieceTokenizer(proto, vocabulary)
    preprocessor = TranslationPreprocessor(tokenizer, max_length=8, source_end=True)
    texts = english[:30] + ["", "  "]
    full = tokenizer(tf.constant(texts)).to_list()
    ids = preprocessor.generate_preprocess(tf.constant(texts)).numpy()
    for row, pieces in zip(ids, full):
        row = [int(i) for i in row if i != PAD_ID]
        expected = pieces[:7] + [END_ID] if pieces else []
        assert row == expected


def test_sampling_draws_other_segmentations_of_the_same_text(trained, english):
    proto, vocabulary = trained[0]
    tokenizer = SentencePieceTokenizer(proto, vocabulary)
    sample = tokenizer.sampling(0.5)
    texts = tf.constant([to_german(english[3])] * 32)
    rows = {tuple(row) for row in sample(texts).to_list()}
    assert len(rows) > 1
    best = tuple(tokenizer(texts[:1]).to_list()[0])
    joined = {detokenize(tokenizer, [list(row)])[0] for row in rows}
    assert joined == {detokenize(tokenizer, [list(best)])[0]}  # same text
    with pytest.raises(ValueError, match="alpha"):
        tokenizer.sampling(0.0)


@pytest.mark.parametrize(
    "proto, message",
    [(b"", "empty bytes"), (b"junk", "cannot be read|can be read"), ("x", "str")],
)
def test_a_bad_model_is_refused_in_one_line(proto, message):
    with pytest.raises(ValueError, match=message) as info:
        check_model_proto(proto)
    assert "\n" not in str(info.value)


def test_refusals(trained, tmp_path):
    proto, vocabulary = trained[0]
    with pytest.raises(ValueError, match="reserved tokens"):
        SentencePieceTokenizer(proto, vocabulary[5:])
    with pytest.raises(ValueError, match="one kind"):
        TranslationPreprocessor(
            SentencePieceTokenizer(proto, vocabulary), make_tokenizer(vocabulary)
        )
    with pytest.raises(ValueError, match=r"does not exist"):
        make_sentencepiece_tokenizer(tmp_path / "missing.spm")
    with pytest.raises(ValueError, match="'unigram' or 'bpe'"):
        train_sentencepiece(["a b"], 20, model_type="word")
    with pytest.raises(ValueError, match="larger than the 5"):
        train_sentencepiece(["a b"], 5)
    preprocessor = TranslationPreprocessor(
        SentencePieceTokenizer(proto, vocabulary), max_length=8
    )
    preprocessor.save(tmp_path)
    (tmp_path / "target.spm").unlink()
    with pytest.raises(ValueError, match=r"target\.spm does not exist"):
        TranslationPreprocessor.load(tmp_path)
    config = {**preprocessor.get_config(), "tokenizer": "bytes"}
    with pytest.raises(ValueError, match="'wordpiece' or 'sentencepiece'"):
        TranslationPreprocessor.from_config(config)


def test_a_saved_module_tokenizes_as_in_process(preprocessor, english, tmp_path):
    """The tokenizer's op and table survive `tf.saved_model.save`; the
    loading process needs only TensorFlow Text's ops."""
    module = tf.Module()
    module.tokenizers = [preprocessor.source_tokenizer, preprocessor.target_tokenizer]
    module.tokenize = tf.function(
        preprocessor.generate_preprocess,
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    module.detokenize = tf.function(
        preprocessor.detokenize_graph,
        input_signature=[tf.TensorSpec([None, None], tf.int32)],
    )
    tf.saved_model.save(module, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    texts = tf.constant(english + ODD)
    ids = loaded.tokenize(texts).numpy()
    assert np.array_equal(ids, preprocessor.generate_preprocess(texts).numpy())
    assert np.array_equal(
        loaded.detokenize(tf.constant(ids)).numpy(),
        preprocessor.detokenize_graph(tf.constant(ids)).numpy(),
    )


def test_subword_sampling_keeps_batch_shapes_and_texts(preprocessor, english):
    pairs = [(to_german(s), s) for s in english]
    best = list(preprocessor.dataset(pairs, batch_size=16))
    # The sampling op takes no seed, so one draw may happen to change no
    # label; a few draws together change some.
    changed = 0
    for _ in range(5):
        changed += _sampled_changes(preprocessor, pairs, best)
        if changed:
            break
    assert changed > 0
    with pytest.raises(ValueError, match="subword_sampling"):
        preprocessor.dataset(pairs, subword_sampling=1.5)


def _sampled_changes(preprocessor, pairs, best):
    sampled = list(preprocessor.dataset(pairs, batch_size=16, subword_sampling=0.3))
    assert [b[1].shape for b in sampled] == [b[1].shape for b in best]
    changed = 0
    for (features, labels), (best_features, best_labels) in zip(sampled, best):
        assert set(features) == {"encoder_token_ids", "decoder_token_ids"}
        # The same pairs in the same order, each text the same.
        assert preprocessor.detokenize(labels) == preprocessor.detokenize(best_labels)
        source = preprocessor.source_tokenizer
        assert detokenize(source, features["encoder_token_ids"]) == detokenize(
            source, best_features["encoder_token_ids"]
        )
        assert np.array_equal(features["decoder_token_ids"][:, 0], labels[:, 0] * 0 + 2)
        changed += int(np.sum(np.any(labels.numpy() != best_labels.numpy(), axis=1)))
    return changed
