"""Merging concurrent requests for one signature into one model call, and
splitting large ones.

As TF Serving's batching parameters: a worker thread per signature takes
the first waiting request, then collects more for at most
`batch_timeout_micros` or until `max_batch_size` examples, runs the
signature once on the concatenated batch and hands each request its rows.
With a timeout of 0 it takes only what is already waiting: one client is
never kept waiting, while under load the requests that queue up during a
model call form the next batch, so one call of B sentences replaces B
calls (the decoding loop's cost grows far slower than its batch).

A request of more than `max_batch_size` examples is split, as TF Serving's
`enable_large_batch_splitting` does: each call takes at most
`max_batch_size` of its rows, and the rest goes back to the end of the
queue, behind the requests that came meanwhile, so a large request
shares the model with the small ones instead of holding it.
"""

import collections
import queue
import sys
import threading
import time

import numpy as np

from zoo.serving.rest import RequestError


class _Task:
    """One request's arrays, the rows run so far, and its outputs or error."""

    def __init__(self, arrays):
        self.arrays = arrays
        self.rows = next(iter(arrays.values())).shape[0]
        self.next_row = 0  # Rows before it have been run.
        # Requests merge only when every non-batch dimension agrees (token
        # id matrices of other lengths are run apart, never padded: padding
        # would change the shape of what the request gets back).
        self.key = tuple((name, a.shape[1:]) for name, a in sorted(arrays.items()))
        self.done = threading.Event()
        self.pieces = []  # Outputs of the runs so far, in row order.
        self.outputs = None
        self.error = None

    @property
    def left(self):
        return self.rows - self.next_row

    def fail(self, error):
        self.error = error
        self.done.set()

    def finish_piece(self, outputs):
        self.pieces.append(outputs)
        if self.next_row == self.rows:
            self.outputs = _join(self.pieces)
            self.pieces = []
            self.done.set()


def _join(pieces):
    """The outputs of a request's runs as one answer, in row order.

    A run's outputs may be as wide as its longest row (token ids of a batch
    padded to its longest sentence); the pieces are padded to the widest,
    as the request run in one call would be.
    """
    if len(pieces) == 1:
        return pieces[0]
    joined = {}
    for name in pieces[0]:
        arrays = [piece[name] for piece in pieces]
        widest = np.max([a.shape for a in arrays], axis=0)
        fill = b"" if arrays[0].dtype == object else 0
        arrays = [
            np.pad(
                a,
                [(0, 0)] + [(0, w - n) for w, n in zip(widest[1:], a.shape[1:])],
                constant_values=fill,
            )
            if a.ndim > 1
            else a
            for a in arrays
        ]
        joined[name] = np.concatenate(arrays)
    return joined


class Batcher:
    """Runs one signature on merged (and split) batches in a worker thread.

    Args:
        signature: a `Signature` (called with dict name -> array).
        max_batch_size: int >= 1, the most examples of one call (a request
            larger than it is run a slice at a time, between the others).
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
        self._queue = queue.Queue()  # Requests as they arrive.
        self._waiting = collections.deque()  # Taken from it, in turn order.
        self._closing = False  # The worker has seen `close`'s sentinel.
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

    def _take(self, timeout):
        """Moves one arrival to `_waiting`; False when none came in time."""
        try:
            if timeout is None:
                task = self._queue.get()
            elif timeout > 0:
                task = self._queue.get(timeout=timeout)
            else:
                task = self._queue.get_nowait()
        except queue.Empty:
            return False
        if task is None:
            self._closing = True
        else:
            self._waiting.append(task)
        return True

    def _collect(self):
        """The next batch, a list of (task, first row, end row), or None
        once closed and every request is answered."""
        while not self._waiting:
            if self._closing:
                return None
            self._take(None)
        first = self._waiting[0]
        batch, rows = [], 0
        deadline = time.monotonic() + self.timeout
        while rows < self.max_batch_size:
            if not self._waiting:
                if self._closing or not self._take(max(deadline - time.monotonic(), 0)):
                    break
                continue
            task = self._waiting[0]
            if task.key != first.key:
                break
            take = min(task.left, self.max_batch_size - rows)
            batch.append((task, task.next_row, task.next_row + take))
            task.next_row += take
            rows += take
            self._waiting.popleft()
        return batch

    def _work(self):
        while (batch := self._collect()) is not None:
            self._run_or_fail(batch)
            # The requests that came during the call take their turn before
            # the rest of a split one.
            while self._take(0):
                pass
            for task, _, _ in batch:
                if task.left and task.error is None:
                    self._waiting.append(task)

    def _run_or_fail(self, batch):
        try:
            self._run(batch)
        except Exception as error:  # noqa: BLE001  (the server must go on)
            if len(batch) == 1:
                batch[0][0].fail(_as_request_error(error))
                return
            # One bad request must not fail the others merged with it: each
            # runs again alone.
            for piece in batch:
                try:
                    self._run([piece])
                except Exception as single:  # noqa: BLE001
                    piece[0].fail(_as_request_error(single))

    def _run(self, batch):
        arrays = {
            name: np.concatenate([task.arrays[name][a:b] for task, a, b in batch])
            for name in batch[0][0].arrays
        }
        self.calls += 1
        outputs = self.signature(arrays)
        start = 0
        for task, a, b in batch:
            rows = b - a
            task.finish_piece(
                {name: value[start : start + rows] for name, value in outputs.items()}
            )
            start += rows


def first_error_line(error):
    """An error's own first line: of a graph's error (which opens with
    "Graph execution error:" and the node's trace), the op's words (e.g.
    "indices[0,0] = 999 is not in [0, 38)")."""
    message = getattr(error, "message", None) or str(error)
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    detail = [line for line in lines if not line.startswith(_TRACE_LINES)]
    return (detail or lines or [type(error).__name__])[0]


def _as_request_error(error):
    """The model's refusal of an input (an OpError) is the client's 400."""
    if isinstance(error, RequestError):
        return error
    first = first_error_line(error)
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
