"""Merging concurrent requests for one signature into one model call.

As TF Serving's batching parameters: a worker thread per signature takes
the first waiting request, then collects more for at most
`batch_timeout_micros` or until `max_batch_size` examples, runs the
signature once on the concatenated batch and hands each request its rows.
With a timeout of 0 it takes only what is already waiting: one client is
never kept waiting, while under load the requests that queue up during a
model call form the next batch, so one call of B sentences replaces B
calls (the decoding loop's cost grows far slower than its batch).
"""

import queue
import sys
import threading
import time

import numpy as np

from zoo.serving.rest import RequestError


class _Task:
    """One request's arrays and, once run, its outputs or its error."""

    def __init__(self, arrays):
        self.arrays = arrays
        self.rows = next(iter(arrays.values())).shape[0]
        # Requests merge only when every non-batch dimension agrees (token
        # id matrices of other lengths are run apart, never padded: padding
        # would change the shape of what the request gets back).
        self.key = tuple((name, a.shape[1:]) for name, a in sorted(arrays.items()))
        self.done = threading.Event()
        self.outputs = None
        self.error = None


class Batcher:
    """Runs one signature on merged batches in a worker thread.

    Args:
        signature: a `Signature` (called with dict name -> array).
        max_batch_size: int >= 1, the most examples of one call (a request
            larger than it is run alone).
        batch_timeout_micros: int >= 0, the longest wait for more requests
            after the first.

    Attributes:
        calls: int, model calls made so far (batches run).
    """

    def __init__(self, signature, max_batch_size, batch_timeout_micros):
        self.signature = signature
        self.max_batch_size = max_batch_size
        self.timeout = batch_timeout_micros / 1e6
        self.calls = 0
        self._queue = queue.Queue()
        self._held = None  # A task taken that did not fit the last batch.
        self._closed = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._work, name=f"batcher-{signature.name}", daemon=True
        )
        self._thread.start()

    def run(self, arrays):
        """Blocks until `arrays`' rows are run; returns their outputs.

        Raises:
            RequestError: 400 when the model refuses the input (e.g. a token
                id past the vocabulary), 503 once the batcher is closed.
        """
        task = _Task(arrays)
        with self._lock:
            if self._closed:
                raise RequestError(503, "the server is shutting down")
            self._queue.put(task)
        task.done.wait()
        if task.error is not None:
            raise task.error
        return task.outputs

    def close(self):
        """Finishes the requests already queued, then stops the worker."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(None)
        self._thread.join()

    def _next(self, timeout):
        if self._held is not None:
            task, self._held = self._held, None
            return task
        if timeout is None:
            return self._queue.get()
        try:
            return self._queue.get(timeout=timeout) if timeout > 0 else (
                self._queue.get_nowait()
            )  # fmt: skip
        except queue.Empty:
            return False

    def _collect(self):
        """The next batch (a list of tasks), or None once closed."""
        first = self._next(None)
        if first is None:
            return None
        batch, rows = [first], first.rows
        deadline = time.monotonic() + self.timeout
        while rows < self.max_batch_size:
            task = self._next(max(deadline - time.monotonic(), 0))
            if task is False:
                break
            if task is None:  # Closing: run this batch, then stop.
                self._queue.put(None)
                break
            if task.key != first.key or rows + task.rows > self.max_batch_size:
                self._held = task
                break
            batch.append(task)
            rows += task.rows
        return batch

    def _work(self):
        while (batch := self._collect()) is not None:
            try:
                self._run(batch)
            except Exception as error:  # noqa: BLE001  (the server must go on)
                if len(batch) == 1:
                    batch[0].error = _as_request_error(error)
                    batch[0].done.set()
                    continue
                # One bad request must not fail the others merged with it:
                # each runs again alone.
                for task in batch:
                    try:
                        self._run([task])
                    except Exception as single:  # noqa: BLE001
                        task.error = _as_request_error(single)
                        task.done.set()

    def _run(self, batch):
        arrays = {
            name: np.concatenate([task.arrays[name] for task in batch])
            for name in batch[0].arrays
        }
        self.calls += 1
        outputs = self.signature(arrays)
        start = 0
        for task in batch:
            task.outputs = {
                name: value[start : start + task.rows]
                for name, value in outputs.items()
            }
            start += task.rows
            task.done.set()


def _as_request_error(error):
    """The model's refusal of an input (an OpError) is the client's 400."""
    if isinstance(error, RequestError):
        return error
    message = getattr(error, "message", None) or str(error)
    # A graph's error opens with "Graph execution error:" and the node's
    # trace; the client needs the op's own words (e.g. "indices[0,0] = 999
    # is not in [0, 38)"), its first line of its own.
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    detail = [line for line in lines if not line.startswith(_TRACE_LINES)]
    first = (detail or lines or [type(error).__name__])[0]
    # Only a TensorFlow model raises TensorFlow's errors; a server without
    # TensorFlow never loads it.
    tf = sys.modules.get("tensorflow")
    if tf is not None and isinstance(error, tf.errors.InvalidArgumentError):
        return RequestError(400, first)
    return RequestError(500, f"{type(error).__name__}: {first}")


_TRACE_LINES = (
    "Graph execution error",
    "Detected at node",
    "<stack traces unavailable>",
    "File ",
    "[[",
    "{{",
)
