"""The sentences a command reads (its arguments, or the lines of stdin),
and the one note that says how many of them were cut."""

import contextlib
import re
import sys
import warnings

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


# The counts that open the preprocessors' truncation message
# (`keras_seq.text.preprocessor.warn_cut`): "3 of 10 sentences are ...".
_COUNTS = re.compile(r"(\d+) of (\d+) (.*)", re.DOTALL)


@contextlib.contextmanager
def truncation_note(total=None):
    """Says once on stderr how many inputs the model cut, as a note.

    The preprocessors report what they cut with a `TruncationWarning`;
    inside this context they are caught and printed as one line,
    `keras-seq: note: 3 of 10 sentences are longer than ...`, instead of
    Python's warning with its source line. A command that runs its inputs
    one at a time gets one note counting them all. Other warnings are shown
    as usual.

    Args:
        total: int, the inputs of the command, or None: the sum of the
            totals the warnings name.
    """
    from keras_seq.text import TruncationWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TruncationWarning)
        yield
    cut, seen, words = 0, 0, None
    for warning in caught:
        counts = _COUNTS.fullmatch(str(warning.message))
        if issubclass(warning.category, TruncationWarning) and counts:
            cut += int(counts.group(1))
            seen += int(counts.group(2))
            words = words or counts.group(3)
        else:
            warnings.showwarning(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    if cut:
        total = seen if total is None else total
        print(f"keras-seq: note: {cut} of {total} {words}", file=sys.stderr)
