"""`keras-seq serve`: an exported SavedModel behind TF Serving's REST API."""

import os
import sys

from zoo.cli.errors import UsageError
from zoo.recipes.settings import ServeSettings


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
    defaults = ServeSettings()
    for flag, kind, words in (
        ("--host", str, "the address to bind"),
        ("--port", int, "the port to bind"),
        (
            "--max-batch-size",
            int,
            "the most examples of concurrent requests merged into one model call",
        ),
        (
            "--batch-timeout-micros",
            int,
            "the longest a batch waits for more requests (0: only those waiting)",
        ),
        ("--max-body-bytes", int, "larger request bodies are refused (HTTP 413)"),
        (
            "--request-timeout",
            float,
            "seconds a client may stall while sending a request (then HTTP 408)",
        ),
    ):
        default = getattr(defaults, flag[2:].replace("-", "_"))
        parser.add_argument(
            flag, type=kind, default=None, help=f"{words} (default: {default})"
        )
    parser.set_defaults(run=run)


def _base_and_version(path):
    """(base directory, version directory, version number) `path` means."""
    from zoo.recipes.saved_model import latest_version

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
    from zoo import serving

    # Flags left out (None) are not passed: the server's defaults are
    # `ServeSettings`', as the help says.
    options = {
        option: getattr(args, option)
        for option in OPTIONS[1:] + ("host",)
        if getattr(args, option) is not None
    }
    try:
        return serving.serve(
            version_dir,
            version,
            name,
            log=lambda line: print(line, flush=True),
            **options,
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
            f"--host {options.get('host', ServeSettings.host)} --port "
            f"{options.get('port', ServeSettings.port)}: cannot listen there "
            f"({reason})"
        ) from None
    finally:
        sys.stdout.flush()
