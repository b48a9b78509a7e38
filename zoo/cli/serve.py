"""`keras-seq serve`: an exported SavedModel behind TF Serving's REST API."""

import os
import sys

from zoo import serving
from zoo.cli.errors import UsageError
from zoo.recipes.saved_model import latest_version


def add_parser(commands):
    """Adds `serve` and its flags to the `keras-seq` subparsers."""
    parser = commands.add_parser(
        "serve",
        help="serve an exported SavedModel with TF Serving's REST API and a page",
    )
    parser.add_argument(
        "--saved-model",
        required=True,
        help="the base of numbered versions (the highest is served) or a version",
    )
    parser.add_argument(
        "--model-name",
        default=None,
        help="NAME in /v1/models/NAME; None: the base directory's name",
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to bind")
    parser.add_argument("--port", type=int, default=8501, help="the port to bind")
    parser.add_argument(
        "--max-batch-size",
        type=int,
        default=32,
        help="the most examples of concurrent requests merged into one model call",
    )
    parser.add_argument(
        "--batch-timeout-micros",
        type=int,
        default=0,
        help="the longest a batch waits for more requests (0: only those waiting)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=1 << 20,
        help="larger request bodies are refused (HTTP 413)",
    )
    parser.add_argument(
        "--request-timeout",
        type=float,
        default=10.0,
        help="seconds a client may stall while sending a request (then HTTP 408)",
    )
    parser.set_defaults(run=run)


def _base_and_version(path):
    """(base directory, version directory, version number) `path` means."""
    version_dir = latest_version(path)
    if version_dir != path:
        return path, version_dir, int(os.path.basename(version_dir))
    name = os.path.basename(os.path.normpath(path))
    if name.isdigit():
        return os.path.dirname(os.path.normpath(path)), path, int(name)
    return path, path, 1


OPTIONS = (
    "model_name",
    "port",
    "max_batch_size",
    "batch_timeout_micros",
    "max_body_bytes",
    "request_timeout",
)


def run(args):
    """Serves `--saved-model` until SIGTERM; 0 after the requests in flight."""
    base, version_dir, version = _base_and_version(args.saved_model)
    name = args.model_name or os.path.basename(os.path.abspath(base)) or "model"
    try:
        return serving.serve(
            version_dir,
            version,
            name,
            log=lambda line: print(line, flush=True),
            host=args.host,
            port=args.port,
            max_batch_size=args.max_batch_size,
            batch_timeout_micros=args.batch_timeout_micros,
            max_body_bytes=args.max_body_bytes,
            request_timeout=args.request_timeout,
        )
    except ValueError as error:
        message = str(error)
        for option in OPTIONS:
            message = message.replace(f"`{option}`", "--" + option.replace("_", "-"))
        raise UsageError(message) from None
    except serving.LoadError as error:
        raise UsageError(f"--saved-model {args.saved_model}: {error}") from None
    except OSError as error:
        reason = error.strerror or str(error)
        raise UsageError(
            f"--host {args.host} --port {args.port}: cannot listen there ({reason})"
        ) from None
    finally:
        sys.stdout.flush()
