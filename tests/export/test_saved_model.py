"""String-in, string-out SavedModels: same answers in a fresh process that
imports only TensorFlow and TensorFlow Text, through `saved_model_cli`, and
results (never crashes) for bad input."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="SavedModel export is TensorFlow"
)

import zoo  # noqa: E402
from keras_seq import export, text  # noqa: E402
from keras_seq.losses import MaskedSparseCategoricalCrossentropy  # noqa: E402
from tests import saved_models  # noqa: E402
from zoo.recipes import inference  # noqa: E402

WORDS = [f"w{i}" for i in range(30)]
VOCABULARY = list(text.RESERVED_TOKENS) + WORDS + [".", "!", "?"]


def _sentences(count, seed):
    rng = np.random.default_rng(seed)
    return [
        " ".join(rng.choice(WORDS, rng.integers(2, 7))) + rng.choice([".", "!"])
        for _ in range(count)
    ]


@pytest.fixture(scope="module")
def translator():
    """A tiny translator trained to copy, so its outputs are real sentences."""
    keras.utils.set_random_seed(0)
    preprocessor = text.TranslationPreprocessor(
        text.make_tokenizer(VOCABULARY), max_length=32
    )
    model = zoo.build_translator(
        "tiny", vocabulary_size=len(VOCABULARY), model_dim=32, ff_dim=64
    )
    sentences = _sentences(1024, 0)
    data = preprocessor.dataset(list(zip(sentences, sentences)), batch_size=32)
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=MaskedSparseCategoricalCrossentropy(),
    )
    model.fit(data, epochs=6, verbose=0)
    return model, preprocessor


@pytest.fixture(scope="module")
def exported(translator, tmp_path_factory):
    model, preprocessor = translator
    root = tmp_path_factory.mktemp("served")
    path = export.export_translator(
        model, preprocessor, root, max_new_tokens=16, beam_width=3
    )
    return path


SENTENCES = ["w1 w2 w3.", "w4 w5!", "w7 w8 w9 w10 w11."]

_FRESH = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the WordPiece ops)
inputs = json.loads(sys.argv[1])
outs = {}
for path in sys.argv[2:]:
    served = tf.saved_model.load(path)
    out = outs[path] = {}
    for name, fn in served.signatures.items():
        if name in ("logits", "score", "translate_with_controls"):
            continue  # Not `sentences` alone.
        result = fn(sentences=tf.constant(inputs, tf.string))
        out[name] = {k: v.numpy().tolist() for k, v in result.items()}
    for group in out.values():
        for k, v in group.items():
            group[k] = json.loads(json.dumps(v, default=lambda b: b.decode("utf-8")))
print(json.dumps({"modules": sorted(sys.modules), "out": outs}))
"""


@pytest.fixture(scope="module")
def quantized(translator, tmp_path_factory):
    """The translator after `quantize("int8")` (a copy) and its export."""
    model, preprocessor = translator
    root = tmp_path_factory.mktemp("quantized")
    model.save(root / "float.keras")
    quantized = keras.saving.load_model(root / "float.keras")  # A copy.
    quantized.quantize("int8")
    path = export.export_translator(
        quantized, preprocessor, root / "served", max_new_tokens=16, beam_width=3
    )
    return quantized, path


@pytest.fixture(scope="module")
def fresh(exported, quantized):
    """`SENTENCES` through the float and the int8 export in one fresh
    process that imports only TensorFlow and TensorFlow Text: what it
    imported and, for each path, what each `sentences` signature gave."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run(
        [sys.executable, "-c", _FRESH, json.dumps(SENTENCES), exported, quantized[1]],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_layout_is_tf_serving(exported):
    assert os.path.basename(exported) == "1"
    assert os.path.isfile(os.path.join(exported, "saved_model.pb"))


def test_fresh_process_translates_like_the_model(translator, exported, fresh):
    import tensorflow as tf

    model, preprocessor = translator
    expected = inference.translate_texts(
        model, preprocessor, SENTENCES, max_new_tokens=16
    )
    assert expected[0].startswith("w1 w2")  # The copy task was learned.
    assert not any(m.split(".")[0] in ("keras_seq", "zoo") for m in fresh["modules"])
    out = fresh["out"][exported]
    assert out["serving_default"]["translations"] == expected

    # Beam search: n-best lists, best first, the best equals in-process.
    beam = out["beam_search"]
    assert np.array(beam["translations"]).shape == (3, 3)
    scores = np.array(beam["scores"])
    assert np.all(np.diff(scores, axis=1) <= 1e-6)
    ids = preprocessor.generate_preprocess(tf.constant(SENTENCES[:1]))  # (1, S)
    np.testing.assert_array_equal(ids, out["tokenize"]["token_ids"][:1])
    best, best_scores = model.beam_search(ids, 16, beam_width=3, num_return=3)
    assert beam["translations"][0] == preprocessor.detokenize(np.asarray(best)[0])
    np.testing.assert_allclose(scores[0], np.asarray(best_scores)[0], atol=1e-4)


def test_bad_input_comes_back_as_results(exported):
    import tensorflow as tf

    served = tf.saved_model.load(exported)
    translate = served.signatures["serving_default"]
    inputs = tf.constant(
        [b"", b"   ", ("w1 " * 3400).encode(), b"w1 \xff\xfe w2.", "w3 ☃ ü.".encode()]
    )
    out = translate(sentences=inputs)["translations"].numpy()
    assert out.shape == (5,)
    assert out[0] == b"" and out[1] == b""
    assert out[2].startswith(b"w1")  # 10,200 characters, truncated.
    for row in out[3:]:
        row.decode("utf-8")  # Valid UTF-8, whatever came in.
    empty = translate(sentences=tf.zeros([0], tf.string))["translations"]
    assert empty.shape == (0,)
    beams = served.signatures["beam_search"](sentences=tf.zeros([0], tf.string))
    assert beams["translations"].shape == (0, 3) and beams["scores"].shape == (0, 3)


def test_a_translator_decodes_from_its_own_start_id(translator, tmp_path):
    """A translator built with `decoder_start_token_id` (an imported Marian
    checkpoint's) greedy-decodes and beam-searches from it in the graph, as
    `generate` and `beam_search` do in process."""
    import tensorflow as tf

    _, preprocessor = translator
    keras.utils.set_random_seed(3)
    model = zoo.build_translator(
        "tiny", vocabulary_size=len(VOCABULARY), decoder_start_token_id=7
    )
    rng = np.random.default_rng(4)
    for variable in model.weights:  # Spread logits, so the start id shows.
        if variable.path.endswith(("token_embedding/embeddings", "logits/bias")):
            variable.assign(rng.normal(size=variable.shape).astype("float32"))
    path = export.export_translator(
        model, preprocessor, tmp_path / "served", max_new_tokens=6, beam_width=2
    )
    served = tf.saved_model.load(path).signatures
    sentences = tf.constant(SENTENCES)
    ids = served["tokenize"](sentences=sentences)["token_ids"].numpy()
    greedy = served["serving_default"](sentences=sentences)["translations"]
    want = keras.ops.convert_to_numpy(model.generate(ids, 6))
    from_start = keras.ops.convert_to_numpy(
        model.generate(ids, 6, start_token_id=text.START_ID)
    )
    assert not np.array_equal(want, from_start)  # The start id matters here.
    assert [t.decode() for t in greedy.numpy()] == [
        preprocessor.detokenize(row) for row in want
    ]
    beams = served["beam_search"](sentences=sentences)
    best, scores = model.beam_search(ids, 6, beam_width=2, num_return=2)
    np.testing.assert_allclose(beams["scores"].numpy(), scores, atol=1e-4)
    assert [t.decode() for t in beams["translations"].numpy()[:, 0]] == [
        preprocessor.detokenize(row) for row in np.asarray(best)[:, 0]
    ]


def test_the_score_signature_scores_as_the_trained_model(translator, exported):
    """Per target token, the log-probability `TrainedModel.score` gives it
    (`[END]` appended), in the graph, with padding 0; a batch whose two
    inputs differ in size is refused in the graph."""
    import tensorflow as tf

    model, preprocessor = translator
    served = tf.saved_model.load(exported)
    score = served.signatures["score"]
    targets = ["w1 w2 w3.", "w4 w4 w4 w4!", ""]
    got = score(sentences=tf.constant(SENTENCES), targets=tf.constant(targets))
    expected = inference.score_texts(model, preprocessor, SENTENCES, targets)
    vocabulary = preprocessor.target_tokenizer.get_vocabulary()
    token_scores = got["token_log_probs"].numpy()
    assert token_scores.shape == (3, 16)
    for row, scored in enumerate(expected):
        length = len(scored.tokens)
        ids = got["target_ids"].numpy()[row]
        assert [vocabulary[i] for i in ids[:length]] == scored.tokens
        assert not ids[length:].any() and not token_scores[row, length:].any()
        np.testing.assert_allclose(
            token_scores[row, :length], scored.log_probs, atol=1e-4
        )
        assert got["log_prob"].numpy()[row] == pytest.approx(scored.log_prob, abs=1e-4)
    # The copy the model learned is likelier than a wrong target.
    assert expected[0].log_prob > expected[1].log_prob
    with pytest.raises(tf.errors.InvalidArgumentError, match="one string per sentence"):
        score(sentences=tf.constant(SENTENCES), targets=tf.constant(targets[:2]))
    empty = score(sentences=tf.zeros([0], tf.string), targets=tf.zeros([0], tf.string))
    assert empty["log_prob"].shape == (0,) and empty["token_log_probs"].shape == (0, 16)


def test_the_controls_signature_translates_as_the_trained_model(translator, exported):
    """Each sentence under its own controls (a batch merges requests that
    ask for different ones), as `translate_texts` gives it greedily; the
    defaults ("", 0, 1) give `serving_default`'s translations; values out
    of range are refused in the graph."""
    import tensorflow as tf

    model, preprocessor = translator
    served = tf.saved_model.load(exported)
    controlled = served.signatures["translate_with_controls"]
    sentences = SENTENCES + ["w4 w4 w4 w5 w4 w4."]
    prefixes = ["w9 w9", "", "w7", ""]
    minimums = [0, 12, 3, 0]
    penalties = [1.0, 1.0, 0.5, 50.0]

    def call(sentences, prefixes, minimums, penalties):
        return controlled(
            sentences=tf.constant(sentences, tf.string),
            target_prefix=tf.constant(prefixes, tf.string),
            min_new_tokens=tf.constant(minimums, tf.int32),
            repetition_penalty=tf.constant(penalties, tf.float32),
        )["translations"].numpy()

    got = [t.decode() for t in call(sentences, prefixes, minimums, penalties)]
    for row, sentence in enumerate(sentences):
        [expected] = inference.translate_texts(
            model, preprocessor, [sentence], max_new_tokens=16,
            target_prefix=[prefixes[row]], min_new_tokens=minimums[row],
            repetition_penalty=penalties[row],
        )  # fmt: skip
        assert got[row] == expected, row
    plain = inference.translate_texts(model, preprocessor, sentences, max_new_tokens=16)
    assert got[0].startswith("w9 w9") and not plain[0].startswith("w9")
    assert len(got[1].split()) > len(plain[1].split())  # Held past its end.
    assert got[3] != plain[3]  # The penalty turned the copy of repeats away.
    defaults = call(sentences, [""] * 4, [0] * 4, [1.0] * 4)
    greedy = served.signatures["serving_default"](sentences=tf.constant(sentences))
    np.testing.assert_array_equal(defaults, greedy["translations"].numpy())

    # The messages `TrainedModel.translate` gives in process.
    bad = [
        (
            ([-1, 0, 0, 0], penalties),
            "`min_new_tokens` must be at least 0; received -1",
        ),
        (([0, 17, 0, 0], penalties), r"at most 16 \(max_new_tokens\); received 17"),
        ((minimums, [1.0, 0.0, 1.0, 1.0]), "`repetition_penalty` must be a finite"),
        ((minimums, [1.0, float("nan"), 1.0, 1.0]), "above 0; received nan"),
    ]
    for (low, penalty), message in bad:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            call(sentences, prefixes, low, penalty)
    with pytest.raises(tf.errors.InvalidArgumentError, match="`target_prefix` must"):
        call(sentences, prefixes[:2], minimums, penalties)
    assert call([], [], [], []).shape == (0,)


def test_logits_signature_matches_the_model(translator, exported):
    import tensorflow as tf

    model, _ = translator
    served = tf.saved_model.load(exported)
    source = np.array([[5, 6, 7, 0], [8, 9, 0, 0]], "int32")
    target = np.array([[2, 5, 6], [2, 8, 9]], "int32")
    got = served.signatures["logits"](
        encoder_token_ids=tf.constant(source), decoder_token_ids=tf.constant(target)
    )["logits"]
    want = model({"encoder_token_ids": source, "decoder_token_ids": target})
    np.testing.assert_allclose(got.numpy(), np.asarray(want), atol=1e-5)


def _saved_model_cli(*args):
    """TensorFlow's `saved_model_cli`, with TensorFlow Text's ops loaded
    first (the console script cannot load op libraries by itself)."""
    launcher = (
        "import sys, tensorflow_text; "
        "from tensorflow.python.tools.saved_model_cli import main; "
        "sys.argv[0] = 'saved_model_cli'; sys.exit(main())"
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run(
        [sys.executable, "-c", launcher, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_saved_model_cli_shows_and_runs(translator, exported):
    model, preprocessor = translator
    shown = _saved_model_cli("show", "--dir", exported, "--all")
    assert shown.returncode == 0, shown.stderr[-2000:]
    for name in ("serving_default", "beam_search", "tokenize", "logits"):
        assert f"signature_def['{name}']" in shown.stdout
    run = _saved_model_cli(
        "run", "--dir", exported, "--tag_set", "serve",
        "--signature_def", "serving_default",
        "--input_exprs", f"sentences=[{SENTENCES[0]!r}]",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    expected = inference.translate_texts(
        model, preprocessor, SENTENCES[:1], max_new_tokens=16
    )[0]
    assert repr(expected.encode())[2:-1] in run.stdout


def test_export_refuses_an_existing_version_and_other_backends(translator, exported):
    model, preprocessor = translator
    with pytest.raises(ValueError, match="already holds version 1"):
        export.export_translator(model, preprocessor, os.path.dirname(exported))
    with pytest.raises(ValueError, match="`version` must be an int >= 1"):
        export.export_translator(model, preprocessor, "/tmp/x", version=0)
    with pytest.raises(TypeError, match="`preprocessor` must be a `keras_seq.text"):
        export.export_translator(model, preprocessor.source_tokenizer, "/tmp/x")
    longer = text.TranslationPreprocessor(preprocessor.source_tokenizer, max_length=64)
    with pytest.raises(ValueError, match="cuts sequences to 64 tokens; the model"):
        export.export_translator(model, longer, "/tmp/x")


def test_classifier_serves_labels_and_probabilities(tmp_path):
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    # The names of a run trained on text labels, kept by its preprocessor.
    preprocessor = text.ClassificationPreprocessor(
        text.make_tokenizer(VOCABULARY), 16, class_names=["negative", "positive"]
    )
    model = zoo.build_classifier("tiny", vocabulary_size=len(VOCABULARY))
    path = export.export_classifier(model, preprocessor, tmp_path)
    texts = ["w1 w2.", "w3 w4 w5!", ""]
    expected = inference.classify_texts(model, preprocessor, texts)
    out = tf.saved_model.load(path).signatures["serving_default"](
        texts=tf.constant(texts)
    )
    np.testing.assert_allclose(out["probabilities"].numpy(), expected, atol=1e-5)
    names = np.array([b"negative", b"positive"])[expected.argmax(-1)]
    np.testing.assert_array_equal(out["label"].numpy(), names)


def test_language_model_serves_continuations(tmp_path):
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    model = zoo.build_language_model("tiny", vocabulary_size=len(VOCABULARY))
    preprocessor = text.LanguageModelPreprocessor(
        text.make_tokenizer(VOCABULARY), model.max_length
    )
    path = export.export_language_model(model, preprocessor, tmp_path, max_new_tokens=8)
    prompts = ["w1 w2 w3", "w4 w5 w6"]  # One length: no padding in the batch.
    ids = preprocessor.prompt_ids(prompts, max_new_tokens=8)
    expected = preprocessor.detokenize(
        np.asarray(model.generate(ids, max_new_tokens=8))
    )
    out = (
        tf.saved_model.load(path)
        .signatures["serving_default"](prompts=tf.constant(prompts + [""]))[
            "continuations"
        ]
        .numpy()
    )
    assert [s.decode() for s in out[:2]] == expected
    assert out.shape == (3,)


def _refusal(signature, **inputs):
    """The first line of the error a served signature raises, as a server
    answers it (`zoo.serving`'s 400)."""
    import tensorflow as tf

    from zoo.serving.batching import _as_request_error

    with pytest.raises(tf.errors.InvalidArgumentError) as caught:
        signature(**{k: tf.constant(v, tf.int32) for k, v in inputs.items()})
    error = _as_request_error(caught.value)
    assert error.status == 400
    return error.message


def _in_process_refusal(model, inputs):
    with pytest.raises(ValueError) as caught:
        model.predict(inputs, verbose=0)
    return str(caught.value)


def test_served_logits_refuse_ids_out_of_range_and_too_long(exported, tmp_path):
    """Negative ids, ids past the vocabulary and sequences past max_length
    are refused in the graph, with the message the model gives in process."""
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    size = len(VOCABULARY)
    classifier = zoo.build_classifier("tiny", vocabulary_size=size)
    preprocessor = text.ClassificationPreprocessor(text.make_tokenizer(VOCABULARY), 16)
    served = tf.saved_model.load(
        export.export_classifier(classifier, preprocessor, tmp_path)
    )
    logits = served.signatures["logits"]
    for ids in ([[-5, 6, 7]], [[5, size, 7]]):
        message = _refusal(logits, token_ids=ids)
        expected = _in_process_refusal(classifier, np.asarray(ids, "int32"))
        assert message == f"assertion failed: [{expected}]"
    assert "received values in [-5, 7]." in _refusal(logits, token_ids=[[-5, 6, 7]])
    too_long = _refusal(logits, token_ids=np.ones((1, 5000), "int32"))
    assert too_long == (
        "assertion failed: [`token_ids` reaches past `max_length`: positions up "
        "to max_length=32 are supported; received sequence length 5000 starting "
        "at position 0, which needs 5000 positions.]"
    )
    good = logits(token_ids=tf.constant([[5, 6, 7]]))["logits"]
    np.testing.assert_allclose(good, classifier.predict(np.array([[5, 6, 7]])), 1e-5)

    translator_served = tf.saved_model.load(exported)
    message = _refusal(
        translator_served.signatures["logits"],
        encoder_token_ids=[[5, 6, -1]],
        decoder_token_ids=[[2, 5]],
    )
    assert message.startswith(
        "assertion failed: [`encoder_token_ids` must lie in [0, 38) "
        "(source_vocabulary_size=38); received values in [-1, 6].]"
    )


def test_quantized_translator_serves_its_own_ids(
    translator, exported, quantized, fresh
):
    """A translator after `quantize("int8")` exports, and the SavedModel, in a
    fresh process, translates as the quantized model does in process."""
    _, preprocessor = translator
    quantized, path = quantized
    expected = inference.translate_texts(
        quantized, preprocessor, SENTENCES, max_new_tokens=16
    )
    assert expected[0].startswith("w1 w2")  # Still a copy after quantization.
    out = fresh["out"][path]
    assert out["serving_default"]["translations"] == expected
    ids = np.asarray(out["tokenize"]["token_ids"])
    best, scores = quantized.beam_search(ids, 16, beam_width=3, num_return=3)
    served = out["beam_search"]
    assert served["translations"][0] == preprocessor.detokenize(np.asarray(best)[0])
    np.testing.assert_allclose(served["scores"], np.asarray(scores), atol=1e-4)
    # The served variables are the int8 weights, not float copies of them
    # (`exported` is the same model's float export, with the same options).
    float_size = _directory_size(os.path.join(exported, "variables"))
    assert _directory_size(os.path.join(path, "variables")) < 0.6 * float_size


def _directory_size(path):
    return sum(
        os.path.getsize(os.path.join(folder, name))
        for folder, _, names in os.walk(path)
        for name in names
    )


def test_the_readme_says_what_loading_needs(exported):
    """Loading without `import tensorflow_text` fails with an op name; the
    README beside `saved_model.pb` names that op among the WordPiece ops it
    lists, the import that registers them and every signature the directory
    holds."""
    import tensorflow as tf

    text_readme = saved_models.readme(exported)
    served = tf.saved_model.load(exported)
    listed = text_readme.split("Signatures: ", 1)[1].split(".\n", 1)[0].split(", ")
    assert sorted(listed) == sorted(served.signatures)
    assert "import tensorflow_text" in text_readme and tf.__version__ in text_readme
    ops = text_readme.split("TensorFlow Text's ops (", 1)[1].split(")", 1)[0]
    assert "FastWordpieceTokenizeWithOffsets" in ops.split(", ")
    assert not any(op.startswith("Sentencepiece") for op in ops.split(", "))

    error = saved_models.load_without_text_ops(exported)
    assert error.startswith("Op type not registered '"), error
    assert error.split("'")[1] in ops.split(", ")
