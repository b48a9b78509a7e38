"""The sentences a command reads: its arguments, or the lines of stdin."""

import sys

from zoo.cli.errors import UsageError


def read_texts(texts, what="sentences"):
    """`texts` if any, else stdin's lines (blank ones kept, in order).

    One output line per input line, always: a blank line stays a line, so
    outputs line up with inputs.

    Args:
        texts: list of str, the command's positional arguments.
        what: str, what the lines are, for the prompt on a terminal.

    Returns:
        A list of str.

    Raises:
        UsageError: when stdin is not valid UTF-8.
    """
    if texts:
        return list(texts)
    if sys.stdin.isatty():
        print(
            f"reading {what} from stdin, one a line; end with Ctrl-D",
            file=sys.stderr,
            flush=True,
        )
    lines = []
    for number, raw in enumerate(sys.stdin.buffer, start=1):
        try:
            lines.append(raw.decode("utf-8").rstrip("\r\n"))
        except UnicodeDecodeError as error:
            raise UsageError(
                f"stdin is not valid UTF-8: {error.reason} at byte "
                f"{error.start} (line {number})."
            ) from None
    return lines
