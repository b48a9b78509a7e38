"""`keras-seq serve`: exported SavedModels behind TensorFlow Serving's REST API.

`ModelServer` answers TF Serving's predict, status and metadata routes
(`zoo.serving.server`), merges concurrent requests into one model call
(`zoo.serving.batching`) and shows a page to try the model
(`zoo.serving.page`). The model runs from its SavedModel with TensorFlow
and TensorFlow Text alone, as under TF Serving, or from a CTranslate2
export (`zoo.serving.ctranslate2_model`) without TensorFlow: this package's
`__init__` and the modules that answer HTTP import neither.
"""

import signal
import threading

from zoo.serving.rest import LoadError, RequestError
from zoo.serving.server import ModelServer

__all__ = ["LoadError", "ModelServer", "RequestError", "serve"]


def serve(path, version, model_name, log=print, **options):
    """Serves until SIGTERM or SIGINT, then answers the requests in flight.

    Args:
        path: str, the version directory; version: int.
        model_name: str, the NAME of the routes.
        log: callable taking one line, for the start and stop lines.
        **options: the other arguments of `ModelServer`.

    Returns:
        0, the exit status.

    Raises:
        OSError: when the address cannot be bound.
        LoadError: when the SavedModel does not load.
    """
    server = ModelServer(path, version, model_name, **options).start()
    stop = threading.Event()
    previous = {
        sig: signal.signal(sig, lambda *_: stop.set())
        for sig in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        try:
            server.load()
        except BaseException:
            server.stop(grace=0)
            raise
        log(f"serving {model_name} version {version} from {path} at {server.url}/")
        # A timed wait, so that the signal handler runs promptly.
        while not stop.wait(0.5):
            pass
        log("stopping: answering the requests in flight")
        server.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
