"""The HTTP side of `keras-seq serve`: TF Serving's REST routes over a model.

Built on the standard library's `ThreadingHTTPServer`: it parses the
request line and headers, and its thread per connection means a client that
stalls mid-body holds only its own thread (each socket read times out after
`request_timeout` seconds). A threaded server is enough here because every
request spends its time in a TensorFlow call, which releases the GIL, and
the batchers turn concurrent requests into one call; it adds no dependency
to a process that should load only TensorFlow and TensorFlow Text.

Routes, as TF Serving's `http_rest_api_handler` matches them:
    POST /v1/models/NAME[/versions/V]:predict
    GET  /v1/models/NAME[/versions/V]            (status)
    GET  /v1/models/NAME[/versions/V]/metadata   (signature defs)
    GET  /                                       (the page to try the model)
"""

import http.server
import json
import math
import re
import threading
from http import HTTPStatus

from zoo.recipes.settings import ServeSettings
from zoo.serving import page
from zoo.serving.batching import Batcher
from zoo.serving.rest import RequestError, format_outputs, parse_predict

PREDICT = re.compile(r"/v1/models/([^/:]+)(?:/versions/(\d+))?:(\w+)", re.IGNORECASE)
NAME = re.compile(r"[^/:?#\s]+")
MODEL = re.compile(r"/v1/models/([^/:]+)(?:/versions/(\d+))?(/metadata)?", re.I)

_DEFAULTS = ServeSettings()


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    # Many clients connect at once under load; the default backlog of 5
    # makes the others wait for a SYN retry (a second or more).
    request_queue_size = 128

    def handle_error(self, request, client_address):
        # A client that hangs up mid-answer is its own business; anything
        # else is answered as a 500 inside the handler already.
        pass


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # An answer goes out as two writes, its headers and then its body. With
    # Nagle's algorithm the body waits for the client to acknowledge the
    # headers, which a client on a kept-alive connection delays (up to 40
    # ms on Linux): every answer would wait that long.
    disable_nagle_algorithm = True

    def version_string(self):
        return "keras-seq"

    def setup(self):
        self.timeout = self.server.app.request_timeout
        super().setup()

    def log_message(self, format, *args):
        pass  # Every error goes back to its client; the console stays quiet.

    def _answer_events(self, stream):
        _send_events(self, stream)

    def send_error(self, code, message=None, explain=None):
        """http.server's own refusals (bad request line, headers) as JSON."""
        self.close_connection = True
        if self.request_version == "HTTP/0.9":
            # A request line that did not parse leaves http.server's default,
            # under which no status line is written; HTTP/1.0 clients and
            # later all read one.
            self.request_version = "HTTP/1.0"
        self._answer(code, {"error": message or HTTPStatus(code).phrase})

    def do_GET(self):
        self._dispatch()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_GET

    def _dispatch(self):
        app = self.server.app
        self.body_read = False
        app.begin()  # Until the answer is written: stop() waits for it.
        try:
            try:
                status, body = app.route(self.command, self.path.split("?")[0], self)
            except RequestError as error:
                status, body = error.status, {"error": error.message}
            except Exception as error:  # noqa: BLE001  (the server stays up)
                status, body = 500, {"error": f"{type(error).__name__}: {error}"}
            length = self.headers.get("Content-Length", "0").strip()
            unread = self.headers.get("Transfer-Encoding") or length not in ("", "0")
            if app.stopping or (unread and not self.body_read):
                # A body left unread would be taken for the next request.
                self.close_connection = True
            self._answer(status, body)
        finally:
            app.end()

    def read_body(self, limit):
        """The request body, refused without reading it when too large."""
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            raise RequestError(411, "send the body with a Content-Length")
        length = self.headers.get("Content-Length")
        if length is None:
            self.close_connection = True
            raise RequestError(411, "a :predict request needs a Content-Length")
        if not length.strip().isdigit():
            self.close_connection = True
            raise RequestError(400, f"Content-Length {length!r} is not a number")
        length = int(length)
        if length > limit:
            self.close_connection = True
            raise RequestError(
                413, f"the body has {length} bytes; the limit is {limit} "
                "(--max-body-bytes)"
            )  # fmt: skip
        try:
            body = self.rfile.read(length)
        except TimeoutError:
            self.close_connection = True
            raise RequestError(
                408, f"the body did not arrive within {self.timeout:g} s"
            ) from None
        if len(body) != length:
            self.close_connection = True
            raise RequestError(400, "the body ended before its Content-Length")
        self.body_read = True
        return body

    def _answer(self, status, body):
        if isinstance(body, EventStream):
            self._answer_events(body)
            return
        if isinstance(body, str):
            data, kind = body.encode("utf-8"), "text/html; charset=utf-8"
        else:
            data, kind = json.dumps(body).encode("utf-8"), "application/json"
        try:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        except OSError:
            self.close_connection = True


def _json_body(body):
    """A request body (bytes) read as JSON; refused as TF Serving refuses it."""
    try:
        return json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise RequestError(
            400, f"JSON Parse error: the body is not UTF-8 (byte {error.start})"
        ) from None
    except json.JSONDecodeError as error:
        raise RequestError(400, f"JSON Parse error: {error}") from None
    except RecursionError:
        raise RequestError(400, "JSON Parse error: nested too deeply") from None
    except ValueError:
        # Python refuses integers of more than 4,300 digits.
        raise RequestError(
            400, "JSON Parse error: a number with too many digits"
        ) from None


class EventStream:
    """An answer sent as Server-Sent Events: each item of `events` a
    `data:` line of JSON as it comes, then an `end` event."""

    def __init__(self, events):
        self.events = events


def _send_events(handler, stream):
    """Writes `stream` to the client; a client that hangs up ends it (the
    generator is closed, so its model stops decoding)."""
    handler.close_connection = True
    events = iter(stream.events)
    try:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Connection", "close")
        handler.end_headers()
        for event in events:
            handler.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            handler.wfile.flush()
        handler.wfile.write(b"event: end\ndata: {}\n\n")
        handler.wfile.flush()
    except OSError:
        pass
    except RequestError as error:
        # Refused after the headers went out: said as an error event.
        message = json.dumps({"error": error.message})
        try:
            handler.wfile.write(f"event: error\ndata: {message}\n\n".encode())
        except OSError:
            pass
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()


class ModelServer:
    """A SavedModel version (or a CTranslate2 export) behind TF Serving's REST API.

    Binds its socket when made (an address in use fails here, before the
    model loads); `start` serves in a thread, with the status saying
    LOADING, `load` loads and warms every signature up (then AVAILABLE),
    and `stop` answers the requests in flight before it closes.

    Args:
        path: str, the version directory (holds `saved_model.pb`).
        version: int, the version it is served as.
        model_name: str, the NAME of the routes.
        host: str; port: int (0 picks a free one).
        max_batch_size: int >= 1, the most examples merged into one call.
        batch_timeout_micros: int >= 0, the longest a batch waits to fill.
        max_body_bytes: int >= 1, larger request bodies are refused (413).
        max_rows_per_request: int >= 1, requests of more examples are
            refused (400); a request larger than `max_batch_size` runs a
            batch at a time, between the others (`zoo.serving.batching`).
        request_timeout: float > 0, seconds a socket read may wait.
        servable_class: what loads `path`: `(path, version) -> servable`
            (see `zoo.serving.rest`); None for a SavedModel's `Servable`,
            `CTranslate2Servable` for a CTranslate2 export.

    Raises:
        ValueError: for an argument out of its range, naming it.
        OSError: when the address cannot be bound.
    """

    def __init__(
        self,
        path,
        version,
        model_name,
        host=_DEFAULTS.host,
        port=_DEFAULTS.port,
        max_batch_size=_DEFAULTS.max_batch_size,
        batch_timeout_micros=_DEFAULTS.batch_timeout_micros,
        max_body_bytes=_DEFAULTS.max_body_bytes,
        max_rows_per_request=_DEFAULTS.max_rows_per_request,
        request_timeout=_DEFAULTS.request_timeout,
        servable_class=None,
    ):
        for name, value, low in (
            ("max_batch_size", max_batch_size, 1),
            ("batch_timeout_micros", batch_timeout_micros, 0),
            ("max_body_bytes", max_body_bytes, 1),
            ("max_rows_per_request", max_rows_per_request, 1),
            ("port", port, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(
                    f"`{name}` must be an int >= {low}; received {value!r}."
                )
        if port > 65535:
            raise ValueError(f"`port` must be at most 65535; received {port}.")
        if (
            isinstance(request_timeout, bool)
            or not isinstance(request_timeout, (int, float))
            or not math.isfinite(request_timeout)
            or request_timeout <= 0
        ):
            raise ValueError(
                "`request_timeout` must be a finite number > 0; received "
                f"{request_timeout!r}."
            )
        if not isinstance(model_name, str) or not re.fullmatch(
            r"[^/:?#\s]+", model_name
        ):
            raise ValueError(
                "`model_name` must be a non-empty name without '/', ':', '?', '#' "
                f"or spaces; received {model_name!r}."
            )
        self.path = path
        self.version = version
        self.servable_class = servable_class
        self.model_name = model_name
        self.max_batch_size = max_batch_size
        self.batch_timeout_micros = batch_timeout_micros
        self.max_body_bytes = max_body_bytes
        self.max_rows_per_request = max_rows_per_request
        self.request_timeout = request_timeout
        self.state = "START"
        self.servable = None
        self.batchers = {}
        self.stopping = False
        self._in_flight = 0
        self._idle = threading.Condition()
        self._thread = None
        self.httpd = _HTTPServer((host, port), _Handler)
        self.httpd.app = self

    @property
    def url(self):
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self):
        """Serves in a background thread; returns at once."""
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, name="http", daemon=True
        )
        self._thread.start()
        return self

    def load(self):
        """Loads the SavedModel and runs each signature once (warm-up).

        Raises:
            LoadError: when the directory does not load.
        """
        self.state = "LOADING"
        servable_class = self.servable_class
        if servable_class is None:
            # Imported here: a CTranslate2 server never loads TensorFlow.
            from zoo.serving.servable import Servable as servable_class
        servable = servable_class(self.path, self.version)
        batchers = {
            name: Batcher(signature, self.max_batch_size, self.batch_timeout_micros)
            for name, signature in servable.signatures.items()
        }
        # The first call of a signature traces and compiles its graph; a
        # client should not pay for it.
        try:
            for name, batcher in batchers.items():
                batcher.run(servable.signatures[name].warm_up_arrays())
        except BaseException:
            for batcher in batchers.values():  # `stop` knows only loaded ones.
                batcher.close()
            raise
        self.servable, self.batchers = servable, batchers
        self.state = "AVAILABLE"
        return self

    @property
    def in_flight(self):
        """The requests being answered now (streams included)."""
        with self._idle:
            return self._in_flight

    def wait_idle(self, timeout):
        """Waits until no request is being answered; True if none is."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout=timeout)

    def stop(self, grace=60.0):
        """Stops accepting, answers the requests in flight, then closes."""
        self.stopping = True
        self.state = "UNLOADING"
        if self._thread is not None:
            self.httpd.shutdown()
        self.wait_idle(grace)
        for batcher in self.batchers.values():
            batcher.close()
        self.httpd.server_close()
        self.state = "END"

    def begin(self):
        with self._idle:
            self._in_flight += 1

    def end(self):
        with self._idle:
            self._in_flight -= 1
            self._idle.notify_all()

    # Routing.

    def route(self, method, path, handler):
        """(status, body) for one request; raises RequestError to refuse."""
        if path == "/" and method == "GET":
            return 200, page.render(self)
        if not path.lower().startswith("/v1/"):
            raise RequestError(404, f"no such page: {path}")
        predict = PREDICT.fullmatch(path)
        if predict and method == "POST":
            name, version, verb = predict.groups()
            body = handler.read_body(self.max_body_bytes)
            if verb.lower() == "stream":
                return 200, self.stream(name, version, body)
            if verb.lower() != "predict":
                raise RequestError(
                    501, f":{verb} is not served; use :predict or :stream"
                )
            return 200, self.predict(name, version, body)
        model = MODEL.fullmatch(path)
        if model and method == "GET":
            name, version, metadata = model.groups()
            if metadata:
                return 200, self._servable(name, version).metadata(self.model_name)
            return 200, self.status(name, version)
        # TF Serving's words for a known prefix with the wrong verb or path.
        raise RequestError(400, f"Malformed request: {method} {path}")

    def _check_name(self, name, version):
        if name != self.model_name:
            spec = f"Specific({name}, {version})" if version else f"Latest({name})"
            raise RequestError(404, f"Servable not found for request: {spec}")
        if version is not None and int(version) != self.version:
            raise RequestError(
                404,
                f"Servable not found for request: Specific({name}, {version}) "
                f"(version {self.version} is served)",
            )

    def _servable(self, name, version):
        self._check_name(name, version)
        if self.state != "AVAILABLE" or self.servable is None:
            raise RequestError(503, f"model {name} is {self.state}, not yet AVAILABLE")
        return self.servable

    def status(self, name, version):
        """The body of GET /v1/models/NAME, as TF Serving's GetModelStatus."""
        self._check_name(name, version)
        return {
            "model_version_status": [
                {
                    "version": str(self.version),
                    "state": self.state,
                    "status": {"error_code": "OK", "error_message": ""},
                }
            ]
        }

    def stream(self, name, version, body):
        """The answer of :stream: `{"sentence": str}` (and optionally
        `"target_prefix": str`) -> events `{"text": piece}` as the words of
        the greedy translation come, where the servable streams."""
        servable = self._servable(name, version)
        if not hasattr(servable, "stream"):
            raise RequestError(
                501,
                ":stream is served for CTranslate2 exports (keras-seq serve "
                "--ctranslate2); a SavedModel's signatures answer whole "
                "translations",
            )
        request = _json_body(body)
        if not isinstance(request, dict) or not isinstance(
            request.get("sentence"), str
        ):
            raise RequestError(400, 'a :stream body is {"sentence": "..."}')
        unknown = sorted(set(request) - {"sentence", "target_prefix"})
        if unknown:
            raise RequestError(400, f"a :stream body has no field {unknown[0]!r}")
        prefix = request.get("target_prefix")
        if prefix is not None and not isinstance(prefix, str):
            raise RequestError(400, "`target_prefix` must be a string")
        try:
            pieces = servable.stream(request["sentence"], target_prefix=prefix)
        except (TypeError, ValueError) as error:
            raise RequestError(400, str(error)) from None
        return EventStream({"text": piece} for piece in pieces)

    def predict(self, name, version, body):
        """The answer of :predict for a raw body (bytes)."""
        servable = self._servable(name, version)
        request = _json_body(body)
        signature, arrays, form = parse_predict(request, servable)
        rows = next(iter(arrays.values())).shape[0]
        if rows > self.max_rows_per_request:
            raise RequestError(
                400,
                f"the request has {rows} examples; the limit is "
                f"{self.max_rows_per_request} (--max-rows-per-request)",
            )
        outputs = self.batchers[signature.name].run(arrays)
        return format_outputs(outputs, form)
