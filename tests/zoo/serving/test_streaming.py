"""Translations as their words come: `CTranslate2Model.stream`, `keras-seq
translate --ctranslate2 --stream` (`--model-dir --stream`:
tests/zoo/cli/test_translate.py) and the server's `:stream` (Server-Sent
Events); the pieces joined are the greedy translation, and a client that
hangs up mid-stream frees the server."""

import json
import socket
import threading

import pytest

from tests.zoo.conftest import run_cli
from tests.zoo.serving import exports
from tests.zoo.serving.conftest import NAME
from tests.zoo.serving.http_client import call
from zoo.serving import ModelServer

pytest.importorskip("ctranslate2")

from zoo.serving.ctranslate2_model import (  # noqa: E402
    CTranslate2Model,
    CTranslate2Servable,
)

SENTENCES = ["w1 w2 w3.", "w4 w5!", "w7 w8 w9 w10 w11.", "w12"]


@pytest.fixture(scope="module")
def ct2(tmp_path_factory):
    return exports.export_translator_ctranslate2(tmp_path_factory.mktemp("stream"))


def _events(raw):
    """An event-stream body -> [(event name, data)]."""
    found = []
    for block in raw.decode("utf-8").split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        found.append((fields.get("event", "message"), json.loads(fields["data"])))
    return found


def test_the_pieces_join_to_the_greedy_translation(ct2):
    engine = CTranslate2Model(ct2)
    for sentence in SENTENCES:
        pieces = list(engine.stream(sentence))
        assert len(pieces) > 1, pieces  # Word by word, not all at once.
        assert "".join(pieces) == engine.translate([sentence], beam_width=1)[0]
        prefixed = list(engine.stream(sentence, target_prefix="w9 w8"))
        assert (
            "".join(prefixed)
            == engine.translate([sentence], beam_width=1, target_prefix="w9 w8")[0]
        )
        assert "".join(prefixed).startswith("w9 w8")
    assert list(engine.stream("")) == []
    # Checked when called, before any token is decoded.
    with pytest.raises(ValueError, match=r"^`repetition_penalty` must be"):
        engine.stream("w1", repetition_penalty=-1.0)
    with pytest.raises(TypeError, match=r"^`sentence` must be a str"):
        engine.stream(["w1"])


def test_a_prefix_is_checked_as_the_keras_paths_check_it(ct2):
    """`keras_seq.validation.check_target_prefix` is the one check of
    prefixes given as text: the same messages as `TrainedModel.translate`'s
    (`tests/zoo/recipes/test_trained_decoding.py`)."""
    engine = CTranslate2Model(ct2)
    with pytest.raises(ValueError, match=r"^`target_prefix` must hold one str per"):
        engine.translate(SENTENCES[:2], target_prefix=["w9"])
    with pytest.raises(TypeError, match=r"^`target_prefix` must hold str"):
        engine.translate(SENTENCES[:2], target_prefix=["w9", 9])
    with pytest.raises(TypeError, match=r"^`target_prefix` must be a str or a list"):
        engine.stream(SENTENCES[0], target_prefix=9)


def test_translate_streams_each_line(ct2):
    streamed = run_cli(
        "translate", "--ctranslate2", ct2, "--stream", *SENTENCES, in_process=True
    )
    assert streamed.returncode == 0, streamed.stderr[-2000:]
    whole = run_cli(
        "translate", "--ctranslate2", ct2, "--beam-width", "1", *SENTENCES,
        in_process=True,
    )  # fmt: skip
    assert streamed.stdout == whole.stdout and whole.stdout.count("\n") == 4
    for flags, message in (
        (["--saved-model", ct2, "--stream"], "--stream applies to --model-dir an"),
        (
            ["--ctranslate2", ct2, "--stream", "--beam-width", "4"],
            "--stream decodes greedily; received --beam-width 4.",
        ),
    ):
        refused = run_cli("translate", *flags, "w1", in_process=True)
        assert refused.returncode == 1 and message in refused.stderr


def test_the_server_streams_server_sent_events(ct2):
    engine = CTranslate2Model(ct2)
    server = ModelServer(
        str(ct2), 1, "m", port=0, servable_class=CTranslate2Servable
    ).start().load()  # fmt: skip
    try:
        url = server.url.removeprefix("http://")
        host, port = url.split(":")
        body = json.dumps({"sentence": SENTENCES[2], "target_prefix": "w9"}).encode()
        with socket.create_connection((host, int(port)), timeout=30) as client:
            client.sendall(
                b"POST /v1/models/m:stream HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            answer = b""
            while chunk := client.recv(65536):
                answer += chunk
        head, _, raw = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        assert b"Content-Type: text/event-stream" in head
        events = _events(raw)
        assert events[-1] == ("end", {})
        pieces = [data["text"] for name, data in events[:-1]]
        assert len(pieces) > 1 and {name for name, _ in events[:-1]} == {"message"}
        expected = engine.translate([SENTENCES[2]], beam_width=1, target_prefix="w9")
        assert "".join(pieces) == expected[0]
        status, refused = call(
            server.url, "POST", "/v1/models/m:stream", {"sentences": ["w1"]}
        )
        assert status == 400 and refused["error"] == (
            'a :stream body is {"sentence": "..."}'
        )
    finally:
        server.stop(grace=5)


def test_a_saved_model_server_says_it_does_not_stream(server):
    status, body = call(
        server.url, "POST", f"/v1/models/{NAME}:stream", {"sentence": "w1"}
    )
    assert (
        status == 501 and ":stream is served for CTranslate2 exports" in (body["error"])
    )


class _Endless:
    """A servable whose stream never ends unless its reader goes away."""

    closed = threading.Event()

    def __init__(self, path, version):
        self.signatures = {}

    def stream(self, sentence, target_prefix=None):
        def pieces():
            try:
                while True:
                    yield "w1 "
            finally:
                _Endless.closed.set()

        return pieces()


def test_a_client_that_hangs_up_mid_stream_frees_the_server():
    server = ModelServer("x", 1, "m", port=0, servable_class=_Endless).start().load()
    try:
        host, port = server.url.removeprefix("http://").split(":")
        body = b'{"sentence": "w1"}'
        client = socket.create_connection((host, int(port)), timeout=30)
        client.sendall(
            b"POST /v1/models/m:stream HTTP/1.1\r\nHost: x\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        # The headers and the first event may come in separate packets.
        received = b""
        while b"data: " not in received:
            chunk = client.recv(4096)
            assert chunk, received
            received += chunk
        assert server.in_flight == 1
        client.close()
        assert _Endless.closed.wait(30), "the stream was not closed"
        assert server.wait_idle(30) and server.in_flight == 0
    finally:
        server.stop(grace=5)
