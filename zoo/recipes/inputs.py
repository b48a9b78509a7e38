"""Checks of the texts and options the application's Python API takes.

Bounds that depend on a trained model (its vocabulary, its `max_length`)
are the application's to check, before any text is tokenized; the
library's own argument checks are `keras_seq.validation`'s.
"""

import contextlib

import numpy as np


class UsageError(Exception):
    """An error in what the user named (a flag, a file, a directory); its
    message is the fix. `keras-seq` prints it as one line and exits with
    status 1."""


def check_text_list(texts, name="texts"):
    """`texts` as a list of str, refusing one str taken as its characters.

    Args:
        texts: a list (or other iterable) of str.
        name: str, the argument's name for the message.

    Returns:
        A list of str.

    Raises:
        TypeError: when `texts` is a str, bytes or not iterable, or an
            item is not a str.
    """
    if isinstance(texts, str):
        raise TypeError(
            f"`{name}` must be a list of str; received a str (pass [{texts[:20]!r}]"
            " for one text)."
        )
    if isinstance(texts, (bytes, np.ndarray)) or not hasattr(texts, "__iter__"):
        raise TypeError(
            f"`{name}` must be a list of str; received {type(texts).__name__}."
        )
    texts = list(texts)
    for index, item in enumerate(texts):
        if not isinstance(item, str):
            raise TypeError(
                f"`{name}[{index}]` must be a str; received {type(item).__name__}."
            )
    return texts


@contextlib.contextmanager
def reported_as_usage(*errors):
    """Turns `errors` raised inside the block into a `UsageError`.

    For the boundary where a user's file or argument is read by library
    code that raises `ValueError` (a bad vocabulary, an export directory
    already in use): there, such an error is about the input, not a bug.

    Args:
        *errors: exception classes to convert.
    """
    try:
        yield
    except errors as error:
        raise UsageError(str(error)) from None
