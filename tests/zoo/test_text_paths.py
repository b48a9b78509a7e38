"""The same texts through every path of every text family give the same ids.

One set of texts (plain, with Unicode spaces, with a NUL, a soft hyphen and
a zero-width space inside a word, blank, unknown, over-long) goes through
each family's training pipeline, its in-process API (`TrainedModel`
loaded from a run directory) and, on TensorFlow, its exported SavedModel:
every path must hand the model the golden ids of a tiny fixed vocabulary,
and give the same outputs (translations, beams, probabilities, a seeded
sample, a greedy continuation). The odd texts must give the ids of the
plain one (the text-normalisation rule of `keras_seq.text.normalize_graph`).

The pipelines and in-process parts run on every backend (tf.data feeds
them all); export is TensorFlow's.
"""

import json
import unicodedata
import warnings

import keras
import numpy as np
import pytest

import zoo
from keras_seq import text

on_tensorflow = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="SavedModel export is TensorFlow's"
)

VOCABULARY = list(text.RESERVED_TOKENS) + [
    "ich", "bin", "da", "über", "café", "w", "##s", ".", "!", "?", ",",
    "i", "am", "here", "you", "are", "there", "we", "they", "it", "is", "not",
]  # fmt: skip
MAX_LENGTH = 16
LONG = "da " * 20 + "."  # 21 tokens
TEXTS = [
    "Ich bin da.",
    "Ich\u00a0bin\u2009da\u3000.",  # no-break, thin and ideographic spaces
    "ich bin\x00 da.",  # a NUL no longer ends the text
    "Ich b\u00adin\u200b da.",  # soft hyphen, zero-width space: removed
    "ich\tbin\r\nda\x0b.",
    "",
    "xyz!",
    LONG,
]
PLAIN = [5, 6, 7, 12]
GOLDEN = [PLAIN] * 5 + [[], [1, 13], [7] * 20 + [12]]
CUT = [row[:MAX_LENGTH] for row in GOLDEN]


def _rows(ids):
    """(B, W) 0-padded ids -> lists without the padding."""
    return [[int(t) for t in row if t] for row in np.asarray(ids)]


def _notes(caught):
    return [
        str(w.message) for w in caught if issubclass(w.category, text.TruncationWarning)
    ]


def _tokenizer():
    # The golden ids are of a lowercasing tokenizer (case is kept by default).
    return text.make_tokenizer(VOCABULARY, lowercase=True)


def _run_dir(directory, family, model, preprocessor, **run):
    model.save(directory / "model.keras")
    preprocessor.save(directory)
    (directory / "run.json").write_text(json.dumps({"family": family, **run}))
    return str(directory)


def _python_rule(sentence):
    """The normalisation rule written with `unicodedata`, as a tokenizer
    without TensorFlow must write it."""
    spaced = "".join(
        " "
        if c in "\t\n\x0b\x0c\r" or unicodedata.category(c) in ("Zs", "Zl", "Zp")
        else c
        for c in sentence
    )
    return "".join(c for c in spaced if unicodedata.category(c) not in ("Cc", "Cf"))


def test_the_normalisation_rule_in_the_graph_is_the_python_rule():
    import tensorflow as tf

    # Every assigned character of the Basic Multilingual Plane, surrogates
    # aside (they are not valid UTF-8).
    chars = [
        chr(c)
        for c in range(0x10000)
        if not 0xD800 <= c < 0xE000 and unicodedata.category(chr(c)) != "Cn"
    ]
    graph = text.normalize_graph(tf.constant([c.encode() for c in chars])).numpy()
    assert [g.decode() for g in graph] == [_python_rule(c) for c in chars]
    assert _python_rule("a\u00a0b\x00c\u200bd\u2028e") == "a bcd e"


def test_tokenize_graph_gives_the_golden_ids():
    import tensorflow as tf

    ids = text.tokenize_graph(_tokenizer(), tf.constant(TEXTS))
    assert ids.to_list() == GOLDEN


# Translators.


def _translator(family):
    keras.utils.set_random_seed(0)
    if family == "translator":
        model = zoo.build_translator(
            "tiny", vocabulary_size=len(VOCABULARY), max_length=MAX_LENGTH
        )
        return model, text.TranslationPreprocessor(_tokenizer(), max_length=MAX_LENGTH)
    model = zoo.build_rnn_translator(
        "tiny",
        source_vocabulary_size=len(VOCABULARY),
        target_vocabulary_size=len(VOCABULARY),
    )
    # No max_length of its own: the preprocessor's last bucket bounds it.
    preprocessor = text.TranslationPreprocessor(
        _tokenizer(), bucket_boundaries=[8, MAX_LENGTH]
    )
    return model, preprocessor


@pytest.fixture(scope="module", params=["translator", "rnn-translator"])
def translated(request, tmp_path_factory):
    """A tiny translator's run directory, loaded; what `TrainedModel.translate`
    gave (greedy and 3 beams, 4 new tokens), the ids it fed the model, and
    its truncation notes."""
    from zoo.recipes import model_dir

    model, preprocessor = _translator(request.param)
    directory = tmp_path_factory.mktemp(request.param)
    trained = model_dir.load_model_dir(
        _run_dir(directory, request.param, model, preprocessor)
    )
    fed = []
    generate = type(trained.model).generate

    def recording(model, token_ids, *args, **kwargs):
        fed.append(_rows(token_ids))
        return generate(model, token_ids, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(type(trained.model), "generate", recording)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            greedy = trained.translate(TEXTS, beam_width=1, max_new_tokens=4)
            beams = trained.translate(TEXTS, beam_width=3, max_new_tokens=4)
    return trained, greedy, beams, fed, _notes(caught)


def test_translators_give_the_golden_ids_on_every_path(translated):
    trained, greedy, beams, fed, notes = translated
    preprocessor = trained.preprocessor
    assert preprocessor.length_limit == MAX_LENGTH
    # The training pipeline.
    pairs = list(zip(TEXTS, TEXTS))
    with pytest.warns(text.TruncationWarning, match="1 of 8 sentence pairs"):
        dataset = preprocessor.dataset(pairs, batch_size=len(pairs))
    sources = [
        row for features, _ in dataset for row in _rows(features["encoder_token_ids"])
    ]
    assert sorted(sources) == sorted(CUT)
    # `TrainedModel.translate`, greedy and beam, through the model's generate.
    assert len(fed) == 2 and len(notes) == 2
    assert notes[0].startswith("1 of 8 sentences are longer than the ")
    order = np.argsort([len(r) for r in CUT], kind="stable")
    for batch in fed:
        assert batch[: len(TEXTS)] == [CUT[i] for i in order]
    # The odd texts translate as the plain one; blank in, "" out.
    for outputs in (greedy, beams):
        assert outputs[1:5] == [outputs[0]] * 4 and outputs[5] == ""


@on_tensorflow
def test_translators_serve_the_golden_ids_and_outputs(translated, tmp_path):
    import tensorflow as tf

    from keras_seq import export
    from zoo.recipes import families

    trained, greedy, beams, _, _ = translated
    assert families.FAMILIES[trained.family].supports("export")
    path = export.export_translator(
        trained.model, trained.preprocessor, tmp_path, max_new_tokens=4, beam_width=3
    )
    served = tf.saved_model.load(path)
    tokenized = served.signatures["tokenize"](sentences=tf.constant(TEXTS))
    assert _rows(tokenized["token_ids"]) == CUT
    assert tokenized["truncated"].numpy().tolist() == [False] * 7 + [True]
    out = served.signatures["serving_default"](sentences=tf.constant(TEXTS))
    assert [t.decode() for t in out["translations"].numpy()] == greedy
    out = served.signatures["beam_search"](sentences=tf.constant(TEXTS))
    assert [t.decode() for t in out["translations"].numpy()[:, 0]] == beams
    if trained.family == "rnn-translator":  # One server, kept cheap.
        assert _served(path, TEXTS) == (greedy, beams)


def _served(path, sentences):
    """Greedy and best-beam translations of `keras-seq serve`'s REST API."""
    from tests.zoo.serving.http_client import call
    from zoo.serving import ModelServer

    server = ModelServer(path, 1, "paths", port=0).start().load()
    try:
        answers = []
        for signature in ("serving_default", "beam_search"):
            request = {"signature_name": signature, "instances": sentences}
            status, body = call(server.url, "POST", "/v1/models/paths:predict", request)
            assert status == 200, body
            answers.append(body["predictions"])
    finally:
        server.stop(grace=5)
    greedy, beams = answers
    return greedy, [prediction["translations"][0] for prediction in beams]


# The classifier.


@pytest.fixture(scope="module")
def classifier_dir(tmp_path_factory):
    keras.utils.set_random_seed(0)
    model = zoo.build_classifier("tiny", vocabulary_size=len(VOCABULARY))
    preprocessor = text.ClassificationPreprocessor(_tokenizer(), MAX_LENGTH)
    directory = tmp_path_factory.mktemp("classifier")
    return _run_dir(directory, "classifier", model, preprocessor)


def test_classifier_gives_the_golden_ids_on_every_path(classifier_dir):
    from zoo.recipes import model_dir

    trained = model_dir.load_model_dir(classifier_dir)
    preprocessor = trained.preprocessor
    assert isinstance(preprocessor, text.ClassificationPreprocessor)
    labels = np.arange(len(TEXTS)) % 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (ids, _), *_ = list(preprocessor.dataset(TEXTS, labels, len(TEXTS)))
        probabilities = trained.probabilities(TEXTS)
    assert (
        _notes(caught)
        == [
            "1 of 8 texts are longer than the model's max_length (16 tokens); each "
            "was cut to it."
        ]
        * 2
    )
    assert ids.shape == (len(TEXTS), MAX_LENGTH) and _rows(ids) == CUT
    expected = keras.ops.softmax(trained.model.predict(np.asarray(ids), verbose=0))
    np.testing.assert_allclose(probabilities, expected, atol=1e-6)
    np.testing.assert_allclose(probabilities[1:5], [probabilities[0]] * 4, atol=1e-6)


@on_tensorflow
def test_classifier_serves_the_golden_ids_and_probabilities(classifier_dir, tmp_path):
    import tensorflow as tf

    from zoo.recipes import model_dir, workflow

    trained = model_dir.load_model_dir(classifier_dir)
    served = tf.saved_model.load(workflow.export(trained, str(tmp_path), 1))
    tokenized = served.signatures["tokenize"](texts=tf.constant(TEXTS))
    assert tokenized["token_ids"].shape == (len(TEXTS), MAX_LENGTH)
    assert _rows(tokenized["token_ids"]) == CUT
    assert tokenized["truncated"].numpy().tolist() == [False] * 7 + [True]
    out = served.signatures["serving_default"](texts=tf.constant(TEXTS))
    with pytest.warns(text.TruncationWarning):
        expected = trained.probabilities(TEXTS)
    np.testing.assert_allclose(out["probabilities"].numpy(), expected, atol=1e-5)


def test_a_classifier_directory_without_preprocessor_json_loads(
    classifier_dir, tmp_path
):
    import shutil

    from zoo.recipes import model_dir

    legacy = tmp_path / "legacy"
    shutil.copytree(classifier_dir, legacy)
    (legacy / "preprocessor.json").unlink()
    (legacy / "run.json").write_text(
        json.dumps({"family": "classifier", "max_length": 8})
    )
    trained = model_dir.load_model_dir(str(legacy))
    assert trained.preprocessor.max_length == 8  # as `run.json` says
    assert trained.tokenizers["text"] is trained.preprocessor.tokenizer


# The language models.


@pytest.fixture(scope="module")
def language_model_dir(tmp_path_factory):
    keras.utils.set_random_seed(0)
    model = zoo.build_language_model(
        "tiny", vocabulary_size=len(VOCABULARY), max_length=MAX_LENGTH
    )
    preprocessor = text.LanguageModelPreprocessor(_tokenizer(), MAX_LENGTH, 8)
    directory = tmp_path_factory.mktemp("language_model")
    return _run_dir(directory, "language-model", model, preprocessor)


def test_language_model_gives_the_golden_ids_on_every_path(language_model_dir):
    from zoo.recipes import inference, model_dir

    trained = model_dir.load_model_dir(language_model_dir)
    preprocessor = trained.preprocessor
    assert (preprocessor.max_length, preprocessor.sequence_length) == (16, 8)
    # Training: one stream of every text and an [END] after each.
    stream = [t for row in GOLDEN for t in row + [text.END_ID]]
    windows, labels = next(iter(preprocessor.dataset(TEXTS, batch_size=64)))
    assert np.asarray(windows).shape[1] == 8
    assert np.asarray(windows)[:, 0].tolist() == stream[: 8 * len(windows) : 8]
    assert np.asarray(labels).reshape(-1).tolist() == stream[1 : 8 * len(labels) + 1]
    # Prompts: the last max_length - max_new_tokens tokens; blank: [START].
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = [preprocessor.prompt_ids([t], max_new_tokens=4)[0] for t in TEXTS]
    assert [r.tolist() for r in rows] == [
        *[PLAIN] * 5, [text.START_ID], [1, 13], GOLDEN[-1][-12:]
    ]  # fmt: skip
    assert _notes(caught) == [
        "1 of 1 prompts are longer than the 12 tokens max_length=16 leaves for 4 "
        "new tokens; each kept its last tokens."
    ]
    # A seeded sample: the same through `TrainedModel.generate` and the
    # recipe, and the odd prompts as the plain one.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", text.TruncationWarning)
        samples = trained.generate(TEXTS[:5] + [LONG], max_new_tokens=4, seed=7)
        again = inference.generate_text(
            trained.model, preprocessor, LONG, 4, inference.SAMPLE_TOP_K, None, 7
        )
    assert samples[1:5] == [samples[0]] * 4 and samples[-1] == again


@on_tensorflow
def test_language_model_serves_the_golden_ids_and_continuations(
    language_model_dir, tmp_path
):
    import tensorflow as tf

    from keras_seq import export
    from zoo.recipes import model_dir

    trained = model_dir.load_model_dir(language_model_dir)
    preprocessor = trained.preprocessor
    path = export.export_language_model(
        trained.model, preprocessor, tmp_path, max_new_tokens=4
    )
    served = tf.saved_model.load(path)
    # A batch: every prompt left-padded with [END] to the longest.
    tokenized = served.signatures["tokenize"](prompts=tf.constant(TEXTS))
    with pytest.warns(text.TruncationWarning, match="1 of 8 prompts"):
        ids = preprocessor.prompt_ids(TEXTS, max_new_tokens=4)
    assert tokenized["token_ids"].numpy().tolist() == ids.tolist()
    assert ids[5].tolist() == [text.END_ID] * 11 + [text.START_ID]
    assert tokenized["truncated"].numpy().tolist() == [False] * 7 + [True]
    for prompt in (TEXTS[1], TEXTS[5], LONG):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", text.TruncationWarning)
            ids = preprocessor.prompt_ids([prompt], max_new_tokens=4)
        generated = trained.model.generate(ids, 4, end_token_id=text.END_ID)
        continuation = served.signatures["serving_default"](
            prompts=tf.constant([prompt])
        )["continuations"]
        assert (
            continuation.numpy()[0].decode()
            == preprocessor.detokenize(np.asarray(generated))[0]
        )


def test_masked_language_model_gives_the_golden_ids(tmp_path):
    from zoo.recipes import model_dir

    keras.utils.set_random_seed(0)
    model = zoo.build_masked_language_model("tiny", vocabulary_size=len(VOCABULARY))
    preprocessor = text.MaskedLanguageModelPreprocessor(_tokenizer(), MAX_LENGTH)
    directory = _run_dir(tmp_path, "masked-language-model", model, preprocessor)
    trained = model_dir.load_model_dir(directory)
    assert trained.preprocessor.get_config() == preprocessor.get_config()
    with pytest.warns(text.TruncationWarning, match="1 of 8 texts"):
        dataset = trained.preprocessor.dataset(TEXTS, batch_size=len(TEXTS))
    inputs, labels = (np.asarray(t) for t in next(iter(dataset)))
    # A masked position's label is its id; the others are the input's.
    assert _rows(np.where(labels > 0, labels, inputs)) == CUT
    assert (labels > 0).sum() > 0


def test_preprocessors_round_trip_through_config_and_files(tmp_path):
    made = [
        text.ClassificationPreprocessor(_tokenizer(), 12),
        text.LanguageModelPreprocessor(_tokenizer(), 12, 6),
        text.MaskedLanguageModelPreprocessor(_tokenizer(), 12, mask_rate=0.2),
    ]
    for i, preprocessor in enumerate(made):
        config = preprocessor.get_config()
        assert config["vocabulary"] == VOCABULARY and config["max_length"] == 12
        again = type(preprocessor).from_config(config)
        assert again.get_config() == config
        preprocessor.save(tmp_path / str(i))
        loaded = type(preprocessor).load(tmp_path / str(i), vocabulary_sizes=(27,))
        assert loaded.get_config() == config
    with pytest.raises(ValueError, match="vocabulary.txt has 27 tokens; "):
        type(made[0]).load(tmp_path / "0", vocabulary_sizes=(99,))


def test_bad_arguments_are_refused():
    tokenizer = _tokenizer()
    with pytest.raises(TypeError, match="`tokenizer` must be a tokenizer"):
        text.ClassificationPreprocessor(VOCABULARY, 8)
    with pytest.raises(ValueError, match="`max_length` must be at least 2"):
        text.LanguageModelPreprocessor(tokenizer, 1)
    with pytest.raises(ValueError, match="`sequence_length` must be at most"):
        text.LanguageModelPreprocessor(tokenizer, 8, 9)
    preprocessor = text.LanguageModelPreprocessor(tokenizer, 8)
    for bad in (0, 8, 2.0, True):
        with pytest.raises(ValueError, match=r"`max_new_tokens` must be in \[1, 7\]"):
            preprocessor.prompt_ids(["ich"], max_new_tokens=bad)
    with pytest.raises(ValueError, match=r"`mask_rate` must be in \(0, 1\)"):
        text.MaskedLanguageModelPreprocessor(tokenizer, 8, mask_rate=1.0)
