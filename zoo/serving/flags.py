"""The flags of `keras-seq serve`, shared by the SavedModel and CTranslate2
command lines (the second runs without TensorFlow, so they live here)."""

OPTIONS = (
    "model_name",
    "port",
    "max_batch_size",
    "batch_timeout_micros",
    "max_body_bytes",
    "request_timeout",
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


def usage_message(error):
    """An option's error message with the option spelled as its flag."""
    message = str(error)
    for option in OPTIONS:
        message = message.replace(f"`{option}`", "--" + option.replace("_", "-"))
    return message
