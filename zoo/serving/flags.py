"""The flags of `keras-seq serve`, shared by the SavedModel and CTranslate2
command lines (the second runs without TensorFlow, so they live here).

Each server flag defaults to None and, left out, takes the value of
`zoo.recipes.settings.ServeSettings`, which `ModelServer` defaults to and
the help shows.
"""

from zoo.recipes.settings import ServeSettings

OPTIONS = (
    "model_name",
    "host",
    "port",
    "max_batch_size",
    "batch_timeout_micros",
    "max_body_bytes",
    "max_rows_per_request",
    "request_timeout",
)

_FLAGS = (
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
        "--max-rows-per-request",
        int,
        "requests of more examples are refused (HTTP 400); larger ones than "
        "--max-batch-size are run a batch at a time, between other requests",
    ),
    (
        "--request-timeout",
        float,
        "seconds a client may stall while sending a request (then HTTP 408)",
    ),
)


def add_server_arguments(parser):
    """Adds `--ctranslate2` and the server's flags to `parser`."""
    parser.add_argument(
        "--ctranslate2",
        default=None,
        metavar="DIR",
        help="a CTranslate2 export (keras-seq export --format ctranslate2) to "
        "serve instead, without TensorFlow",
    )
    parser.add_argument(
        "--model-name",
        default=None,
        help="NAME in /v1/models/NAME; None: the base directory's name",
    )
    defaults = ServeSettings()
    for flag, kind, words in _FLAGS:
        default = getattr(defaults, flag[2:].replace("-", "_"))
        parser.add_argument(
            flag, type=kind, default=None, help=f"{words} (default: {default})"
        )


def server_options(args):
    """The server flags given (not None), as `ModelServer`'s arguments."""
    return {
        option: getattr(args, option)
        for option in OPTIONS[1:]
        if getattr(args, option) is not None
    }


def address(args):
    """`--host H --port P` as the server binds them, for messages."""
    host = ServeSettings.host if args.host is None else args.host
    port = ServeSettings.port if args.port is None else args.port
    return f"--host {host} --port {port}"


def usage_message(error):
    """An option's error message with the option spelled as its flag."""
    message = str(error)
    for option in OPTIONS:
        message = message.replace(f"`{option}`", "--" + option.replace("_", "-"))
    return message
