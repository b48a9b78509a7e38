"""Bad requests: each gets a JSON error with TF Serving's status, and the
server answers the next correct request correctly. A client that stalls
mid-body blocks nobody and is timed out."""

import select
import socket
import threading
from urllib.parse import urlsplit

import pytest

from tests.zoo.serving.conftest import NAME
from tests.zoo.serving.http_client import call

PREDICT = f"/v1/models/{NAME}:predict"
GOOD = {"instances": ["w1 w2 w3."]}
LOGITS = "logits"


def _logits(encoder, decoder, form="inputs"):
    value = {"encoder_token_ids": encoder, "decoder_token_ids": decoder}
    return {"signature_name": LOGITS, form: value}


# (kind, method, path, body, headers, status, a piece of the error message)
CASES = [
    ("malformed JSON", "POST", PREDICT, b"{bad", {}, 400, "JSON Parse error"),
    ("a JSON list body", "POST", PREDICT, [1, 2], {}, 400, "JSON object"),
    ("instances and inputs", "POST", PREDICT,
     {"instances": ["a"], "inputs": ["a"]}, {}, 400, "exactly one"),
    ("neither instances nor inputs", "POST", PREDICT, {"x": 1}, {}, 400,
     "exactly one"),
    ("instances not a list", "POST", PREDICT, {"instances": "w1"}, {}, 400,
     "must be a list"),
    ("an empty instances list", "POST", PREDICT, {"instances": []}, {}, 400,
     "empty"),
    ("an empty inputs list", "POST", PREDICT, {"inputs": []}, {}, 400,
     "one example or more"),
    ("a number for a string", "POST", PREDICT, {"instances": [1]}, {}, 400,
     "expected a string"),
    ("null for a string", "POST", PREDICT, {"instances": [None]}, {}, 400,
     "expected a string"),
    ("a list for a string (wrong rank)", "POST", PREDICT,
     {"instances": [["w1"]]}, {}, 400, "expected a string"),
    ("invalid base64", "POST", PREDICT, {"instances": [{"b64": "%%%"}]}, {}, 400,
     "base64"),
    ("an unknown signature", "POST", PREDICT,
     {"signature_name": "nope", "instances": ["a"]}, {}, 400, "not found"),
    ("signature_name not a string", "POST", PREDICT,
     {"signature_name": 3, "instances": ["a"]}, {}, 400, "signature_name"),
    ("an unknown model", "POST", "/v1/models/nope:predict", GOOD, {}, 404,
     "Servable not found"),
    ("an unknown version", "POST", f"/v1/models/{NAME}/versions/7:predict", GOOD,
     {}, 404, "Servable not found"),
    ("a version that is not a number", "POST",
     f"/v1/models/{NAME}/versions/x:predict", GOOD, {}, 400, "Malformed request"),
    ("GET on :predict", "GET", PREDICT, None, {}, 400, "Malformed request"),
    ("PUT on the status", "PUT", f"/v1/models/{NAME}", GOOD, {}, 400,
     "Malformed request"),
    ("DELETE", "DELETE", f"/v1/models/{NAME}", None, {}, 400, "Malformed request"),
    ("an unserved verb (:classify)", "POST", f"/v1/models/{NAME}:classify", GOOD,
     {}, 501, ":predict"),
    ("an unknown path", "GET", "/v2/models", None, {}, 404, "no such page"),
    ("invalid UTF-8 in the body", "POST", PREDICT,
     b'{"instances": ["\xff\xfe"]}', {}, 400, "not UTF-8"),
    ("JSON nested 100,000 deep", "POST", PREDICT, b"[" * 100_000, {}, 400,
     "JSON Parse error"),
    ("a 5,000-digit integer", "POST", PREDICT,
     b'{"instances": [' + b"7" * 5000 + b"]}", {}, 400,
     "JSON Parse error: a number with too many digits"),
    ("a body over the size limit", "POST", PREDICT, None,
     {"Content-Length": str(2 << 20)}, 413, "limit"),
    ("chunked transfer encoding", "POST", PREDICT, None,
     {"Transfer-Encoding": "chunked"}, 411, "Content-Length"),
    ("ragged token id lists", "POST", PREDICT,
     _logits([[5, 6], [7]], [[1], [1]]), {}, 400, "ragged"),
    ("float token ids", "POST", PREDICT, _logits([[5.5]], [[1]]), {}, 400,
     "expected an integer"),
    ("a boolean token id", "POST", PREDICT, _logits([[True]], [[1]]), {}, 400,
     "expected an integer"),
    ("a token id past int32", "POST", PREDICT, _logits([[2**40]], [[1]]), {}, 400,
     "out of the range"),
    ("a token id past the vocabulary", "POST", PREDICT, _logits([[5]], [[999]]),
     {}, 400, "`decoder_token_ids` must lie in [0, 38) (target_vocabulary_size=38); "
     "received values in [999, 999]."),
    ("token ids of the wrong rank", "POST", PREDICT, _logits([5, 6], [1]), {}, 400,
     "expected a list"),
    ("an input missing", "POST", PREDICT,
     {"signature_name": LOGITS, "inputs": {"encoder_token_ids": [[5]]}}, {}, 400,
     "must be an object"),
    ("inputs of two batch sizes", "POST", PREDICT,
     _logits([[5], [6]], [[1]]), {}, 400, "batch size"),
    ("an instance missing an input", "POST", PREDICT,
     {"signature_name": LOGITS, "instances": [{"encoder_token_ids": [5]}]}, {}, 400,
     "expected an object"),
]  # fmt: skip


def _expected(server):
    return call(server.url, "POST", PREDICT, GOOD)[1]


@pytest.fixture(scope="module")
def expected(server):
    status, body = call(server.url, "POST", PREDICT, GOOD)
    assert status == 200 and len(body["predictions"]) == 1
    return body


def test_each_bad_request_then_a_good_one(server, expected):
    # One test for all kinds: every test function starts with Keras'
    # `clear_session`, after which the served graph's first call compiles
    # again (seconds each on two cores).
    wrong = []
    for kind, method, path, body, headers, status, message in CASES:
        got_status, got = call(server.url, method, path, body, headers)
        if got_status != status or set(got) != {"error"} or message not in got["error"]:
            wrong.append(f"{kind}: {got_status} {got}")
        if call(server.url, "POST", PREDICT, GOOD) != (200, expected):
            wrong.append(f"{kind}: the next correct request was not answered right")
    assert not wrong, "\n".join(wrong)
    assert len(CASES) >= 25


def _raw(server, data, read=True):
    parts = urlsplit(server.url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
    sock.sendall(data)
    if not read:
        return sock
    sock.shutdown(socket.SHUT_WR)
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    sock.close()
    return answer.decode("utf-8", "replace")


BROKEN_HTTP = [
    ("a broken request line", b"GET / HTTP/1.1 and more\r\n\r\n", "400"),
    ("HTTP/9.9", b"GET / HTTP/9.9\r\n\r\n", "505"),
    ("no Content-Length",
     f"POST {PREDICT} HTTP/1.1\r\nHost: x\r\n\r\n".encode(), "411"),
    ("a Content-Length not a number",
     f"POST {PREDICT} HTTP/1.1\r\nContent-Length: ten\r\n\r\n".encode(), "400"),
    ("half a body, then the client hangs up",
     f"POST {PREDICT} HTTP/1.1\r\nContent-Length: 100\r\n\r\n{{".encode(), "400"),
]  # fmt: skip


def test_broken_http_gets_a_json_error(server, expected):
    for kind, data, status in BROKEN_HTTP:
        answer = _raw(server, data)
        assert answer.split()[1] == status, (kind, answer)
        assert '{"error": ' in answer, (kind, answer)
        assert call(server.url, "POST", PREDICT, GOOD) == (200, expected), kind


def test_an_unread_body_closes_the_connection(server, expected):
    """Else the body of a refused request would be read as the next one."""
    body = b'{"instances": ["w1"]}'
    head = f"PUT {PREDICT} HTTP/1.1\r\nContent-Length: {len(body)}\r\n\r\n"
    good = f"POST {PREDICT} HTTP/1.1\r\nContent-Length: {len(body)}\r\n\r\n"
    answer = _raw(server, head.encode() + body + good.encode() + body)
    assert answer.split()[1] == "400" and "Connection: close" in answer
    assert answer.count("HTTP/1.1 ") == 1  # The second request is not read.


def test_odd_sentences_are_answered(server):
    """Not errors: the export truncates and cleans (as in-process)."""
    sentences = ["w1 " * 50_000, "\udc80 w1", "", "   ", "w1 \u200b\ufeff."]
    status, body = call(server.url, "POST", PREDICT, {"instances": sentences})
    assert status == 200 and len(body["predictions"]) == 5
    assert body["predictions"][2:4] == ["", ""]


def test_a_stalled_client_blocks_nobody(server, expected):
    head = f"POST {PREDICT} HTTP/1.1\r\nContent-Length: 1000\r\n\r\n"
    # Each connection reads the timeout when it is accepted.
    saved, server.request_timeout = server.request_timeout, 6.0
    stalled = _raw(server, head.encode() + b'{"instances": ', read=False)
    try:
        assert call(server.url, "POST", PREDICT, GOOD) == (200, expected)
        # Answered while the stalled client is still waited for.
        assert select.select([stalled], [], [], 0)[0] == []
        # The stalled one is answered 408 once its read times out.
        stalled.settimeout(30)
        answer = b""
        while chunk := stalled.recv(65536):
            answer += chunk
        answer = answer.decode()
        assert answer.split()[1] == "408" and "did not arrive within 6 s" in answer
    finally:
        stalled.close()
        server.request_timeout = saved
    assert call(server.url, "POST", PREDICT, GOOD) == (200, expected)


def test_concurrent_bad_and_good_requests(server, expected):
    """Bad requests merged with good ones in a batch fail alone."""
    results = {}

    def send(key, body):
        results[key] = call(server.url, "POST", PREDICT, body)

    bodies = {f"good{i}": GOOD for i in range(4)}
    bodies.update({f"bad{i}": _logits([[5]], [[999]]) for i in range(2)})
    bodies.update({f"logits{i}": _logits([[5]], [[1]]) for i in range(2)})
    threads = [threading.Thread(target=send, args=item) for item in bodies.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for key, (status, body) in results.items():
        if key.startswith("good"):
            assert (status, body) == (200, expected)
        elif key.startswith("bad"):
            assert status == 400 and "must lie in [0, 38)" in body["error"]
        else:
            assert status == 200 and len(body["outputs"][0]) == 1
