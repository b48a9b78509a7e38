"""`keras-seq serve`'s life: one line and exit 1 for a bad directory, a bad
flag or a port in use; SIGTERM answers the requests in flight, then exit 0;
the status says START, then AVAILABLE once loaded and warm."""

import os
import signal
import socket
import subprocess
import sys
import threading

import keras
import numpy as np
import pytest

if keras.backend.backend() != "tensorflow":
    pytest.skip("serving runs SavedModels: TensorFlow", allow_module_level=True)

from tests.zoo.serving import exports  # noqa: E402
from tests.zoo.serving.http_client import call  # noqa: E402
from zoo.cli.main import main  # noqa: E402
from zoo.serving import ModelServer  # noqa: E402

TEXTS = ["w1 w2.", "w3 w4 w5!"]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A classifier: exported and loaded in seconds (no decoding loop)."""
    base = tmp_path_factory.mktemp("serve") / "sentiment"
    exports.export_classifier(base)
    return base


def _one_line(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("keras-seq: ")
    return err[0]


def test_not_a_saved_model_is_one_line(tmp_path, capsys):
    assert main(["serve", "--saved-model", str(tmp_path)]) == 1
    assert "no saved_model.pb" in _one_line(capsys)
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "saved_model.pb").write_bytes(b"not a protocol buffer")
    assert main(["serve", "--saved-model", str(tmp_path), "--port", "0"]) == 1
    assert "does not load as a SavedModel" in _one_line(capsys)


def test_port_in_use_and_bad_flags_are_one_line(base, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        assert main(["serve", "--saved-model", str(base), "--port", port]) == 1
        line = _one_line(capsys)
        assert f"--port {port}: cannot listen there" in line
        assert "in use" in line
    args = ["serve", "--saved-model", str(base), "--port", "0"]
    assert main([*args, "--max-batch-size", "0"]) == 1
    assert _one_line(capsys) == (
        "keras-seq: --max-batch-size must be an int >= 1; received 0."
    )
    assert main([*args, "--model-name", "a/b"]) == 1
    assert "--model-name must be a non-empty name" in _one_line(capsys)
    assert main(["serve", "--saved-model", str(base), "--port", "70000"]) == 1
    assert (
        _one_line(capsys) == "keras-seq: --port must be at most 65535; received 70000."
    )
    for value in ("nan", "inf", "0"):
        assert main([*args, "--request-timeout", value]) == 1
        assert _one_line(capsys).startswith(
            "keras-seq: --request-timeout must be a finite number > 0; received"
        )


def test_status_says_when_loaded_and_warm(base):
    server = ModelServer(str(base / "1"), 1, "sentiment", port=0).start()
    try:
        status, body = call(server.url, path="/v1/models/sentiment")
        assert body["model_version_status"][0]["state"] == "START"
        status, body = call(
            server.url, "POST", "/v1/models/sentiment:predict", {"instances": TEXTS}
        )
        assert status == 503 and "not yet AVAILABLE" in body["error"]
        server.load()
        status, body = call(server.url, path="/v1/models/sentiment")
        assert body["model_version_status"][0]["state"] == "AVAILABLE"
        assert server.batchers["serving_default"].calls == 1  # The warm-up.
    finally:
        server.stop(grace=5)
    assert server.state == "END"


# `keras-seq serve` in a fresh process that says on stdout when the server
# has admitted a request (found the model AVAILABLE; from then on stop()
# waits for its answer), so that the test sends SIGTERM once all are in,
# not after a guessed sleep.
_SERVE_SAYING_WHEN_A_REQUEST_IS_ADMITTED = """
import sys, threading
from zoo.serving import server
servable, lock = server.ModelServer._servable, threading.Lock()
def servable_and_say(self, name, version):
    found = servable(self, name, version)
    with lock:  # One whole line at a time from the handler threads.
        sys.stdout.write("request admitted\\n")
        sys.stdout.flush()
    return found
server.ModelServer._servable = servable_and_say
from zoo.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_sigterm_answers_the_requests_in_flight(base):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND="tensorflow")
    # Requests wait up to 3 s in the batcher for others to join them;
    # SIGTERM comes once all four are in (answered or waiting).
    process = subprocess.Popen(
        [sys.executable, "-c", _SERVE_SAYING_WHEN_A_REQUEST_IS_ADMITTED, "serve",
         "--saved-model", str(base), "--port", "0",
         "--batch-timeout-micros", "3000000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        line = process.stdout.readline()
        assert line.startswith("serving sentiment version 1 from "), (
            line + process.stderr.read()
        )
        url = line.split(" at ")[1].strip().rstrip("/")
        results = []

        def send():
            path = "/v1/models/sentiment:predict"
            results.append(call(url, "POST", path, {"instances": TEXTS}, timeout=120))

        threads = [threading.Thread(target=send) for _ in range(4)]
        for thread in threads:
            thread.start()
        for _ in threads:
            assert process.stdout.readline() == "request admitted\n"
        process.send_signal(signal.SIGTERM)
        for thread in threads:
            thread.join()
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
    assert [status for status, _ in results] == [200] * 4
    # The four requests may be answered in differently composed batches:
    # the same labels, probabilities equal to float32 rounding.
    first, *others = [body["predictions"] for _, body in results]
    labels = [p["label"] for p in first]
    assert len(labels) == 2 and set(labels) <= {"negative", "positive"}
    for predictions in others:
        assert [p["label"] for p in predictions] == labels
        np.testing.assert_allclose(
            [p["probabilities"] for p in predictions],
            [p["probabilities"] for p in first],
            rtol=1e-5,
            atol=1e-7,
        )
    assert "stopping" in process.stdout.read()


def test_serving_imports_no_layer_builder_or_keras_hub(base):
    """`keras-seq serve` needs TensorFlow and TensorFlow Text only: none of
    keras-seq's layers, the zoo's builders, the recipes or keras-hub load
    while a model is loaded and answers. (`keras` itself is imported by
    TensorFlow's own `__init__`, for `tf.keras`.)"""
    code = f"""
import json, sys, urllib.request
from zoo.cli import serve
from zoo.serving import ModelServer
server = ModelServer({str(base / "1")!r}, 1, "m", port=0).start()
server.load()
body = json.dumps({{"instances": ["w1 w2."]}}).encode()
with urllib.request.urlopen(server.url + "/v1/models/m:predict", body) as answer:
    assert answer.status == 200
server.stop(grace=0)
heavy = (
    "keras_seq.layers", "keras_seq.generation", "keras_hub", "zoo.translator",
    "zoo.recipes.run_dir",
)
print(sorted(name for name in sys.modules if name.startswith(heavy)))
"""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
