"""A translator whose weights favour [PAD], [START] and [MASK] answers the
same ids and strings on every path, none of them holding those tokens:
in-process decoding (what `TrainedModel.translate` runs), the SavedModel,
CTranslate2, and both servers."""

import keras
import numpy as np
import pytest

import zoo
from keras_seq import export, text
from keras_seq.text.vocabulary import END_ID
from tests.zoo.serving.http_client import call
from zoo.recipes.inference import score_texts, translate_texts
from zoo.serving import ModelServer

ctranslate2 = pytest.importorskip("ctranslate2")

from zoo.serving.ctranslate2_model import (  # noqa: E402
    CTranslate2Model,
    CTranslate2Servable,
)

WORDS = [f"w{i}" for i in range(30)] + [".", "!", "?"]
VOCABULARY = list(text.RESERVED_TOKENS) + WORDS
SPECIAL = [VOCABULARY.index(t) for t in ("[PAD]", "[START]", "[MASK]")]
SENTENCES = ["w1 w2 w3.", "w4 w5!", "w6 w7 w8 w9 w10?", "w11", "w12 w13 w14."]


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    """The favouring model, its preprocessor, its SavedModel and its
    CTranslate2 export, each made once."""
    keras.utils.set_random_seed(0)
    model = zoo.build_translator(
        "tiny", vocabulary_size=len(VOCABULARY), model_dim=16, ff_dim=32, max_length=8
    )
    bias = next(v for v in model.weights if v.path == "logits/bias")
    values = np.zeros(bias.shape, "float32")
    # [PAD] first, [START] second, [MASK] third at every step: each one
    # left unsuppressed would be written.
    values[SPECIAL] = [30.0, 29.0, 28.0]
    bias.assign(values)
    preprocessor = text.TranslationPreprocessor(
        text.make_tokenizer(VOCABULARY), max_length=model.max_length
    )
    root = tmp_path_factory.mktemp("special")
    saved = export.export_translator(model, preprocessor, root / "saved")
    preprocessor.save(root / "preprocessor")
    from keras_seq.export.ctranslate2 import export_ctranslate2

    ct2 = export_ctranslate2(model, root / "preprocessor", root / "ct2")
    return model, preprocessor, str(saved), str(ct2)


def _ids(generated):
    rows = keras.ops.convert_to_numpy(generated).tolist()
    return [row[: row.index(END_ID)] if END_ID in row else row for row in rows]


def test_the_bias_would_write_them_unsuppressed(paths):
    model, preprocessor, _, _ = paths
    source = preprocessor.generate_preprocess(SENTENCES)
    model.unsamplable_token_ids = ()
    try:
        ids = keras.ops.convert_to_numpy(model.generate(source))
    finally:
        del model.unsamplable_token_ids  # The class's again.
    assert np.isin(ids, SPECIAL).all()


def test_every_path_gives_the_same_ids_and_strings_without_them(paths):
    import tensorflow as tf

    model, preprocessor, saved, ct2 = paths
    assert tuple(model.unsamplable_token_ids) == tuple(SPECIAL)
    source = preprocessor.generate_preprocess(SENTENCES)
    greedy_ids = _ids(model.generate(source))
    beam_ids = _ids(model.generate(source, strategy="beam"))
    for rows in (greedy_ids, beam_ids):
        assert not any(set(row) & set(SPECIAL) for row in rows), rows
        assert any(rows)  # Not only empty translations.
    engine = CTranslate2Model(ct2)
    rows = [list(r[r > 0]) for r in keras.ops.convert_to_numpy(source)]
    assert engine.translate_ids(rows) == greedy_ids
    assert engine.translate_ids(rows, beam_width=4) == beam_ids

    expected = {
        "greedy": translate_texts(model, preprocessor, SENTENCES),
        # `TrainedModel.translate`'s default decoding.
        "beam": translate_texts(model, preprocessor, SENTENCES, strategy="beam"),
    }
    for strings in expected.values():
        assert not any("[" in s for s in strings), strings
    signatures = tf.saved_model.load(saved).signatures
    batch = tf.constant(SENTENCES)
    got = {
        "greedy": signatures["serving_default"](sentences=batch)["translations"],
        "beam": signatures["beam_search"](sentences=batch)["translations"][:, 0],
    }
    assert {k: [s.decode() for s in v.numpy()] for k, v in got.items()} == expected
    assert engine.translate(SENTENCES, beam_width=1) == expected["greedy"]
    assert engine.translate(SENTENCES) == expected["beam"]

    for path, servable_class in ((saved, None), (ct2, CTranslate2Servable)):
        server = ModelServer(
            path, 1, "m", port=0, servable_class=servable_class
        ).start().load()  # fmt: skip
        try:
            url = "/v1/models/m:predict"
            status, body = call(server.url, "POST", url, {"instances": SENTENCES})
            assert status == 200 and body["predictions"] == expected["greedy"], path
            request = {"signature_name": "beam_search", "instances": SENTENCES}
            status, body = call(server.url, "POST", url, request)
            assert status == 200
            best = [p["translations"][0] for p in body["predictions"]]
            assert best == expected["beam"], path
            every = [t for p in body["predictions"] for t in p["translations"]]
            assert not any("[" in t for t in every), every
        finally:
            server.stop(grace=5)


def test_both_servers_serve_the_score_signature(paths):
    """`score` over TF Serving's API: the SavedModel's figures are
    `score_texts`'s, which rule the reserved tokens out as decoding does;
    CTranslate2's `score_batch` rules out none, so on weights that favour
    them its targets are far less likely. A columnar request whose inputs
    differ in length is refused by the server (400) before either model."""
    model, preprocessor, saved, ct2 = paths
    targets = ["w1 w2.", "", "w3", "w4 w5 w6", "w7"]
    ruled_out = score_texts(model, preprocessor, SENTENCES, targets)
    every_id = CTranslate2Model(ct2).score(SENTENCES, targets)
    for ours, theirs in zip(ruled_out, every_id):
        assert ours.tokens == theirs.tokens and ours.tokens[-1] == "[END]"
        assert theirs.log_prob < ours.log_prob - 10 * len(ours.tokens)
    url = "/v1/models/m:predict"
    rows = [{"sentences": s, "targets": t} for s, t in zip(SENTENCES, targets)]
    for path, servable_class, expected in (
        (saved, None, ruled_out),
        (ct2, CTranslate2Servable, every_id),
    ):
        server = ModelServer(
            path, 1, "m", port=0, servable_class=servable_class
        ).start().load()  # fmt: skip
        try:
            request = {"signature_name": "score", "instances": rows}
            status, body = call(server.url, "POST", url, request)
            assert status == 200, body
            got = [p["log_prob"] for p in body["predictions"]]
            np.testing.assert_allclose(
                got, [e.log_prob for e in expected], rtol=1e-4, atol=1e-3
            )
            first = body["predictions"][0]["token_log_probs"]
            np.testing.assert_allclose(
                first[: len(expected[0].log_probs)], expected[0].log_probs, atol=1e-3
            )
            columns = {"sentences": SENTENCES, "targets": targets[:2]}
            request = {"signature_name": "score", "inputs": columns}
            status, body = call(server.url, "POST", url, request)
            assert status == 400, body
            assert body["error"] == "the inputs of 'inputs' differ in their batch size"
        finally:
            server.stop(grace=5)


def test_both_servers_translate_under_each_sentences_controls(paths):
    """`translate_with_controls` over TF Serving's API: each sentence under
    its own prefix, minimum length and penalty, merged in one batch, as
    `translate_texts` (the SavedModel) and `CTranslate2Model.translate`
    give it one sentence at a time; a request may leave out the controls
    (`keras-seq serve` fills their defaults), and a value out of range is
    the client's 400."""
    model, preprocessor, saved, ct2 = paths
    prefixes = ["w9", "", "w3 w4", "", ""]
    minimums = [0, 0, 2, 5, 0]
    penalties = [1.0, 1.8, 1.8, 1.8, 0.6]
    expected = [
        translate_texts(
            model, preprocessor, [s], target_prefix=[p], min_new_tokens=m,
            repetition_penalty=r,
        )[0]
        for s, p, m, r in zip(SENTENCES, prefixes, minimums, penalties)
    ]  # fmt: skip
    engine = CTranslate2Model(ct2)
    assert expected == [
        engine.translate([s], beam_width=1, target_prefix=p, min_new_tokens=m,
                         repetition_penalty=r)[0]
        for s, p, m, r in zip(SENTENCES, prefixes, minimums, penalties)
    ]  # fmt: skip
    plain = translate_texts(model, preprocessor, SENTENCES)
    assert expected[0].startswith("w9") and not plain[0].startswith("w9")
    # This model never ends unpenalised; the penalty ends its rows early,
    # and a minimum holds one past that.
    assert len(expected[1].split()) < len(plain[1].split())
    [penalised] = translate_texts(
        model, preprocessor, SENTENCES[3:4], repetition_penalty=1.8
    )
    assert len(expected[3].split()) >= 5 > len(penalised.split())
    url = "/v1/models/m:predict"
    rows = [
        {"sentences": s, "target_prefix": p, "min_new_tokens": m,
         "repetition_penalty": r}
        for s, p, m, r in zip(SENTENCES, prefixes, minimums, penalties)
    ]  # fmt: skip
    for path, servable_class in ((saved, None), (ct2, CTranslate2Servable)):
        server = ModelServer(
            path, 1, "m", port=0, servable_class=servable_class
        ).start().load()  # fmt: skip
        try:
            request = {"signature_name": "translate_with_controls", "instances": rows}
            status, body = call(server.url, "POST", url, request)
            assert (status, body) == (200, {"predictions": expected}), path
            # Controls left out take their defaults: the plain greedy output.
            for instances in (
                [{"sentences": s} for s in SENTENCES],
                SENTENCES,
                [{"sentences": s, "min_new_tokens": 0} for s in SENTENCES],
            ):
                request = {
                    "signature_name": "translate_with_controls",
                    "instances": instances,
                }
                status, body = call(server.url, "POST", url, request)
                assert (status, body) == (200, {"predictions": plain}), path
            columns = {"sentences": SENTENCES[:2], "target_prefix": prefixes[:2]}
            request = {"signature_name": "translate_with_controls", "inputs": columns}
            status, body = call(server.url, "POST", url, request)
            assert status == 200 and body["outputs"][0] == expected[0], body
            for bad, message in (
                (
                    {"min_new_tokens": -1},
                    "`min_new_tokens` must be at least 0; received -1",
                ),
                ({"repetition_penalty": 0.0}, "`repetition_penalty` must be a finite"),
                ({"min_new_tokens": 1.5}, "expected an integer (int32)"),
            ):
                request = {
                    "signature_name": "translate_with_controls",
                    "instances": [{"sentences": SENTENCES[0], **bad}],
                }
                status, body = call(server.url, "POST", url, request)
                assert status == 400 and message in body["error"], (path, body)
        finally:
            server.stop(grace=5)
