"""TF Serving's REST API over an exported translator: the answers are the
SavedModel's own, shaped as `api_rest.md` shapes them."""

import socket

import numpy as np
import pytest
import tensorflow as tf

from tests.zoo.serving import exports
from tests.zoo.serving.conftest import NAME
from tests.zoo.serving.http_client import call
from zoo.serving import ModelServer
from zoo.serving import server as server_module

SENTENCES = ["w1 w2 w3.", "w4 w5!", "w7 w8 w9 w10 w11."]
PREDICT = f"/v1/models/{NAME}:predict"


@pytest.fixture(scope="module")
def direct(server):
    """The loaded signatures called in process: what the server must answer."""
    batch = tf.constant(SENTENCES)
    return {
        name: {
            key: value.numpy()
            for key, value in server.servable.signatures[name]
            .function(sentences=batch)
            .items()
        }
        for name in ("serving_default", "beam_search")
    }


def _text(array):
    return np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(array).tolist()


def test_status_says_available_for_the_highest_version(server):
    status, body = call(server.url, path=f"/v1/models/{NAME}")
    assert status == 200
    assert body == {
        "model_version_status": [
            {
                "version": "2",
                "state": "AVAILABLE",
                "status": {"error_code": "OK", "error_message": ""},
            }
        ]
    }
    assert call(server.url, path=f"/v1/models/{NAME}/versions/2")[0] == 200
    status, body = call(server.url, path=f"/v1/models/{NAME}/versions/1")
    assert status == 404 and "Servable not found" in body["error"]


def test_metadata_lists_every_signature_def(server):
    status, body = call(server.url, path=f"/v1/models/{NAME}/metadata")
    assert status == 200
    assert body["model_spec"] == {"name": NAME, "signature_name": "", "version": "2"}
    defs = body["metadata"]["signature_def"]["signature_def"]
    assert {"serving_default", "beam_search", "logits"} <= set(defs)
    beam = defs["beam_search"]
    assert beam["inputs"]["sentences"]["dtype"] == "DT_STRING"
    assert beam["outputs"]["scores"]["tensor_shape"]["dim"][1]["size"] == str(
        exports.BEAM_WIDTH
    )
    assert beam["method_name"] == "tensorflow/serving/predict"


def test_greedy_row_and_columnar_formats(server, direct):
    expected = _text(direct["serving_default"]["translations"])
    status, body = call(server.url, "POST", PREDICT, {"instances": SENTENCES})
    assert (status, body) == (200, {"predictions": expected})
    # Columnar, with the input named, and on the versioned route.
    path = f"/v1/models/{NAME}/versions/2:predict"
    status, body = call(server.url, "POST", path, {"inputs": {"sentences": SENTENCES}})
    assert (status, body) == (200, {"outputs": expected})
    # b64 strings are bytes, as TF Serving reads them.
    instances = [{"b64": "dzEgdzIgdzMu"}]  # base64 of "w1 w2 w3."
    body = call(server.url, "POST", PREDICT, {"instances": instances})[1]
    assert body == {"predictions": expected[:1]}


def test_beam_search_n_best_lists_with_scores(server, direct):
    translations = _text(direct["beam_search"]["translations"])
    scores = direct["beam_search"]["scores"]
    request = {"signature_name": "beam_search", "instances": SENTENCES}
    status, body = call(server.url, "POST", PREDICT, request)
    assert status == 200
    assert [p["translations"] for p in body["predictions"]] == translations
    got = np.array([p["scores"] for p in body["predictions"]])
    np.testing.assert_allclose(got, scores, rtol=1e-6)
    assert got.shape == (3, exports.BEAM_WIDTH)
    assert np.all(np.diff(got, axis=1) <= 1e-6)  # Best first.
    request = {"signature_name": "beam_search", "inputs": SENTENCES}
    body = call(server.url, "POST", PREDICT, request)[1]
    assert body["outputs"]["translations"] == translations
    np.testing.assert_allclose(body["outputs"]["scores"], scores, rtol=1e-6)


def test_logits_signature_takes_named_token_ids(server):
    encoder = [[5, 6, 7], [8, 9, 0]]
    decoder = [[1, 5], [1, 6]]
    expected = (
        server.servable.signatures["logits"]
        .function(
            encoder_token_ids=tf.constant(encoder),
            decoder_token_ids=tf.constant(decoder),
        )["logits"]
        .numpy()
    )
    instances = [
        {"encoder_token_ids": e, "decoder_token_ids": d}
        for e, d in zip(encoder, decoder)
    ]
    request = {"signature_name": "logits", "instances": instances}
    status, body = call(server.url, "POST", PREDICT, request)
    assert status == 200
    np.testing.assert_allclose(body["predictions"], expected, rtol=1e-5, atol=1e-6)
    request = {
        "signature_name": "logits",
        "inputs": {"encoder_token_ids": encoder, "decoder_token_ids": decoder},
    }
    body = call(server.url, "POST", PREDICT, request)[1]
    np.testing.assert_allclose(body["outputs"], expected, rtol=1e-5, atol=1e-6)


def test_classifier_and_language_model(tmp_path):
    """Several outputs: objects per row; one output: its values."""
    classifier = exports.export_classifier(tmp_path / "classifier")
    language_model = exports.export_language_model(tmp_path / "language_model")
    texts = ["w1 w2.", "w3 w4 w5!"]
    for path, name, key in (
        (classifier, "classifier", "texts"),
        (language_model, "language_model", "prompts"),
    ):
        direct = tf.saved_model.load(path).signatures["serving_default"](
            **{key: tf.constant(texts)}
        )
        server = ModelServer(path, 1, name, port=0).start().load()
        try:
            status, body = call(
                server.url, "POST", f"/v1/models/{name}:predict", {"instances": texts}
            )
        finally:
            server.stop(grace=5)
        assert status == 200
        if name == "classifier":
            assert (
                body["predictions"][1]["label"] == direct["label"].numpy()[1].decode()
            )
            assert body["predictions"][0]["label_id"] == direct["label_id"].numpy()[0]
            np.testing.assert_allclose(
                [p["probabilities"] for p in body["predictions"]],
                direct["probabilities"].numpy(),
                rtol=1e-6,
            )
        else:
            assert body["predictions"] == _text(direct["continuations"].numpy())


def test_answers_leave_without_waiting_for_an_acknowledgement(server, monkeypatch):
    # An answer is two writes (headers, body): under Nagle's algorithm the
    # body would wait for the client's delayed acknowledgement of the
    # headers on every kept-alive request.
    delays = []
    setup = server_module._Handler.setup

    def recording_setup(handler):
        setup(handler)
        option = (socket.IPPROTO_TCP, socket.TCP_NODELAY)
        delays.append(handler.connection.getsockopt(*option))

    monkeypatch.setattr(server_module._Handler, "setup", recording_setup)
    status, _ = call(server.url, path=f"/v1/models/{NAME}")
    assert status == 200
    assert delays and all(delays)
