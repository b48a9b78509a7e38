"""`keras_seq.text.TranslationPreprocessor`: one tokenization on every path.

The same sentences (an over-long one, an empty one, accents, punctuation,
a word split into pieces, an unknown word) go through the training
pipeline, the decoding of `translate_texts` and `evaluate_translator`,
`TrainedModel.translate` and the exported SavedModel's graph; every path
must hand the model the same ids (golden ids of a tiny fixed vocabulary)
and report what it cuts.
"""

import json
import os
import warnings

import keras
import numpy as np
import pytest

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="the text pipelines and SavedModel export run on TensorFlow",
)

import tensorflow as tf  # noqa: E402

from keras_seq import text  # noqa: E402

SHARED = list(text.RESERVED_TOKENS) + [
    "ich", "bin", "da", "über", "café", "w", "##s", ".", "!", "?", ",",
    "i", "am", "here",
]  # fmt: skip
ENGLISH = list(text.RESERVED_TOKENS) + ["i", "am", "here", ".", "!", "?", ","]
MAX_LENGTH = 16
LONG = "da " * 20 + "."  # 21 tokens
SENTENCES = ["Ich bin da.", "Über, Café!", "", "ich bin ws?", "xyz.", LONG]
# Golden ids of SHARED: lowercased, accents kept, punctuation split off,
# "ws" in two pieces, the unknown word as [UNK] (1).
GOLDEN = [
    [5, 6, 7, 12],
    [8, 15, 9, 13],
    [],
    [5, 6, 10, 11, 14],
    [1, 12],
    [7] * 20 + [12],
]
CUT = [row[:MAX_LENGTH] for row in GOLDEN]
DECODE_NOTE = (
    f"1 of {len(SENTENCES)} sentences are longer than the model's max_length "
    f"({MAX_LENGTH} tokens); each was cut to it."
)


def _preprocessor(target=None):
    return text.TranslationPreprocessor(
        text.make_tokenizer(SHARED, lowercase=True),
        target and text.make_tokenizer(target, lowercase=True),
        max_length=MAX_LENGTH,
    )


def _rows(ids):
    """(B, W) 0-padded ids -> lists without the padding."""
    return [[int(t) for t in row if t] for row in np.asarray(ids)]


def _truncation_notes(caught):
    return [
        str(w.message) for w in caught if issubclass(w.category, text.TruncationWarning)
    ]


class Echo:
    """A stand-in translator whose `generate` records its input and echoes it."""

    def __init__(self):
        self.batches = []

    def generate(self, token_ids, max_new_tokens=None, **kwargs):
        self.batches.append(np.asarray(token_ids))
        return token_ids


@pytest.fixture(scope="module")
def shared():
    return _preprocessor()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, shared):
    """A tiny translator's run directory as `train_translator` writes it."""
    import zoo

    directory = tmp_path_factory.mktemp("run")
    keras.utils.set_random_seed(0)
    model = zoo.build_translator(
        "tiny", vocabulary_size=len(SHARED), max_length=MAX_LENGTH
    )
    model.save(directory / "model.keras")
    shared.save(directory)
    (directory / "run.json").write_text(json.dumps({"family": "translator"}))
    return directory


def test_golden_ids_and_buckets(shared):
    assert shared.bucket_boundaries == [8, 16] and shared.length_limit == 16
    ids = tf.function(shared.tokenize_source)(tf.constant(SENTENCES))
    assert ids.to_list() == GOLDEN
    padded = shared.generate_preprocess(tf.constant(SENTENCES[:2]))
    assert padded.shape == (2, 8)  # the smallest bucket that holds 4 tokens
    assert padded.numpy().tolist()[0] == GOLDEN[0] + [0] * 4
    assert shared.generate_preprocess(tf.constant(SENTENCES)).shape == (6, 16)
    truncated = shared.truncated(tf.constant(SENTENCES)).numpy().tolist()
    assert truncated == [False] * 5 + [True]
    assert shared.detokenize([[2, 8, 15, 9, 13, 3, 5]]) == ["über, café!"]


def test_training_pipeline_gives_the_golden_ids(shared):
    pairs = list(zip(SENTENCES, SENTENCES))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = shared.dataset(pairs, batch_size=len(pairs))
    assert _truncation_notes(caught) == [
        f"1 of {len(pairs)} sentence pairs were longer than max_length="
        f"{MAX_LENGTH} tokens and were truncated."
    ]
    sources, decoder_inputs, labels = [], [], []
    for features, batch_labels in dataset:
        assert features["encoder_token_ids"].shape[1] in shared.bucket_boundaries
        sources += _rows(features["encoder_token_ids"])
        decoder_inputs += _rows(features["decoder_token_ids"])
        labels += _rows(batch_labels)
    assert sorted(sources) == sorted(CUT)
    # The target keeps its [END]: at most max_length - 1 tokens of it.
    targets = [row[: MAX_LENGTH - 1] for row in GOLDEN]
    assert sorted(decoder_inputs) == sorted([text.START_ID] + r for r in targets)
    assert sorted(labels) == sorted(r + [text.END_ID] for r in targets)


def test_decode_path_of_translate_and_evaluate_gives_the_golden_ids(shared):
    from zoo.recipes import translator

    echo = Echo()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outputs = translator.translate_texts(echo, shared, SENTENCES, batch_size=4)
    assert _truncation_notes(caught) == [DECODE_NOTE]
    # Sorted by length, in batches of at most 4 padded to a bucket: the
    # last holds its 2 sentences in 2 rows, not 4.
    first, second = echo.batches
    assert first.shape == (4, 8) and second.shape == (2, 16)
    assert _rows(first) == [CUT[2], CUT[4], CUT[0], CUT[1]]
    assert _rows(second) == [CUT[3], CUT[5]]
    assert outputs == [
        "ich bin da.", "über, café!", "", "ich bin ws?", "[UNK].",
        " ".join(["da"] * MAX_LENGTH),
    ]  # fmt: skip

    echo = Echo()
    scores = translator.evaluate_translator(
        echo, shared, [(s, s) for s in SENTENCES[:2]], batch_size=4
    )
    assert _rows(echo.batches[0]) == [CUT[0], CUT[1]]
    assert scores["hypotheses"] == ["ich bin da.", "über, café!"]
    # The preprocessor lowercases: only the lowercased score matches all.
    assert scores["bleu_lowercase"] == pytest.approx(100.0)
    assert scores["bleu"] < 100.0


def test_trained_model_translate_gives_the_golden_ids(run_dir, monkeypatch):
    import zoo
    from zoo.recipes import model_dir

    fed = []
    generate = zoo.Translator.generate

    def recording(model, token_ids, *args, **kwargs):
        fed.append(np.asarray(token_ids))
        return generate(model, token_ids, *args, **kwargs)

    monkeypatch.setattr(zoo.Translator, "generate", recording)
    trained = model_dir.load_model_dir(str(run_dir))
    assert trained.preprocessor.get_config() == _preprocessor().get_config()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outputs = trained.translate(SENTENCES, beam_width=1, max_new_tokens=3)
    assert _truncation_notes(caught) == [DECODE_NOTE]
    assert outputs[2] == "" and len(outputs) == len(SENTENCES)
    (batch,) = fed
    rows = [CUT[i] for i in np.argsort([len(r) for r in CUT], kind="stable")]
    # 6 sentences in 8 rows (the next power of two), not `batch_size`.
    assert batch.shape == (8, 16) and _rows(batch)[: len(rows)] == rows


def test_exported_graph_tokenizes_as_in_process(run_dir, tmp_path):
    from keras_seq import export
    from zoo.recipes import model_dir

    trained = model_dir.load_model_dir(str(run_dir))
    path = export.export_translator(
        trained.model, trained.preprocessor, tmp_path, max_new_tokens=3
    )
    served = tf.saved_model.load(path)
    out = served.signatures["tokenize"](sentences=tf.constant(SENTENCES))
    assert _rows(out["token_ids"]) == CUT
    assert out["token_ids"].shape == (6, 16)
    assert out["truncated"].numpy().tolist() == [False] * 5 + [True]
    # Invalid UTF-8 reads as U+FFFD, an unknown word, instead of failing.
    odd = served.signatures["tokenize"](sentences=tf.constant([b"ich \xff."]))
    assert _rows(odd["token_ids"]) == [[5, 1, 12]]
    translations = served.signatures["serving_default"](
        sentences=tf.constant(SENTENCES)
    )["translations"]
    with pytest.warns(text.TruncationWarning):
        expected = trained.translate(SENTENCES, beam_width=1, max_new_tokens=3)
    assert [t.decode() for t in translations.numpy()] == expected


def test_untied_vocabularies_tokenize_each_side_with_its_own():
    preprocessor = _preprocessor(ENGLISH)
    assert not preprocessor.shared
    pairs = [("Ich bin da.", "I am here!")]
    features, labels = next(iter(preprocessor.dataset(pairs, batch_size=1)))
    assert _rows(features["encoder_token_ids"]) == [GOLDEN[0]]
    assert _rows(labels) == [[5, 6, 7, 9, text.END_ID]]
    assert preprocessor.detokenize([[5, 6, 7, 9]]) == ["i am here!"]


def test_config_and_files_round_trip(tmp_path, shared):
    config = shared.get_config()
    assert config["target_vocabulary"] is None  # tied: one vocabulary
    assert config["max_length"] == MAX_LENGTH
    assert config["bucket_boundaries"] == [8, 16]
    again = text.TranslationPreprocessor.from_config(config)
    assert again.get_config() == config and again.shared

    untied = _preprocessor(ENGLISH)
    untied.save(tmp_path)
    assert sorted(os.listdir(tmp_path)) == [
        "preprocessor.json", "source_vocabulary.txt", "target_vocabulary.txt",
    ]  # fmt: skip
    target_file = (tmp_path / "target_vocabulary.txt").read_text()
    assert target_file == "".join(t + "\n" for t in ENGLISH)
    loaded = text.TranslationPreprocessor.load(tmp_path)
    assert loaded.get_config() == untied.get_config()
    with pytest.raises(ValueError, match=r"target_vocabulary.txt has 12 tokens; "):
        text.TranslationPreprocessor.load(tmp_path, vocabulary_sizes=(None, 99))


def test_a_directory_from_before_preprocessor_json_loads(tmp_path, run_dir):
    from zoo.recipes import model_dir

    legacy = tmp_path / "legacy"
    legacy.mkdir()
    for name in ("model.keras", "run.json", "source_vocabulary.txt"):
        (legacy / name).write_bytes((run_dir / name).read_bytes())
    (legacy / "target_vocabulary.txt").write_bytes(
        (run_dir / "source_vocabulary.txt").read_bytes()
    )
    trained = model_dir.load_model_dir(str(legacy))
    assert trained.preprocessor.max_length == MAX_LENGTH  # the model's
    assert trained.preprocessor.bucket_boundaries == [8, 16]
    assert trained.preprocessor.shared
    assert trained.tokenizers["source"] is trained.preprocessor.source_tokenizer
    ids = trained.preprocessor.generate_preprocess(tf.constant(SENTENCES))
    assert _rows(ids) == CUT


def test_a_model_without_max_length_is_cut_to_its_last_bucket():
    preprocessor = text.TranslationPreprocessor(
        text.make_tokenizer(SHARED, lowercase=True)
    )
    assert preprocessor.max_length is None
    assert preprocessor.bucket_boundaries == text.default_bucket_boundaries(64)
    short = text.TranslationPreprocessor(
        text.make_tokenizer(SHARED, lowercase=True), bucket_boundaries=[8, 16]
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        list(short.decode_batches(SENTENCES, 8))
    assert _truncation_notes(caught) == [
        f"1 of {len(SENTENCES)} sentences are longer than the longest length "
        "bucket (16 tokens); each was cut to it."
    ]


def test_a_batch_holds_the_fewest_power_of_two_rows_its_sentences_fit(shared):
    # One sentence decodes as one row, and a batch of n sentences in the
    # next power of two rows (filler rows hold one [UNK]), never more than
    # `batch_size`: few compiled shapes, little decoding of filler.
    cases = {(1, 64): [1], (2, 64): [2], (3, 64): [4], (5, 64): [8],
             (5, 6): [6], (6, 4): [4, 2], (7, 4): [4, 4]}  # fmt: skip
    for (count, batch_size), rows in cases.items():
        texts = (SENTENCES * 2)[:count]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            batches = list(shared.decode_batches(texts, batch_size))
        assert [len(ids) for _, ids, _ in batches] == rows, (count, batch_size)
        seen = np.concatenate([positions for positions, _, _ in batches])
        assert sorted(seen) == list(range(count))
        for positions, ids, _ in batches:
            filler = ids[len(positions) :]
            assert (filler[:, 0] == text.UNK_ID).all() and not filler[:, 1:].any()


def test_bad_arguments_are_refused():
    tokenizer = text.make_tokenizer(SHARED, lowercase=True)
    with pytest.raises(TypeError, match="`source_tokenizer` must be a tokenizer"):
        text.TranslationPreprocessor(SHARED)
    with pytest.raises(ValueError, match="`max_length` must be at least 2"):
        text.TranslationPreprocessor(tokenizer, max_length=1)
    with pytest.raises(ValueError, match=r"`bucket_boundaries` must be strictly"):
        text.TranslationPreprocessor(tokenizer, max_length=8, bucket_boundaries=[16])
    with pytest.raises(ValueError, match="must lowercase and strip accents alike"):
        text.TranslationPreprocessor(
            tokenizer, text.make_tokenizer(SHARED, lowercase=False)
        )
