"""A translator with SentencePiece tokenizers exports as a self-contained
string-in, string-out SavedModel: the graph's ids equal the in-process ones,
and the models travel as assets."""

import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="SavedModel export is TensorFlow"
)

import zoo  # noqa: E402
from keras_seq import export  # noqa: E402
from keras_seq.text import TranslationPreprocessor  # noqa: E402
from keras_seq.text.sentencepiece_tokenizer import (  # noqa: E402
    SentencePieceTokenizer,
    train_sentencepiece,
)
from tests import saved_models  # noqa: E402
from tests.text.conftest import english_sentences, to_german  # noqa: E402

pytest.importorskip("sentencepiece")

ODD = ["", "Grüße, café!", "日本語", "a\u00a0b\tc\x00d", "😀 " * 40]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    english = english_sentences()
    source_proto, source = train_sentencepiece([to_german(s) for s in english], 90)
    target_proto, target = train_sentencepiece(english, 80)
    preprocessor = TranslationPreprocessor(
        SentencePieceTokenizer(source_proto, source),
        SentencePieceTokenizer(target_proto, target),
        max_length=16,
        source_end=True,
    )
    keras.utils.set_random_seed(0)
    model = zoo.build_translator(
        "tiny",
        source_vocabulary_size=len(source),
        target_vocabulary_size=len(target),
        model_dim=16,
        ff_dim=32,
    )
    root = tmp_path_factory.mktemp("served")
    path = export.export_translator(model, preprocessor, root, max_new_tokens=6)
    texts = [to_german(s) for s in english[:20]] + ODD
    return path, model, preprocessor, texts


def test_the_exported_graph_tokenizes_and_translates_as_in_process(exported):
    path, model, preprocessor, texts = exported
    keras.utils.clear_session()  # The served graph keeps its own model op.
    served = tf.saved_model.load(path)
    sentences = tf.constant(texts)
    tokenized = served.signatures["tokenize"](sentences=sentences)
    ids = preprocessor.generate_preprocess(sentences).numpy()
    assert np.array_equal(tokenized["token_ids"].numpy(), ids)
    assert tokenized["truncated"].numpy().tolist() == (
        preprocessor.truncated(sentences).numpy().tolist()
    )
    generated = model.generate(ids, 6, start_token_id=2, end_token_id=3)
    expected = preprocessor.detokenize(generated)
    expected = ["" if not row.any() else t for row, t in zip(ids, expected)]
    translations = served.signatures["serving_default"](sentences=sentences)
    assert [t.decode() for t in translations["translations"].numpy()] == expected


def test_the_models_travel_as_assets(exported):
    path, _, preprocessor, _ = exported
    assets = {p.name: p.read_bytes() for p in (pathlib.Path(path) / "assets").iterdir()}
    assert assets["source.spm"] == preprocessor.source_tokenizer.proto
    assert assets["target.spm"] == preprocessor.target_tokenizer.proto


def test_the_readme_names_the_sentencepiece_ops_a_loader_needs(exported):
    """The README lists SentencePiece's ops, not WordPiece's, and loading
    without `import tensorflow_text` fails on one of those it lists."""
    path = exported[0]
    text = saved_models.readme(path)
    ops = text.split("TensorFlow Text's ops (", 1)[1].split(")", 1)[0].split(", ")
    assert "SentencepieceOp" in ops and "SentencepieceTokenizeOp" in ops
    assert "FastWordpieceTokenizeWithOffsets" not in ops
    error = saved_models.load_without_text_ops(path)
    assert error.startswith("Op type not registered '"), error
    assert error.split("'")[1] in ops


def test_a_ctranslate2_directory_tokenizes_as_the_preprocessor(exported, tmp_path):
    pytest.importorskip("ctranslate2")
    from keras_seq.export.ctranslate2 import export_ctranslate2
    from keras_seq.text.portable_tokenizer import PortableTokenizer

    _, model, preprocessor, texts = exported
    preprocessor.save(tmp_path / "run")
    output = export_ctranslate2(model, tmp_path / "run", tmp_path / "ct2")
    portable = PortableTokenizer.from_directory(output, "source")
    rows, cut = portable.encode(texts)
    ids = preprocessor.generate_preprocess(tf.constant(texts)).numpy()
    assert rows == [[int(i) for i in row if i] for row in ids]
    assert cut == preprocessor.truncated(tf.constant(texts)).numpy().tolist()
    target = PortableTokenizer.from_directory(output, "target")
    rows = preprocessor.tokenize_target(tf.constant(texts)).to_list()
    assert target.tokenize(texts) == rows
    assert target.detokenize(rows) == preprocessor.detokenize(rows)
