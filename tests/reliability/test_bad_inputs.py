"""Bad input at every public entry point fails early, clearly, and safely.

One table: the entry point, what is wrong with the input, the call, the
exception expected and a regular expression of its message, which names
the argument and the value expected (DESIGN.md, "Errors"). The command line
has its own table, run in fresh processes: a non-zero exit status and one
`keras-seq: ...` line, never a traceback.
"""

import itertools
import re
import shutil
import types

import keras
import numpy as np
import pytest

import zoo
from keras_seq import export, layers, text
from keras_seq.data import CorpusNotFoundError, load_trans_de_en, load_tsv_pairs
from keras_seq.losses import MaskedSparseCategoricalCrossentropy
from keras_seq.schedules import InverseSquareRootWarmup
from tests.reliability.conftest import VOCABULARY, requires_tensorflow, run_cli
from zoo.recipes import model_dir, run_dir

pytestmark = requires_tensorflow()

V = len(VOCABULARY)  # 35: tiny models here are built on this vocabulary.
IDS = np.array([[5, 6, 7, 0]], "int32")  # (1, 4), 0 = padding
LONG = np.ones((1, 40), "int32")  # Past the tiny presets' max_length of 32.


def _floats(*shape):
    return np.ones(shape, "float32")


def _pair(encoder=IDS, decoder=IDS):
    return {"encoder_token_ids": encoder, "decoder_token_ids": decoder}


@pytest.fixture(scope="module")
def ctx(tmp_path_factory, tokenizer, translator, classifier, translator_dir):
    """What the cases call: models, a tokenizer, files, a model directory."""
    root = tmp_path_factory.mktemp("bad_inputs")
    keras.utils.set_random_seed(0)
    (root / "latin1.tsv").write_bytes("ich\tI\nmöchte\twant\n".encode("latin-1"))
    vocabulary = "\n".join(VOCABULARY) + "\n"
    (root / "latin1_vocabulary.txt").write_bytes(
        vocabulary.encode() + "größe\n".encode("latin-1")
    )
    (root / "duplicate_vocabulary.txt").write_text(vocabulary + "w1\n")
    return types.SimpleNamespace(
        root=root,
        names=itertools.count(),
        tokenizer=tokenizer,
        translator=translator,
        classifier=classifier,
        language_model=zoo.build_language_model("tiny", vocabulary_size=V),
        rnn_translator=zoo.build_rnn_translator("tiny", vocabulary_size=V),
        translator_dir=translator_dir,
    )


def _variant(c, change):
    """A copy of the translator directory with one thing changed."""
    copy = c.root / f"model_dir_{next(c.names)}"
    shutil.copytree(c.translator_dir, copy)
    change(copy)
    return str(copy)


def _swap_reserved(path):
    tokens = path.read_text().splitlines()
    tokens[0], tokens[1] = tokens[1], tokens[0]
    path.write_text("\n".join(tokens) + "\n")


def _fresh_classifier_fit(x, y):
    """A fresh compiled model: its first trace sees the static shapes."""
    model = zoo.build_classifier("tiny")
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model.fit(x, y, epochs=1, verbose=0)


def _odd_reserved_tokenizer():
    """A keras-hub tokenizer of the right size whose ids 0 and 1 are swapped."""
    import keras_hub

    tokens = ["[UNK]", "[PAD]"] + VOCABULARY[2:]
    return keras_hub.tokenizers.WordPieceTokenizer(vocabulary=tokens, lowercase=False)


def _preprocessor(c, source=None, target=None):
    """The translator's preprocessor, or one over other tokenizers."""
    return text.TranslationPreprocessor(
        source or c.tokenizer, target or c.tokenizer, max_length=c.translator.max_length
    )


# (entry point, what is wrong, call(ctx), exception, message pattern)
CASES = [
    # Layers.
    ("MultiHeadAttention", "num_heads=0",
     lambda c: layers.MultiHeadAttention(0, 4),
     ValueError, r"`num_heads` must be a positive integer; received 0"),
    ("MultiHeadAttention", "query of rank 2",
     lambda c: layers.MultiHeadAttention(2, 4)(_floats(2, 8), _floats(2, 8)),
     ValueError, r"`query` must have rank 3, .*received shape \(2, 8\)"),
    ("MultiHeadAttention", "dropout=1.5",
     lambda c: layers.MultiHeadAttention(2, 4, dropout=1.5),
     ValueError, r"`dropout` must be in \[0, 1\); received 1.5"),
    ("MultiHeadAttention", "attention_mask of the wrong shape",
     lambda c: layers.MultiHeadAttention(2, 4)(
         _floats(1, 3, 8), _floats(1, 4, 8),
         attention_mask=np.ones((1, 3, 3), bool)),
     ValueError, r"`attention_mask` must have shape .*\(1, 3, 4\).*shape \(1, 3, 3\)"),
    ("ScoreAttention", "unknown score",
     lambda c: layers.ScoreAttention(score="cosine"),
     ValueError, r"`score` must be one of \(.*'additive'.*\); received 'cosine'"),
    ("SinusoidalPositionalEncoding", "odd width",
     lambda c: layers.SinusoidalPositionalEncoding()(_floats(1, 3, 5)),
     ValueError, r"must be even \(Eq\. 7\.29\); received input width 5"),
    ("LearnedPositionalEmbedding", "sequence past max_length",
     lambda c: layers.LearnedPositionalEmbedding(4)(_floats(1, 5, 8)),
     ValueError, r"max_length=4 .*sequence length 5"),
    ("TokenAndPositionEmbedding", "float token ids",
     lambda c: layers.TokenAndPositionEmbedding(10, 6, 8)(IDS.astype("float32")),
     ValueError, r"`token_ids` must hold integer token ids .*received dtype float32"),
    ("TokenAndPositionEmbedding", "id == vocabulary_size",
     lambda c: layers.TokenAndPositionEmbedding(10, 6, 8)(np.array([[3, 10]])),
     ValueError, r"`token_ids` must lie in \[0, 10\) .*received values in \[3, 10\]"),
    ("TokenAndPositionEmbedding", "negative id",
     lambda c: layers.TokenAndPositionEmbedding(10, 6, 8)(np.array([[3, -1]])),
     ValueError, r"`token_ids` must lie in \[0, 10\) .*in \[-1, 3\]"),
    ("TokenAndPositionEmbedding", "ids of rank 3",
     lambda c: layers.TokenAndPositionEmbedding(10, 6, 8)(np.ones((1, 2, 3), "int32")),
     ValueError, r"`token_ids` must have rank 2, .*received shape \(1, 2, 3\)"),
    ("TokenAndPositionEmbedding", "sequence past max_length",
     lambda c: layers.TokenAndPositionEmbedding(10, 3, 8)(IDS),
     ValueError, r"`token_ids` reaches past `max_length`.*max_length=3.*length 4"),
    ("PositionwiseFeedForward", "ff_dim=0",
     lambda c: layers.PositionwiseFeedForward(0),
     ValueError, r"`ff_dim` must be a positive integer; received 0"),
    ("TransformerEncoderBlock", "num_heads not dividing the width",
     lambda c: layers.TransformerEncoderBlock(3, 16)(_floats(1, 3, 8)),
     ValueError, r"`num_heads` must divide .*num_heads=3 and width 8"),
    ("TransformerEncoderBlock", "inputs of rank 2",
     lambda c: layers.TransformerEncoderBlock(2, 16)(_floats(3, 8)),
     ValueError, r"`inputs` must have rank 3, .*received shape \(3, 8\)"),
    ("TransformerEncoderBlock", "padding_mask of the wrong length",
     lambda c: layers.TransformerEncoderBlock(2, 16)(
         _floats(1, 3, 8), padding_mask=np.ones((1, 4), bool)),
     ValueError, r"`padding_mask` must have shape \(1, 3\); received shape \(1, 4\)"),
    ("TransformerDecoderBlock", "encoder_sequence of rank 2",
     lambda c: layers.TransformerDecoderBlock(2, 16)(_floats(1, 3, 8), _floats(3, 8)),
     ValueError, r"`encoder_sequence` must have rank 3, .*received shape \(3, 8\)"),
    # Builders.
    ("build_translator", "num_heads not dividing model_dim",
     lambda c: zoo.build_translator("tiny", num_heads=3),
     ValueError, r"`num_heads` must divide .*num_heads=3 and width 16"),
    ("build_translator", "model_dim=0",
     lambda c: zoo.build_translator("tiny", model_dim=0),
     ValueError, r"`model_dim` must be a positive integer; received 0"),
    ("build_translator", "unknown preset",
     lambda c: zoo.build_translator("huge"),
     ValueError, r"Unknown translator `preset` 'huge'; expected one of \[.*'tiny'\]"),
    ("build_translator", "unknown argument",
     lambda c: zoo.build_translator("tiny", width=3),
     TypeError, r"Unknown translator arguments \['width'\]; expected some of"),
    ("build_translator", "tied embeddings, two vocabulary sizes",
     lambda c: zoo.build_translator("tiny", tie_embeddings=True,
                                    source_vocabulary_size=50),
     ValueError, r"`source_vocabulary_size` must equal .*received 50 and 100"),
    ("build_translator", "unknown positional",
     lambda c: zoo.build_translator("tiny", positional="rotary"),
     ValueError, r"`positional` must be one of \('learned', 'sinusoidal'\)"),
    ("build_classifier", "num_classes=0",
     lambda c: zoo.build_classifier("tiny", num_classes=0),
     ValueError, r"`num_classes` must be a positive integer; received 0"),
    ("build_masked_language_model", "num_heads not dividing model_dim",
     lambda c: zoo.build_masked_language_model("tiny", num_heads=5),
     ValueError, r"`num_heads` must divide .*num_heads=5 and width 16"),
    ("build_language_model", "max_length=-1",
     lambda c: zoo.build_language_model("tiny", max_length=-1),
     ValueError, r"`max_length` must be at least 2; received -1"),
    ("build_rnn_translator", "unknown score",
     lambda c: zoo.build_rnn_translator("tiny", score="cosine"),
     ValueError, r"`score` must be one of \(.*\); received 'cosine'"),
    ("build_rnn_language_model", "unknown cell",
     lambda c: zoo.build_rnn_language_model("tiny", cell="transformer"),
     ValueError, r"`cell` must be one of \('simple', 'lstm', 'gru'\)"),
    ("build_rnn_seq2seq", "dropout=1.0",
     lambda c: zoo.build_rnn_seq2seq("tiny", dropout=1.0),
     ValueError, r"`dropout` must be in \[0, 1\); received 1.0"),
    # Calling a built model, fit and its training objects.
    ("Translator.__call__", "float source ids",
     lambda c: c.translator(_pair(encoder=IDS + 0.5)),
     ValueError, r"`encoder_token_ids` must hold integer token ids.*float64"),
    ("Translator.__call__", "source ids of rank 1",
     lambda c: c.translator(_pair(encoder=IDS[0])),
     ValueError, r"`encoder_token_ids` must have rank 2, .*received shape \(4,\)"),
    ("Translator.__call__", "id outside the vocabulary",
     lambda c: c.translator(_pair(decoder=IDS + V)),
     ValueError, rf"`decoder_token_ids` must lie in \[0, {V}\) .*\[{V}, {V + 7}\]"),
    ("Translator.__call__", "source past max_length",
     lambda c: c.translator(_pair(encoder=LONG)),
     ValueError, r"`token_ids` reaches past `max_length`.*max_length=32.*length 40"),
    ("Classifier.predict", "float token ids",
     lambda c: c.classifier.predict(IDS + 0.5, verbose=0),
     ValueError, r"`token_ids` must hold integer token ids.*float"),
    ("Classifier.fit", "float token ids",
     lambda c: _fresh_classifier_fit(np.ones((2, 4)) * 1.5, np.array([0, 1])),
     ValueError, r"`token_ids` must hold integer token ids.*float"),
    ("Classifier.fit", "sequences past max_length",
     lambda c: _fresh_classifier_fit(np.ones((2, 40), "int32"), np.array([0, 1])),
     ValueError, r"`token_ids` reaches past `max_length`.*max_length=32.*length 40"),
    ("Classifier.fit", "one label too many",
     lambda c: _fresh_classifier_fit(np.ones((2, 4), "int32"), np.array([0, 1, 1])),
     ValueError, r"Data cardinality is ambiguous.*'x' sizes: 2\s+'y' sizes: 3"),
    ("MaskedSparseCategoricalCrossentropy", "label_smoothing=2",
     lambda c: MaskedSparseCategoricalCrossentropy(label_smoothing=2),
     ValueError, r"`label_smoothing` must be in \[0, 1\); received 2"),
    ("InverseSquareRootWarmup", "warmup_steps=0",
     lambda c: InverseSquareRootWarmup(128, warmup_steps=0),
     ValueError, r"`warmup_steps` must be a positive integer; received 0"),
    # Generation.
    ("Translator.generate", "float source ids",
     lambda c: c.translator.generate(IDS.astype("float32"), 4),
     ValueError, r"`token_ids` must hold integer token ids .*float32"),
    ("Translator.generate", "id outside the vocabulary",
     lambda c: c.translator.generate(IDS + V, 4),
     ValueError, rf"`token_ids` must lie in \[0, {V}\) \(vocabulary_size={V}\)"),
    ("Translator.generate", "nested list instead of an array",
     lambda c: c.translator.generate([[5, 6, 7]], 4),
     TypeError, r"`token_ids` must be an array or tensor .*received list"),
    ("Translator.generate", "source past max_length",
     lambda c: c.translator.generate(LONG, 4),
     ValueError, r"`token_ids` has length 40; the model's max_length is 32"),
    ("Translator.generate", "max_new_tokens=0",
     lambda c: c.translator.generate(IDS, 0),
     ValueError, r"`max_new_tokens` must be a positive integer; received 0"),
    ("Translator.generate", "max_new_tokens=2.5",
     lambda c: c.translator.generate(IDS, 2.5),
     ValueError, r"`max_new_tokens` must be a positive integer; received 2.5"),
    ("Translator.generate", "max_new_tokens past max_length",
     lambda c: c.translator.generate(IDS, 100),
     ValueError, r"`max_new_tokens` must be in \[1, 31\] .*received 100"),
    ("Translator.generate", "unknown strategy",
     lambda c: c.translator.generate(IDS, 4, strategy="nucleus"),
     ValueError, r"`strategy` must be one of \('greedy', 'sample', 'beam'\)"),
    ("Translator.generate", "temperature=0",
     lambda c: c.translator.generate(IDS, 4, strategy="sample", temperature=0),
     ValueError, r"`temperature` must be a finite number above 0; received 0\."),
    ("Translator.generate", "top_p=1.5",
     lambda c: c.translator.generate(IDS, 4, strategy="sample", top_p=1.5),
     ValueError, r"`top_p` must be in \(0, 1\]; received 1.5"),
    ("Translator.beam_search", "beam_width=0",
     lambda c: c.translator.beam_search(IDS, 4, beam_width=0),
     ValueError, r"`beam_width` must be at least 1; received 0\."),
    ("Translator.beam_search", "num_return > beam_width",
     lambda c: c.translator.beam_search(IDS, 4, beam_width=2, num_return=3),
     ValueError, r"`num_return` must be in \[1, beam_width=2\]; received 3"),
    ("LanguageModel.generate", "prompt plus new tokens past max_length",
     lambda c: c.language_model.generate(np.ones((1, 30), "int32"), 8),
     ValueError, r"at most max_length=32; received 30 \+ 8"),
    ("RNNTranslator.generate", "id outside the vocabulary",
     lambda c: c.rnn_translator.generate(IDS + V, 4),
     ValueError, rf"`token_ids` must lie in \[0, {V}\)"),
    ("RNNTranslator.generate", "max_new_tokens=0",
     lambda c: c.rnn_translator.generate(IDS, 0),
     ValueError, r"`max_new_tokens` must be a positive integer; received 0"),
    # Text: vocabularies, tokenizers, pipelines.
    ("make_translation_dataset", "one string instead of pairs",
     lambda c: text.make_translation_dataset("w1 w2", c.tokenizer, c.tokenizer, 8),
     TypeError, r"`pairs` must be a list of \(source, target\) pairs"),
    ("make_translation_dataset", "no pairs",
     lambda c: text.make_translation_dataset([], c.tokenizer, c.tokenizer, 8),
     ValueError, r"`pairs` is empty"),
    ("make_translation_dataset", "a triple",
     lambda c: text.make_translation_dataset(
         [("w1", "w2", "w3")], c.tokenizer, c.tokenizer, 8),
     TypeError, r"`pairs` must hold \(source, target\) string pairs; item 0 is"),
    ("make_translation_dataset", "max_length=1",
     lambda c: text.make_translation_dataset([("w1", "w2")], c.tokenizer,
                                             c.tokenizer, 1),
     ValueError, r"`max_length` must be at least 2; received 1"),
    ("make_translation_dataset", "unsorted bucket_boundaries",
     lambda c: text.make_translation_dataset([("w1", "w2")], c.tokenizer, c.tokenizer,
                                             8, bucket_boundaries=[6, 4]),
     ValueError, r"`bucket_boundaries` must be strictly increasing .*\[6, 4\]"),
    ("make_classification_dataset", "one label for two texts",
     lambda c: text.make_classification_dataset(["w1", "w2"], [0], c.tokenizer, 8, 2),
     ValueError, r"`labels` must hold one label per text \(2\); .*shape \(1,\)"),
    ("make_classification_dataset", "None among the texts",
     lambda c: text.make_classification_dataset(["w1", None], [0, 1], c.tokenizer,
                                                8, 2),
     TypeError, r"`texts` must hold strings; item 1 is NoneType"),
    ("make_classification_dataset", "unpaired surrogate in a text",
     lambda c: text.make_classification_dataset(["w1", "w2 \ud800"], [0, 1],
                                                c.tokenizer, 8, 2),
     ValueError, r"`texts` must hold valid Unicode text; item 1 .*position 3"),
    ("make_language_model_dataset", "fewer tokens than one window",
     lambda c: text.make_language_model_dataset(["w1"], c.tokenizer, 8, 2),
     ValueError, r"`texts` hold 2 tokens; .*`sequence_length` \+ 1 = 9"),
    ("make_masked_language_model_dataset", "mask_rate=1.5",
     lambda c: text.make_masked_language_model_dataset(["w1 w2"], c.tokenizer, 8, 2,
                                                       mask_rate=1.5),
     ValueError, r"`mask_rate` must be in \(0, 1\); received 1.5"),
    ("make_tokenizer", "no reserved tokens",
     lambda c: text.make_tokenizer(["a", "b"]),
     ValueError, r"`vocabulary` must start with the reserved tokens"),
    ("make_tokenizer", "an int",
     lambda c: text.make_tokenizer(5),
     TypeError, r"`vocabulary` must be a list of tokens or the path .*received int"),
    ("load_vocabulary", "Latin-1 file",
     lambda c: text.load_vocabulary(c.root / "latin1_vocabulary.txt"),
     ValueError, rf"latin1_vocabulary.txt is not valid UTF-8: .*\(line {V + 1}\)"),
    ("load_vocabulary", "duplicate token",
     lambda c: text.load_vocabulary(c.root / "duplicate_vocabulary.txt"),
     ValueError, rf"duplicate tokens: 'w1' at lines 7 and {V + 1}"),
    ("load_vocabulary", "size other than the model's",
     lambda c: text.load_vocabulary(c.translator_dir / "source_vocabulary.txt",
                                    expected_size=100),
     ValueError, rf"source_vocabulary.txt has {V} tokens; the model expects 100"),
    ("train_wordpiece_vocabulary", "vocabulary_size=3",
     lambda c: text.train_wordpiece_vocabulary(["w1 w2"], 3),
     ValueError, r"`vocabulary_size` must be an int larger than the 5 reserved"),
    ("detokenize", "id outside the vocabulary",
     lambda c: text.detokenize(c.tokenizer, [[5, 99]]),
     ValueError, rf"`ids` must lie in \[0, {V}\), .*received id 99"),
    ("detokenize_graph", "float ids",
     lambda c: text.detokenize_graph(c.tokenizer, np.array([[1.0]], "float32")),
     ValueError, r"`ids` must hold integer token ids; received dtype float32"),
    # Corpus loaders.
    ("load_tsv_pairs", "Latin-1 file",
     lambda c: load_tsv_pairs(c.root / "latin1.tsv"),
     ValueError, r"latin1.tsv is not valid UTF-8: .*b'\\xf6' .*\(line 2\)"),
    ("load_trans_de_en", "missing dictionary",
     lambda c: load_trans_de_en(c.root / "no-such-dictionary"),
     CorpusNotFoundError, r"no-such-dictionary\. To install it: .*apt-get install"),
    # Model directories: vocabularies and run.json that do not match.
    ("load_model_dir", "no run.json",
     lambda c: model_dir.load_model_dir(str(c.root)),
     ValueError, r"^/.* has no run.json; expected a model directory"),
    ("load_model_dir", "unknown family",
     lambda c: model_dir.load_model_dir(_variant(
         c, lambda d: (d / "run.json").write_text('{"family": "poem"}'))),
     ValueError, r"run.json: `family` must be one of \(.*\); received 'poem'"),
    ("load_model_dir", "source vocabulary one token larger",
     lambda c: model_dir.load_model_dir(_variant(c, lambda d: text.save_vocabulary(
         VOCABULARY + ["w99"], d / "source_vocabulary.txt"))),
     ValueError, rf"source_vocabulary.txt has {V + 1} tokens; the model expects {V}"),
    ("load_model_dir", "[PAD] and [UNK] swapped",
     lambda c: model_dir.load_model_dir(_variant(
         c, lambda d: _swap_reserved(d / "target_vocabulary.txt"))),
     ValueError, r"target_vocabulary.txt must start with the reserved tokens"),
    ("load_model_dir", "vocabulary not UTF-8",
     lambda c: model_dir.load_model_dir(_variant(c, lambda d: shutil.copy(
         c.root / "latin1_vocabulary.txt", d / "source_vocabulary.txt"))),
     ValueError, r"source_vocabulary.txt is not valid UTF-8"),
    ("load_model_dir", "vocabulary missing",
     lambda c: model_dir.load_model_dir(_variant(
         c, lambda d: (d / "target_vocabulary.txt").unlink())),
     ValueError, r"target_vocabulary.txt does not exist or is not a file"),
    ("load_model_dir", "model.keras not a zip file",
     lambda c: model_dir.load_model_dir(_variant(
         c, lambda d: (d / "model.keras").write_bytes(b"not a zip"))),
     ValueError, r"model.keras: not a whole .keras archive"),
    pytest.param(
        "load_model_dir", "run.json not JSON",
        lambda c: model_dir.load_model_dir(_variant(
            c, lambda d: (d / "run.json").write_text("{family: translator"))),
        ValueError, r"run.json",
    ),
    pytest.param(
        "load_model_dir", "run.json a list",
        lambda c: model_dir.load_model_dir(_variant(
            c, lambda d: (d / "run.json").write_text("[1, 2]"))),
        ValueError, r"run.json",
    ),
    pytest.param(
        "load_model_dir", "run.json names another family than the model",
        lambda c: model_dir.load_model_dir(_variant(
            c, lambda d: (d / "run.json").write_text('{"family": "classifier"}'))),
        ValueError, r"run.json.*classifier",
    ),
    # Export: the model and tokenizers must match.
    ("export_translator", "a classifier",
     lambda c: export.export_translator(c.classifier, _preprocessor(c), c.root / "e0"),
     TypeError, r"`model` must be a model of `zoo.build_translator` or .*Classifier"),
    ("export_translator", "tokenizers instead of a preprocessor",
     lambda c: export.export_translator(c.translator, c.tokenizer, c.root / "e6"),
     TypeError, r"`preprocessor` must be a `keras_seq.text.TranslationPreprocessor`"),
    ("export_translator", "source tokenizer larger than the model's vocabulary",
     lambda c: export.export_translator(c.translator, _preprocessor(
         c, text.make_tokenizer(VOCABULARY + ["w99"]), c.tokenizer), c.root / "e1"),
     ValueError, rf"`preprocessor.source_tokenizer` has a vocabulary of {V + 1} "
                 rf"tokens; the model expects {V}"),
    ("export_translator", "target tokenizer with [PAD] and [UNK] swapped",
     lambda c: export.export_translator(c.translator, _preprocessor(
         c, c.tokenizer, _odd_reserved_tokenizer()), c.root / "e2"),
     ValueError, r"`preprocessor.target_tokenizer` must start with the reserved "),
    ("export_translator", "max_new_tokens past max_length",
     lambda c: export.export_translator(c.translator, _preprocessor(c),
                                        c.root / "e3", max_new_tokens=99),
     ValueError, r"`max_new_tokens` must be in \[1, 31\] .*received 99"),
    ("export_translator", "version as a string",
     lambda c: export.export_translator(c.translator, _preprocessor(c),
                                        c.root / "e4", version="1"),
     ValueError, r"`version` must be an int >= 1; received '1'"),
    ("export_classifier", "one class name for two classes",
     lambda c: export.export_classifier(
         c.classifier, text.ClassificationPreprocessor(c.tokenizer, 16), c.root / "e5",
         class_names=["yes"]),
     ValueError, r"`class_names` must name the 2 classes; received 1 names"),
    ("export_language_model", "max_new_tokens=0",
     lambda c: export.export_language_model(
         c.language_model, text.LanguageModelPreprocessor(c.tokenizer, 32),
         c.root / "e6", max_new_tokens=0),
     ValueError, r"`max_new_tokens` must be in \[1, 31\] .*received 0"),
    ("export_language_model", "a translator",
     lambda c: export.export_language_model(c.translator, c.tokenizer,
                                            c.root / "e7"),
     TypeError, r"`model` must be a model of `zoo.build_language_model`"),
]  # fmt: skip


def _case_id(case):
    values = case.values if hasattr(case, "values") else case
    return f"{values[0]}: {values[1]}"


@pytest.mark.parametrize(
    "entry, problem, call, error, match", CASES, ids=[_case_id(c) for c in CASES]
)
def test_bad_input_is_refused_early_and_clearly(
    ctx, entry, problem, call, error, match
):
    with pytest.raises(error, match=match):
        call(ctx)


def test_the_table_is_large_enough():
    assert len(CASES) >= 40
    entries = {(c.values if hasattr(c, "values") else c)[0] for c in CASES}
    assert len(entries) >= 30


# The served signature refuses a wrong call before running anything.
SERVING_CASES = [
    ("int32 sentences", lambda s: s(sentences=np.array([1, 2], "int32")),
     Exception, r"expected to be a string tensor but is a int32 tensor"),
    ("wrong keyword", lambda s: s(texts=np.array([b"w1"])),
     TypeError, r"missing a required argument: 'sentences'"),
]  # fmt: skip


@pytest.mark.parametrize(
    "problem, call, error, match", SERVING_CASES, ids=[c[0] for c in SERVING_CASES]
)
def test_serving_signature_refuses_a_wrong_call(
    served_translator, problem, call, error, match
):
    import tensorflow as tf

    signature = served_translator[1].signatures["serving_default"]

    def serve(**kwargs):
        return signature(**{k: tf.constant(v) for k, v in kwargs.items()})

    with pytest.raises(error, match=match):
        call(serve)


# The command line, in fresh processes: (command, what is wrong, arguments,
# exit status, pattern of the last stderr line). `{name}` is a path of
# `cli_paths`.
CLI_CASES = [
    ("train", "--epochs not an int",
     ["train", "translator", "--epochs", "abc"],
     1, r"keras-seq: argument --epochs: invalid int value: 'abc'; see keras-seq "
        r"train --help"),
    ("train", "--data a Latin-1 file",
     ["train", "translator", "--data", "{latin1_tsv}", "--preset", "tiny"],
     1, r"keras-seq: .*latin1.tsv is not valid UTF-8: .*\(line 2\)"),
    ("train", "--data missing",
     ["train", "classifier", "--data", "{missing}"],
     1, r"keras-seq: --data .*missing.tsv: no such file"),
    ("translate", "neither --model-dir nor --saved-model",
     ["translate", "w1 w2."],
     1, r"keras-seq: give exactly one of --model-dir, --saved-model and --ctranslate2"),
    ("translate", "--model-dir with [PAD] and [UNK] swapped",
     ["translate", "--model-dir", "{swapped_dir}", "w1 w2."],
     1, r"keras-seq: .*source_vocabulary.txt must start with the reserved tokens"),
    ("translate", "--model-dir holding a Lambda layer",
     ["translate", "--model-dir", "{lambda_dir}", "w1 w2."],
     1, r"keras-seq: .*model.keras: Requested the deserialization of a `Lambda` layer"),
    ("translate", "--saved-model without saved_model.pb",
     ["translate", "--saved-model", "{missing}", "w1 w2."],
     1, r"keras-seq: --saved-model .*: no saved_model.pb in it"),
    ("export", "--model-dir of a masked language model",
     ["export", "--model-dir", "{mlm_dir}", "--export-dir", "{missing}"],
     1, r"keras-seq: `export` serves translator, classifier, language-model "
        r"and rnn-translator directories; --model-dir .*mlm holds a "
        r"masked-language-model\.$"),
    pytest.param(
        "translate", "--saved-model of a classifier",
        ["translate", "--saved-model", "{classifier_export}", "w1 w2."],
        1, r"keras-seq: .*serving_default.*sentences",
    ),
    pytest.param(
        "translate", "--saved-model with a corrupt saved_model.pb",
        ["translate", "--saved-model", "{corrupt_export}", "w1 w2."],
        1, r"keras-seq: .*saved_model.pb",
    ),
]  # fmt: skip


@pytest.fixture(scope="module")
def cli_paths(ctx, lambda_model_file, served_classifier):
    root = ctx.root / "cli"
    root.mkdir()
    mlm_dir = root / "mlm"
    mlm_dir.mkdir()
    text.save_vocabulary(VOCABULARY, mlm_dir / "vocabulary.txt")
    mlm = zoo.build_masked_language_model("tiny", vocabulary_size=V)
    run_dir.RunDir(str(mlm_dir)).save("masked-language-model", mlm, {}, ("text",))
    corrupt = root / "corrupt_export" / "1"
    corrupt.mkdir(parents=True)
    (corrupt / "saved_model.pb").write_bytes(b"not a protocol buffer")
    return {
        "root": root,
        "latin1_tsv": ctx.root / "latin1.tsv",
        "missing": root / "missing.tsv",
        "swapped_dir": _variant(
            ctx, lambda d: _swap_reserved(d / "source_vocabulary.txt")
        ),
        "lambda_dir": _variant(
            ctx, lambda d: shutil.copy(lambda_model_file, d / "model.keras")
        ),
        "mlm_dir": mlm_dir,
        "classifier_export": served_classifier[0],
        "corrupt_export": corrupt.parent,
    }


@pytest.mark.parametrize(
    "command, problem, arguments, status, match",
    CLI_CASES,
    ids=[_case_id(c) for c in CLI_CASES],
)
def test_command_line_exits_with_one_line(
    cli_paths, command, problem, arguments, status, match
):
    arguments = [a.format(**cli_paths) for a in arguments]
    returncode, lines, stderr = run_cli(
        *arguments, cwd=cli_paths["root"], in_process=True
    )
    assert "Traceback" not in stderr, stderr[-3000:]
    assert returncode == status, stderr[-3000:]
    assert lines, "nothing on stderr"
    assert re.search(match, lines[-1]), lines[-1]
    if status == 1:  # Our own errors: the message is all there is.
        assert [line for line in lines if not line.startswith("loading ")] == [
            lines[-1]
        ], lines
