"""The imported preprocessor against `transformers.MarianTokenizer`.

Two SentencePiece models are trained here on trans-de-en (German sources,
English targets), written as a Marian directory (`source.spm`,
`target.spm`, `vocab.json` with `</s>` 0, `<unk>` 1 and `<pad>` last, some
pieces left out so that `<unk>` is met, `tokenizer_config.json`), once with
one shared vocabulary and once with separate ones; `MarianTokenizer` reads
the directory and its ids, mapped by `MarianVocabulary.zoo_id`, must equal
the preprocessor's on the whole corpus and on odd text.
"""

import io
import json
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_seq.data import load_trans_de_en
from keras_seq.text import END_ID, PAD_ID
from keras_seq.text.portable_tokenizer import PortableTokenizer
from keras_seq.text.translation_preprocessor import TranslationPreprocessor
from zoo.pretrained.tokenizer import marian_preprocessor
from zoo.pretrained.vocabulary import marian_vocabulary

# Tokenizing is TensorFlow Text's and SentencePiece's on every backend;
# the backends' stages run the model's parity (test_marian_model.py).
pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="the same text ops on every backend",
)

sentencepiece = pytest.importorskip("sentencepiece")
transformers = pytest.importorskip("transformers")

# Pieces of each model left out of the vocabulary, so that some map to <unk>.
DROPPED = 7

ODD = [
    "Schöne Grüße, café naïve Ähre Œuvre",  # accents
    "日本語のテキストと中文",  # CJK
    "emoji 😀👍🏽 and 👨‍👩‍👧 family",  # emoji, modifiers, ZWJ sequences
    "a\u00a0b\u2003c\u3000d\u2028e\u2029f",  # Unicode spaces
    "tab\tnew\nline\r\x0b\x0c end",  # ASCII controls
    "nul\x00x\x01y\x7f z\x85",  # other controls
    "zw\u200bsp\ufeffbom\u00adsoft\u200dj",  # format characters
    "   ",
    "  lead and trail  ",
    "ﬁ ① ＡＢＣ ㈱ Ⅻ",  # NFKC folds these
    ">>fr<< Hallo Welt",  # a language code
    ">>de<<",
    "Mixed >>en<< inside",
    "x" * 300,
    "Wort " * 200,  # over-long
    "\U0001f600" * 50,
]


def _train(texts, size):
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_writer=model,
        vocab_size=size,
        model_type="unigram",
        character_coverage=0.9995,
        unk_id=0,
        bos_id=-1,
        eos_id=-1,
        pad_id=-1,
        minloglevel=2,
    )
    return model.getvalue()


def _pieces(*protos):
    """`</s>` 0, `<unk>` 1, the models' pieces (a few left out), `<pad>` last."""
    pieces = ["</s>", "<unk>"]
    for proto in protos:
        processor = sentencepiece.SentencePieceProcessor(model_proto=proto)
        own = [
            processor.id_to_piece(i)
            for i in range(processor.get_piece_size())
            if not processor.is_unknown(i)
        ]
        pieces += [p for p in own[:-DROPPED] if p not in pieces]
    pieces.append("<pad>")
    return {piece: i for i, piece in enumerate(pieces)}


@pytest.fixture(scope="module")
def corpus():
    splits = load_trans_de_en()
    return splits.train + splits.validation + splits.test


@pytest.fixture(scope="module")
def models(corpus):
    source = _train([de for de, _ in corpus], 400)
    target = _train([en for _, en in corpus], 300)
    return source, target


@pytest.fixture(scope="module", params=["shared", "separate"])
def marian(request, models, tmp_path_factory):
    """`(directory, MarianTokenizer, source MarianVocabulary, target's)`."""
    directory = tmp_path_factory.mktemp(request.param)
    source, target = models
    (directory / "source.spm").write_bytes(source)
    (directory / "target.spm").write_bytes(target)
    separate = request.param == "separate"
    vocab = _pieces(source) if separate else _pieces(source, target)
    (directory / "vocab.json").write_text(json.dumps(vocab))
    target_vocab = None
    if separate:
        target_vocab = _pieces(target)
        (directory / "target_vocab.json").write_text(json.dumps(target_vocab))
    config = {"separate_vocabs": separate, "source_lang": "de", "target_lang": "en"}
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Recommended: pip install sacremoses."
        tokenizer = transformers.MarianTokenizer.from_pretrained(directory)
    vocabularies = (
        marian_vocabulary(vocab),
        marian_vocabulary(target_vocab, "target_vocab.json") if separate else None,
    )
    return directory, tokenizer, *vocabularies


def _preprocessor(marian, max_length=512):
    directory, _, source, target = marian
    return marian_preprocessor(directory, source, target, max_length=max_length)


def _labels(tokenizer, texts):
    """Marian's target ids (given targets alone, it names them input_ids)."""
    return tokenizer(text_target=texts)["input_ids"]


def _mapped(rows, vocabulary):
    return [[vocabulary.zoo_id(i) for i in row] for row in rows]


def _source_ids(preprocessor, texts):
    return preprocessor.tokenize_source(tf.constant(texts)).to_list()


def test_source_ids_equal_marians_on_the_whole_corpus(marian, corpus):
    _, tokenizer, source, _ = marian
    preprocessor = _preprocessor(marian)
    texts = [de for de, _ in corpus]
    expected = _mapped(tokenizer(texts)["input_ids"], source)
    assert _source_ids(preprocessor, texts) == expected  # eagerly
    graph = preprocessor._tokenize_sources(tf.constant(texts)).to_list()
    assert graph == expected  # a tf.function, as every pipeline runs it
    assert any(1 in row for row in expected)  # <unk> was met


def test_target_ids_equal_marians_on_the_whole_corpus(marian, corpus):
    _, tokenizer, source, target = marian
    preprocessor = _preprocessor(marian)
    texts = [en for _, en in corpus]
    labels = _labels(tokenizer, texts)
    expected = _mapped(labels, target or source)
    ours = preprocessor.tokenize_target(tf.constant(texts)).to_list()
    # The training pipeline packs a target as [START] ids [END]; Marian's
    # labels are ids </s>.
    assert [row + [END_ID] for row in ours] == expected


def test_training_labels_are_marians_labels(marian, corpus):
    _, tokenizer, source, target = marian
    preprocessor = _preprocessor(marian)
    pairs = corpus[:64]
    dataset = preprocessor.dataset(pairs, batch_size=64)
    sources = tokenizer([de for de, _ in pairs])["input_ids"]
    labels = _labels(tokenizer, [en for _, en in pairs])
    expected = {
        tuple(_mapped([s], source)[0]): _mapped([t], target or source)[0]
        for s, t in zip(sources, labels)
    }
    seen = 0
    for features, batch_labels in dataset:
        for encoder, label in zip(features["encoder_token_ids"], batch_labels):
            encoder = [int(i) for i in encoder if i != PAD_ID]
            label = [int(i) for i in label if i != PAD_ID]
            assert expected[tuple(encoder)] == label
            seen += 1
    assert seen == len(pairs)


def test_odd_text_gives_marians_ids(marian):
    _, tokenizer, source, target = marian
    preprocessor = _preprocessor(marian)
    texts = [t for t in ODD if t.strip()]
    expected = _mapped(tokenizer(texts)["input_ids"], source)
    assert _source_ids(preprocessor, texts) == expected
    labels = _mapped(_labels(tokenizer, texts), target or source)
    ours = preprocessor.tokenize_target(tf.constant(texts)).to_list()
    assert [row + [END_ID] for row in ours] == labels


def test_a_blank_source_gives_no_ids_where_marian_gives_its_end(marian):
    _, tokenizer, _, _ = marian
    preprocessor = _preprocessor(marian)
    blank = ["", "   ", "\u200b"]
    assert tokenizer(blank)["input_ids"] == [[0]] * 3  # </s> alone
    assert _source_ids(preprocessor, blank) == [[]] * 3


@pytest.mark.parametrize("limit", [2, 8, 24])
def test_over_long_sources_are_cut_as_marian_truncates(marian, corpus, limit):
    _, tokenizer, source, _ = marian
    preprocessor = _preprocessor(marian, max_length=limit)
    texts = [de for de, _ in corpus[:300]] + [t for t in ODD if t.strip()]
    expected = tokenizer(texts, truncation=True, max_length=limit)["input_ids"]
    ids = preprocessor.generate_preprocess(tf.constant(texts)).numpy()
    ours = [[int(i) for i in row if i != PAD_ID] for row in ids]
    assert ours == _mapped(expected, source)
    assert max(len(row) for row in ours) == limit
    cut = preprocessor.truncated(tf.constant(texts)).numpy()
    assert list(cut) == [len(t) > limit for t in tokenizer(texts)["input_ids"]]


def test_detokenized_text_is_marians_decode(marian, corpus):
    _, tokenizer, source, target = marian
    preprocessor = _preprocessor(marian)
    texts = [en for _, en in corpus[::4]] + [t for t in ODD if t.strip()]
    labels = _labels(tokenizer, texts)
    expected = [tokenizer.decode(row, skip_special_tokens=True) for row in labels]
    rows = _mapped(labels, target or source)
    assert preprocessor.detokenize(rows) == expected
    width = max(len(row) for row in rows)
    padded = np.array([row + [PAD_ID] * (width - len(row)) for row in rows])
    graph = preprocessor.detokenize_graph(tf.constant(padded)).numpy()
    assert [t.decode("utf-8") for t in graph] == expected


def test_the_portable_tokenizer_gives_the_same_ids(marian, corpus, tmp_path):
    preprocessor = _preprocessor(marian, max_length=24)
    preprocessor.save(tmp_path)
    texts = [de for de, _ in corpus] + ODD
    portable = PortableTokenizer.from_directory(tmp_path, "source")
    assert portable.tokenize(texts) == _source_ids(preprocessor, texts)
    rows, cut = portable.encode(texts)
    ids = preprocessor.generate_preprocess(tf.constant(texts)).numpy()
    assert rows == [[int(i) for i in row if i != PAD_ID] for row in ids]
    assert cut == list(preprocessor.truncated(tf.constant(texts)).numpy())
    english = [en for _, en in corpus] + ODD
    target = PortableTokenizer.from_directory(tmp_path, "target")
    ours = preprocessor.tokenize_target(tf.constant(english)).to_list()
    assert target.tokenize(english) == ours
    assert target.detokenize(ours) == preprocessor.detokenize(ours)


def test_the_saved_preprocessor_loads_with_its_models(marian, tmp_path):
    preprocessor = _preprocessor(marian, max_length=24)
    preprocessor.save(tmp_path)
    settings = json.loads((tmp_path / "preprocessor.json").read_text())
    assert settings["tokenizer"] == "sentencepiece"
    assert settings["source_end"] and settings["language_code"]
    loaded = TranslationPreprocessor.load(tmp_path)
    texts = [t for t in ODD if t.strip()]
    assert _source_ids(loaded, texts) == _source_ids(preprocessor, texts)
    assert loaded.shared == preprocessor.shared == (marian[3] is None)
    assert loaded.target_tokenizer.proto == preprocessor.target_tokenizer.proto


def test_a_missing_or_unreadable_model_is_refused_naming_the_file(marian, tmp_path):
    directory, _, source, target = marian
    for name in ("source.spm", "target.spm", "vocab.json"):
        (tmp_path / name).write_bytes((directory / name).read_bytes())
    (tmp_path / "target.spm").write_bytes(b"not a model")
    with pytest.raises(ValueError, match=r"target\.spm is not a SentencePiece"):
        marian_preprocessor(tmp_path, source, target, 16)
    (tmp_path / "source.spm").unlink()
    with pytest.raises(ValueError, match=r"source\.spm does not exist"):
        marian_preprocessor(tmp_path, source, target, 16)


def test_separate_vocabularies_need_the_target_vocabulary(marian, tmp_path):
    directory, _, source, _ = marian
    (tmp_path / "tokenizer_config.json").write_text('{"separate_vocabs": true}')
    with pytest.raises(ValueError, match="separate_vocabs"):
        marian_preprocessor(tmp_path, source, None, 16)
