"""Request batching: concurrent requests merged into one model call (as TF
Serving's max_batch_size and batch_timeout_micros), results split back."""

import threading
import time

import numpy as np
import pytest

from tests.zoo.serving.conftest import NAME
from tests.zoo.serving.http_client import call
from zoo.serving import ModelServer
from zoo.serving.batching import Batcher
from zoo.serving.servable import RequestError

PREDICT = f"/v1/models/{NAME}:predict"


class _Doubler:
    """A stand-in signature: doubles `x`, refuses negatives, records batches."""

    name = "double"

    def __init__(self):
        self.batches = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def __call__(self, arrays):
        self.entered.set()
        self.release.wait()
        x = arrays["x"]
        self.batches.append(len(x))
        if (x < 0).any():
            raise RequestError(400, "negative")
        return {"y": 2 * x}


def _concurrently(function, arguments):
    results = [None] * len(arguments)

    def run(i):
        try:
            results[i] = function(arguments[i])
        except RequestError as error:
            results[i] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(arguments))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_requests_merge_up_to_the_largest_batch():
    signature = _Doubler()
    batcher = Batcher(signature, max_batch_size=6, batch_timeout_micros=5_000_000)
    inputs = [{"x": np.array([[i], [10 + i]])} for i in range(6)]  # 2 rows each
    results = _concurrently(batcher.run, inputs)
    for i, result in enumerate(results):
        np.testing.assert_array_equal(result["y"], [[2 * i], [20 + 2 * i]])
    # 12 rows at most 6 a call: two full calls, none waits 5 s for a third.
    assert signature.batches == [6, 6]
    assert batcher.calls == 2
    batcher.close()


def test_shapes_apart_and_a_bad_request_fails_alone():
    signature = _Doubler()
    signature.release.clear()  # Hold the first call while the others queue.
    batcher = Batcher(signature, max_batch_size=32, batch_timeout_micros=0)
    inputs = [{"x": np.array([[1]])}]
    inputs += [{"x": np.array([[i]])} for i in (2, -3, 4)]
    inputs += [{"x": np.array([[5, 6]])}]  # Another width: not merged.
    results = {}

    def send(i):
        results[i] = _try(batcher.run, inputs[i])

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(inputs))]
    threads[0].start()
    assert signature.entered.wait(10)  # The first call has started.
    for queued, thread in enumerate(threads[1:], 1):
        thread.start()  # Queued in order: one at a time.
        deadline = time.monotonic() + 10
        while batcher._queue.qsize() < queued and time.monotonic() < deadline:
            time.sleep(0.005)
    signature.release.set()
    for thread in threads:
        thread.join()
    assert isinstance(results[2], RequestError) and results[2].status == 400
    for i in (0, 1, 3):
        np.testing.assert_array_equal(results[i]["y"], 2 * inputs[i]["x"])
    np.testing.assert_array_equal(results[4]["y"], [[10, 12]])
    # 1 alone; 2, -3, 4 merged (3 rows) and failed; each again alone; the
    # wider one apart.
    assert signature.batches == [1, 3, 1, 1, 1, 1]
    batcher.close()
    with pytest.raises(RequestError, match="shutting down"):
        batcher.run({"x": np.array([[1]])})


def _try(function, arguments):
    try:
        return function(arguments)
    except RequestError as error:
        return error


def test_concurrent_http_requests_make_one_model_call(server):
    sentences = [f"w{i} w{i + 1}." for i in range(8)]
    alone = [call(server.url, "POST", PREDICT, {"instances": [s]}) for s in sentences]
    batcher = server.batchers["serving_default"]
    saved = batcher.max_batch_size, batcher.timeout
    batcher.max_batch_size, batcher.timeout = len(sentences), 30.0
    try:
        before = batcher.calls
        results = _concurrently(
            lambda s: call(server.url, "POST", PREDICT, {"instances": [s]}), sentences
        )
        assert batcher.calls - before == 1  # Full at 8: no 30 s wait.
    finally:
        batcher.max_batch_size, batcher.timeout = saved
    assert results == alone


class _Gated:
    """A stand-in signature that doubles `x`, one call per permit given."""

    name = "double"

    def __init__(self):
        self.batches = []
        self.entered = threading.Event()
        self.permits = threading.Semaphore(0)

    def __call__(self, arrays):
        self.entered.set()
        assert self.permits.acquire(timeout=30)
        self.batches.append(arrays["x"][:, 0].tolist())
        return {"y": 2 * arrays["x"]}


def test_a_large_request_is_split_and_a_small_one_answered_between():
    signature = _Gated()
    batcher = Batcher(signature, max_batch_size=3, batch_timeout_micros=0)
    large = {"x": np.arange(10).reshape(10, 1)}
    small = {"x": np.array([[100]])}
    results = {}

    def send(name, arrays):
        results[name] = batcher.run(arrays)

    large_thread = threading.Thread(target=send, args=("large", large))
    large_thread.start()
    assert signature.entered.wait(10)  # The large request's first call waits.
    small_thread = threading.Thread(target=send, args=("small", small))
    small_thread.start()
    deadline = time.monotonic() + 10
    while batcher._queue.qsize() < 1 and time.monotonic() < deadline:
        time.sleep(0.005)
    for _ in range(2):
        signature.permits.release()
    small_thread.join(10)
    # Answered after two calls; the large one needs two more, not yet given.
    assert "small" in results and large_thread.is_alive()
    np.testing.assert_array_equal(results["small"]["y"], [[200]])
    for _ in range(2):
        signature.permits.release()
    large_thread.join(10)
    np.testing.assert_array_equal(results["large"]["y"], 2 * large["x"])
    # At most 3 rows a call; the small request shares the second one.
    assert signature.batches == [[0, 1, 2], [100, 3, 4], [5, 6, 7], [8, 9]]
    batcher.close()


def test_a_failing_slice_fails_its_request_and_runs_no_more_of_it():
    signature = _Doubler()
    batcher = Batcher(signature, max_batch_size=2, batch_timeout_micros=0)
    with pytest.raises(RequestError, match="negative"):
        batcher.run({"x": np.array([[1], [2], [-3], [4], [5], [6]])})
    assert signature.batches == [2, 2]
    np.testing.assert_array_equal(batcher.run({"x": np.array([[7]])})["y"], [[14]])
    batcher.close()


def test_split_requests_answer_as_one_call(server):
    sentences = [f"w{i} w{i + 2} w{i + 5}." for i in range(7)]
    requests = [
        {"instances": sentences},
        {"signature_name": "beam_search", "inputs": {"sentences": sentences}},
    ]
    whole = [call(server.url, "POST", PREDICT, body) for body in requests]
    batchers = [server.batchers[name] for name in ("serving_default", "beam_search")]
    for batcher in batchers:
        batcher.max_batch_size = 2
    try:
        before = [batcher.calls for batcher in batchers]
        split = [call(server.url, "POST", PREDICT, body) for body in requests]
        assert [b.calls - c for b, c in zip(batchers, before)] == [4, 4]
    finally:
        for batcher in batchers:
            batcher.max_batch_size = server.max_batch_size
    assert whole[0][0] == 200 and split[0] == whole[0]
    # Beams: a batch of other sentences rounds the scores apart by ~1e-6,
    # which may swap two hypotheses of near-equal score, as merged requests
    # may; the best ones and every score agree.
    beams, beams_split = whole[1][1]["outputs"], split[1][1]["outputs"]
    assert [t[0] for t in beams_split["translations"]] == [
        t[0] for t in beams["translations"]
    ]
    np.testing.assert_allclose(beams_split["scores"], beams["scores"], atol=1e-5)


def test_rows_past_the_cap_are_refused_in_one_line(server):
    saved = server.max_rows_per_request
    server.max_rows_per_request = 3
    try:
        refused = call(server.url, "POST", PREDICT, {"instances": ["w1."] * 4})
        answered = call(server.url, "POST", PREDICT, {"instances": ["w1."] * 3})
    finally:
        server.max_rows_per_request = saved
    assert refused == (
        400,
        {
            "error": "the request has 4 examples; the limit is 3 "
            "(--max-rows-per-request)"
        },
    )
    assert answered[0] == 200 and len(answered[1]["predictions"]) == 3


class _WarmUpFails(_Doubler):
    def warm_up_arrays(self):
        return {"x": np.array([[-1]])}


def test_a_failed_warm_up_leaves_no_batcher_running():
    signatures = {"double": _WarmUpFails(), "also": _Doubler()}
    signatures["also"].warm_up_arrays = lambda: {"x": np.array([[1]])}
    signatures["also"].name = "also"

    class Servable:
        def __init__(self, path, version):
            self.signatures = signatures

    before = {t for t in threading.enumerate() if t.name.startswith("batcher-")}
    server = ModelServer("x", 1, "m", port=0, servable_class=Servable)
    with pytest.raises(RequestError, match="negative"):
        server.load()
    server.stop(grace=0)
    after = {t for t in threading.enumerate() if t.name.startswith("batcher-")}
    assert after == before and server.state == "END"
