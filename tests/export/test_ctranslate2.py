"""CTranslate2 export: the same numbers as the Keras model, without TensorFlow.

A tiny translator with random weights (biases and norms drawn too, so that
each mapped weight matters) is exported; CTranslate2's teacher-forced
log-probabilities must equal the model's, its greedy ids and its n-best
lists at 4 beams (length penalty 0) those of `model.generate`, and
`keras-seq translate --ctranslate2` must print the preprocessor's
detokenized `generate` output in a process that never imports TensorFlow
or Keras.
"""

import itertools
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import keras
import numpy as np
import pytest

import zoo
from keras_seq.text import RESERVED_TOKENS, TranslationPreprocessor, make_tokenizer
from keras_seq.text.vocabulary import END_ID, START_ID

ctranslate2 = pytest.importorskip("ctranslate2")

from keras_seq.export.ctranslate2 import export_ctranslate2  # noqa: E402
from zoo.serving.ctranslate2_model import CTranslate2Model  # noqa: E402

WORDS = ["ich", "du", "er", "sie", "wir", "sehe", "rufe", "kenne", "mag", "!", "."]
WORDS += ["i", "you", "he", "she", "we", "see", "call", "know", "like", "##s"]
VOCABULARY = list(RESERVED_TOKENS) + WORDS
V = len(VOCABULARY)
MAX_LENGTH = 10


def _randomize(model, seed):
    """Every weight drawn at a scale that makes decoding choices differ."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        scale = 1.0 if "embeddings" in variable.path else 0.4
        values = rng.normal(0.0, scale, variable.shape)
        if variable.path.endswith("gamma"):
            values = 1.0 + 0.2 * values
        variable.assign(values.astype("float32"))
    bias = next((v for v in model.weights if v.path == "logits/bias"), None)
    if bias is not None:
        # Reserved tokens other than [END] are never chosen by a trained
        # model; keeping them out keeps the comparison about the weights.
        values = np.asarray(bias.numpy()).copy()
        values[[i for i in range(len(RESERVED_TOKENS)) if i != END_ID]] = -30.0
        bias.assign(values)


def _build(seed=0, **overrides):
    keras.utils.set_random_seed(seed)
    options = dict(
        source_vocabulary_size=V,
        target_vocabulary_size=V,
        max_length=MAX_LENGTH,
        num_encoder_layers=2,
        num_decoder_layers=2,
    )
    model = zoo.build_translator("tiny", **{**options, **overrides})
    _randomize(model, seed)
    return model


@pytest.fixture(scope="module")
def preprocessor_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("preprocessor")
    tokenizer = make_tokenizer(VOCABULARY)
    TranslationPreprocessor(tokenizer, max_length=MAX_LENGTH).save(directory)
    return directory


@pytest.fixture(scope="module")
def exported(preprocessor_dir, tmp_path_factory):
    """A post-norm translator with output biases, and its export."""
    model = _build(seed=3)
    out = tmp_path_factory.mktemp("ct2") / "model"
    export_ctranslate2(model, preprocessor_dir, out)
    return model, out


SOURCES = np.array(
    [
        [5, 10, 5, 0, 0, 0],
        [7, 11, 14, 15, 6, 0],
        [8, 9, 12, 13, 5, 6],
        [15, 0, 0, 0, 0, 0],
    ],
    "int32",
)


def _tokens(rows):
    return [[VOCABULARY[i] for i in row if i] for row in rows]


def _until_end(row):
    row = list(row)
    return row[: row.index(END_ID)] if END_ID in row else row


@pytest.mark.parametrize(
    "norm_first, tie_embeddings, positional, attention_bias, epsilon",
    [
        (n, t, p, b, e)
        for (n, t, p), b, e in zip(
            itertools.product([False, True], [False, True], ["sinusoidal", "learned"]),
            [True, False] * 4,
            [1e-5, 1e-3, 1e-5, 1e-3, 1e-3, 1e-5, 1e-3, 1e-5],
        )
    ],
)
def test_teacher_forced_log_probs_equal(
    preprocessor_dir, tmp_path, norm_first, tie_embeddings, positional, attention_bias,
    epsilon,
):  # fmt: skip
    model = _build(
        seed=1,
        norm_first=norm_first,
        tie_embeddings=tie_embeddings,
        positional=positional,
        attention_bias=attention_bias,
        layer_norm_epsilon=epsilon,
    )
    export_ctranslate2(model, preprocessor_dir, tmp_path / "ct2")
    targets = np.array(
        [[5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16], [17, 18, 19, 20]]
    )
    decoder = np.concatenate([np.full((4, 1), START_ID), targets], 1).astype("int32")
    logits = keras.ops.convert_to_numpy(
        model({"encoder_token_ids": SOURCES, "decoder_token_ids": decoder})
    ).astype("float64")
    log_probs = logits - np.log(np.sum(np.exp(logits), -1, keepdims=True))
    labels = np.concatenate([targets, np.full((4, 1), END_ID)], 1)
    want = np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]

    translator = ctranslate2.Translator(str(tmp_path / "ct2"))
    results = translator.score_batch(_tokens(SOURCES), _tokens(targets))
    got = np.array([result.log_probs for result in results])
    np.testing.assert_allclose(got, want, atol=2e-4)


NEW_OPTIONS = {
    "swish, concatenated sines": {
        "activation": "swish",
        "sinusoidal_layout": "concatenated",
    },
    "gelu, tied output with logits bias": {
        "activation": "gelu",
        "tie_output_embedding": True,
        "logits_bias": True,
    },
    "tied, logits bias, unscaled": {
        "tie_embeddings": True,
        "logits_bias": True,
        "scale_embeddings": False,
    },
    "no logits bias": {"logits_bias": False},
    "decoder start id": {"decoder_start_token_id": 7},
}


@pytest.mark.parametrize("name", NEW_OPTIONS, ids=NEW_OPTIONS.keys())
def test_new_options_teacher_forced_log_probs_equal(preprocessor_dir, tmp_path, name):
    model = _build(seed=2, **NEW_OPTIONS[name])
    export_ctranslate2(model, preprocessor_dir, tmp_path / "ct2")
    targets = np.array([[5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16]])
    start = np.full((3, 1), model.default_start_token_id)
    decoder = np.concatenate([start, targets], 1).astype("int32")
    logits = keras.ops.convert_to_numpy(
        model({"encoder_token_ids": SOURCES[:3], "decoder_token_ids": decoder})
    ).astype("float64")
    log_probs = logits - np.log(np.sum(np.exp(logits), -1, keepdims=True))
    labels = np.concatenate([targets, np.full((3, 1), END_ID)], 1)
    want = np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]
    translator = ctranslate2.Translator(str(tmp_path / "ct2"))
    results = translator.score_batch(_tokens(SOURCES[:3]), _tokens(targets))
    got = np.array([result.log_probs for result in results])
    np.testing.assert_allclose(got, want, atol=2e-4)


def test_greedy_ids_equal_generate(exported):
    model, out = exported
    want = keras.ops.convert_to_numpy(model.generate(SOURCES, strategy="greedy"))
    got = CTranslate2Model(out).translate_ids([list(r[r > 0]) for r in SOURCES])
    assert got == [_until_end(row) for row in want.tolist()]
    assert any(len(row) > 1 for row in got)  # not all ended at once


def test_four_beams_best_equal_at_length_penalty_zero(exported):
    """The best of 4 beams is `beam_search`'s; CTranslate2's n-best list
    scores no lower, rank by rank: it keeps 4 live beams beside the ended
    ones, where `beam_search` lets ended ones hold their slots."""
    model, out = exported
    ids, scores = model.beam_search(
        SOURCES, beam_width=4, length_penalty=0.0, num_return=4
    )
    want = [
        [_until_end(h) for h in rows]
        for rows in keras.ops.convert_to_numpy(ids).tolist()
    ]
    translator = CTranslate2Model(out).translator
    results = translator.translate_batch(
        _tokens(SOURCES),
        beam_size=4,
        num_hypotheses=4,
        length_penalty=0.0,
        max_decoding_length=MAX_LENGTH - 1,
        min_decoding_length=0,
        return_scores=True,
    )
    got = [[[VOCABULARY.index(t) for t in h] for h in r.hypotheses] for r in results]
    assert [rows[0] for rows in got] == [rows[0] for rows in want]
    got_scores = np.array([r.scores for r in results])
    assert np.all(got_scores >= keras.ops.convert_to_numpy(scores) - 1e-4)


def test_int8_export_is_smaller_and_decodes(exported, preprocessor_dir, tmp_path):
    model, out = exported
    export_ctranslate2(model, preprocessor_dir, tmp_path / "int8", "int8")
    float32 = os.path.getsize(out / "model.bin")
    int8 = os.path.getsize(tmp_path / "int8" / "model.bin")
    assert int8 < float32
    rows = CTranslate2Model(tmp_path / "int8").translate_ids([[5, 10]])
    assert all(0 <= i < V for i in rows[0])


def test_export_writes_preprocessor_and_tokens(exported, preprocessor_dir):
    _, out = exported
    for name in ("source_vocabulary.txt", "target_vocabulary.txt", "preprocessor.json"):
        assert (out / name).read_bytes() == (preprocessor_dir / name).read_bytes()
    tokens = json.loads((out / "tokens.json").read_text())
    assert tokens["start"] == RESERVED_TOKENS[START_ID]
    config = json.loads((out / "config.json").read_text())
    assert config["decoder_start_token"] == "[START]"
    assert config["eos_token"] == "[END]"


def test_language_model_log_probs_equal(tmp_path):
    keras.utils.set_random_seed(0)
    model = zoo.build_language_model(
        "tiny", vocabulary_size=V, max_length=MAX_LENGTH, num_layers=2
    )
    _randomize(model, 5)
    (tmp_path / "vocabulary.txt").write_text("\n".join(VOCABULARY) + "\n")
    export_ctranslate2(model, tmp_path, tmp_path / "ct2")
    ids = np.array([[START_ID, 5, 9, 12, 6, 7]], "int32")
    logits = keras.ops.convert_to_numpy(model(ids)).astype("float64")
    log_probs = logits - np.log(np.sum(np.exp(logits), -1, keepdims=True))
    want = np.take_along_axis(log_probs[:, :-1], ids[:, 1:, None], -1)[0, :, 0]
    generator = ctranslate2.Generator(str(tmp_path / "ct2"))
    result = generator.score_batch([[VOCABULARY[i] for i in ids[0]]])[0]
    np.testing.assert_allclose(result.log_probs, want, atol=2e-4)


def test_other_families_refuse_in_one_line(preprocessor_dir, tmp_path):
    model = zoo.build_rnn_translator(
        "tiny", source_vocabulary_size=V, target_vocabulary_size=V
    )
    with pytest.raises(ValueError, match="Transformer translator or language model"):
        export_ctranslate2(model, preprocessor_dir, tmp_path / "rnn")


def test_one_intra_thread_by_default(exported, monkeypatch):
    # More threads than free cores made CTranslate2 many times slower.
    created = []

    def translator(*args, **kwargs):
        created.append(kwargs)
        return original(*args, **kwargs)

    original = ctranslate2.Translator
    monkeypatch.setattr(ctranslate2, "Translator", translator)
    _, out = exported
    CTranslate2Model(out)
    CTranslate2Model(out, intra_threads=2)
    assert [(k["inter_threads"], k["intra_threads"]) for k in created] == [
        (1, 1),
        (1, 2),
    ]


def test_a_keras_quantized_model_is_refused(preprocessor_dir, tmp_path):
    model = _build()
    model.quantize("int8")
    with pytest.raises(ValueError, match="`model` is quantized"):
        export_ctranslate2(model, preprocessor_dir, tmp_path / "quantized")


@pytest.mark.parametrize("value_dim", [6, 3])
def test_heads_of_two_widths_are_refused_naming_the_option(
    preprocessor_dir, tmp_path, value_dim
):
    """CTranslate2's attention has one head width; the flat spec's refusal
    names the option, and nothing is written."""
    model = _build(key_dim=4, value_dim=value_dim)
    match = (
        rf"^CTranslate2 cannot express this model: value_dim={value_dim} \(key_dim=4\)"
    )
    with pytest.raises(ValueError, match=match) as raised:
        export_ctranslate2(model, preprocessor_dir, tmp_path / "heads")
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "heads").exists()


def test_bad_quantization_and_existing_directory(exported, preprocessor_dir):
    model, out = exported
    with pytest.raises(ValueError, match="`quantization`"):
        export_ctranslate2(model, preprocessor_dir, out.parent / "q", "int3")
    with pytest.raises(ValueError, match="`output_dir`"):
        export_ctranslate2(model, preprocessor_dir, out)


SENTENCES = ["Ich sehe du!", "wir mag sie er.", ""]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _reported_modules(command, *more):
    """A script running `zoo.cli.main.main` on each command, then printing
    which of TensorFlow, Keras and keras-hub the process loaded."""
    return (
        "import sys\nfrom zoo.cli.main import main\n"
        f"status = max(main(argv) or 0 for argv in {[command, *more]!r})\n"
        "heavy = ('tensorflow', 'keras', 'keras_hub')\n"
        "loaded = [m for m in heavy if m in sys.modules]\n"
        "print('loaded:', loaded, file=sys.stderr)\n"
        "sys.exit(status or bool(loaded))\n"
    )


@pytest.fixture(scope="module")
def greedy_outputs(exported):
    """The preprocessor's text of `model.generate` for `SENTENCES`."""
    import tensorflow as tf

    model, out = exported
    preprocessor = TranslationPreprocessor.load(out)
    ids = preprocessor.generate_preprocess(tf.constant(SENTENCES[:2])).numpy()
    generated = keras.ops.convert_to_numpy(model.generate(ids, strategy="greedy"))
    return preprocessor.detokenize(generated) + [""]


def test_translate_and_score_commands_import_neither_tensorflow_nor_keras(
    exported, greedy_outputs
):
    _, out = exported
    script = _reported_modules(
        ["translate", "--ctranslate2", str(out), "--beam-width", "1", *SENTENCES],
        ["score", "--ctranslate2", str(out), "Ich sehe du!\tI see you."],
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=ROOT),
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "loaded: []" in result.stderr
    lines = result.stdout.split("\n")
    assert lines[:3] == greedy_outputs
    assert float(lines[3].split("\t")[0]) < 0, lines[3]  # `score`'s log-probability.


def _post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def test_serve_command_answers_tf_serving_requests_without_tensorflow(
    exported, greedy_outputs
):
    _, out = exported
    # Batches of 2: the 3 sentences of a request run split, answered as one.
    command = ["serve", "--ctranslate2", str(out), "--port", "0", "--model-name", "m",
               "--max-batch-size", "2", "--max-rows-per-request", "3"]  # fmt: skip
    server = subprocess.Popen(
        [sys.executable, "-c", _reported_modules(command)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=ROOT),
        cwd=ROOT,
    )
    try:
        line = server.stdout.readline()
        assert " at http://" in line, line + server.stderr.read()[-2000:]
        base = line.split(" at ")[-1].strip().rstrip("/") + "/v1/models/m"
        greedy = _post(base + ":predict", {"instances": SENTENCES})
        assert greedy == {"predictions": greedy_outputs}
        beams = _post(
            base + ":predict",
            {"signature_name": "beam_search", "inputs": {"sentences": SENTENCES}},
        )
        assert len(beams["outputs"]["translations"][0]) == 4
        assert beams["outputs"]["translations"][2] == [""] * 4
        with pytest.raises(urllib.error.HTTPError) as refused:
            _post(base + ":predict", {"instances": [*SENTENCES, "x"]})
        assert refused.value.code == 400
        assert json.loads(refused.value.read()) == {
            "error": "the request has 4 examples; the limit is 3 "
            "(--max-rows-per-request)"
        }
        with urllib.request.urlopen(base, timeout=60) as response:
            status = json.loads(response.read())
        assert status["model_version_status"][0]["state"] == "AVAILABLE"
    finally:
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=60)
    assert server.returncode == 0, err[-2000:]
    assert "loaded: []" in err
