"""Argument checks shared by the layers, the builders and the pipelines.

Each check raises a `ValueError` that names the argument, says what was
expected and shows what was received, so that a bad hyperparameter fails
when the object is made, not deep inside a traced graph.
"""

import math
import numbers


def check_positive_int(value, name, allow_none=False):
    """Raise unless `value` is an int > 0 (or None, when `allow_none`).

    NumPy integers count as integers; `bool` is refused although it is an
    `int` subclass: `True` as a width is always a mistake.
    """
    if allow_none and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        expected = "a positive integer or None" if allow_none else "a positive integer"
        raise ValueError(f"`{name}` must be {expected}; received {value!r}.")


def check_rate(value, name="dropout"):
    """Raise unless `value` is a real number in [0, 1), e.g. a dropout rate."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"`{name}` must be a float in [0, 1); received {value!r}.")
    if not 0.0 <= value < 1.0:
        raise ValueError(f"`{name}` must be in [0, 1); received {value!r}.")


def check_token_id(value, name, size, allow_no_end=False):
    """Raise unless `value` is an int id in [0, size) (`size` None: any id >= 0).

    With `allow_no_end`, None and negative ids pass too: an end id that no
    token has, which decodes to the full length.
    """
    if allow_no_end and (value is None or (_is_int(value) and value < 0)):
        return
    expected = f"an int id in [0, {size})" if size else "an int id >= 0"
    if allow_no_end:
        expected += ", or None (or a negative id) for no end token"
    if not _is_int(value) or value < 0 or (size and value >= size):
        raise ValueError(f"`{name}` must be {expected}; received {value!r}.")


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_bool(value, name):
    """Raise unless `value` is `True` or `False`."""
    if not isinstance(value, bool):
        raise ValueError(f"`{name}` must be True or False; received {value!r}.")


def check_choice(value, name, choices):
    """Raise unless `value` is one of `choices`."""
    if value not in choices:
        raise ValueError(
            f"`{name}` must be one of {tuple(choices)}; received {value!r}."
        )


def clone_initializer(initializer):
    """A fresh copy of a Keras initializer.

    Keras initializers are objects with state: one instance shared by
    several sublayers makes Keras warn that an unseeded initializer is
    called repeatedly. Each sublayer gets its own copy of the configured
    initializer, as keras-hub's `clone_initializer` does.
    """
    import keras  # Only here: the checks above import without Keras.

    initializer = keras.initializers.get(initializer)
    return initializer.__class__.from_config(initializer.get_config())


def check_seed(value, name="seed"):
    """Raise unless `value` is None or an int in [0, 2**31)."""
    if value is None:
        return
    if not _is_int(value) or not 0 <= value < 2**31:
        raise ValueError(
            f"`{name}` must be None or an int in [0, 2**31); received {value!r}."
        )


def check_int_in(value, name, low, high=None, bound="", allow_none=True):
    """Refuse `value` unless it is an int in [low, high] (or None, when
    `allow_none`).

    The same messages as the application's options (`beam_width`,
    `top_k`, `max_new_tokens`), so the raw model API and the command line
    refuse a value alike.

    Args:
        value: the argument's value.
        name: str, the argument's name.
        low: int, the smallest value allowed.
        high: int or None (no upper bound), the largest.
        bound: str, what `high` is, e.g. "the target vocabulary size".
        allow_none: bool, whether None passes.

    Raises:
        TypeError: when `value` is not an int (a bool or a float is not).
        ValueError: when it is out of [low, high].
    """
    if value is None and allow_none:
        return
    if not _is_int(value):
        raise TypeError(f"`{name}` must be an int; received {value!r}.")
    if value < low:
        raise ValueError(f"`{name}` must be at least {low}; received {value}.")
    if high is not None and value > high:
        raise ValueError(
            f"`{name}` must be at most {high} ({bound}); received {value}."
        )


def check_finite(value, name, above_zero=False):
    """Refuse `value` unless it is a finite real number (> 0 with `above_zero`).

    NaN passes every comparison unnoticed (a NaN temperature turns every
    logit into NaN; a NaN length penalty every score), so it is refused by
    name.

    Raises:
        TypeError: when `value` is not a real number (a str, a bool).
        ValueError: when it is NaN, infinite, or not above 0 where asked.
    """
    expected = "a finite number above 0" if above_zero else "a finite number"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be {expected}; received {value!r}.")
    if not math.isfinite(value) or (above_zero and value <= 0):
        raise ValueError(f"`{name}` must be {expected}; received {value!r}.")


def check_top_p(value, name="top_p"):
    """Refuse `value` unless it is None or a real number in (0, 1]."""
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not 0.0 < value <= 1.0
    ):
        raise ValueError(f"`{name}` must be in (0, 1]; received {value!r}.")


def check_token_id_list(values, name, size=None, low=0):
    """Refuse `values` unless it is None or a sequence of int ids in
    [low, size) (`size` None: any id >= low).

    Returns:
        A tuple of Python ints (empty for None), in the given order.

    Raises:
        TypeError: when `values` is a str, a bare int, or not iterable.
        ValueError: naming the first id out of range.
    """
    if values is None:
        return ()
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(
            f"`{name}` must be a list of int ids or None; received {values!r}."
        )
    expected = f"in [{low}, {size})" if size else f">= {low}"
    ids = []
    for value in values:
        if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
            value = value.item()  # A NumPy or tensor scalar.
        if not _is_int(value) or value < low or (size and value >= size):
            raise ValueError(
                f"`{name}` must hold int ids {expected}; received {value!r}."
            )
        ids.append(int(value))
    return tuple(ids)


def check_prefix_ids(prefix_ids, batch_size, max_new_tokens, size=None):
    """Refuse forced prefixes that do not fit; return them as one array.

    Args:
        prefix_ids: per row, the ids to force after the start token: a list
            of lists (ragged, an empty list forcing nothing) or a (B, P)
            int array padded at the end with 0 (0 = no forced id).
        batch_size: int B, the rows of the input.
        max_new_tokens: int M; no prefix may be longer.
        size: int V or None, the output vocabulary size.

    Returns:
        A (B, M) int32 NumPy array, each row's prefix then zeros.

    Raises:
        TypeError, ValueError: naming `prefix_ids` and what is expected.
    """
    import numpy as np  # Only here: the checks above import without NumPy.

    if hasattr(prefix_ids, "shape") and hasattr(prefix_ids, "dtype"):
        array = np.asarray(prefix_ids)
        if array.ndim != 2 or not np.issubdtype(array.dtype, np.integer):
            raise ValueError(
                "`prefix_ids` must be a list of lists of ids or an int array "
                "of shape (batch_size, prefix_length); received "
                f"{array.dtype} of shape {array.shape}."
            )
        rows = []
        for row in array.tolist():
            ended = [i for i, value in enumerate(row) if value == 0]
            if ended and any(row[ended[0] :]):
                raise ValueError(
                    "`prefix_ids` rows must be padded with 0 at the end only; "
                    f"received {row}."
                )
            rows.append(row[: ended[0]] if ended else row)
    elif isinstance(prefix_ids, (list, tuple)):
        rows = [check_token_id_list(row, "prefix_ids", size, 1) for row in prefix_ids]
    else:
        raise TypeError(
            "`prefix_ids` must be a list of lists of ids or an int array of "
            f"shape (batch_size, prefix_length); received {prefix_ids!r}."
        )
    if len(rows) != batch_size:
        raise ValueError(
            f"`prefix_ids` must have one row per input row ({batch_size}); "
            f"received {len(rows)}."
        )
    padded = np.zeros((batch_size, max_new_tokens), "int32")
    for index, row in enumerate(rows):
        if len(row) > max_new_tokens:
            raise ValueError(
                f"`prefix_ids` rows must hold at most max_new_tokens="
                f"{max_new_tokens} ids; received {len(row)}."
            )
        check_token_id_list(row, "prefix_ids", size, 1)
        padded[index, : len(row)] = row
    return padded


def check_control_values(
    max_new_tokens=None,
    min_new_tokens=None,
    no_repeat_ngram_size=None,
    repetition_penalty=None,
    suppress_unknown=False,
):
    """Refuses a control's value out of its range, naming the argument.

    The one check of the scalar decoding controls: `generate` and
    `beam_search` call it, and so do the application's paths before they
    tokenize anything.

    Args:
        max_new_tokens: int or None, the bound of `min_new_tokens` (None:
            none).
        min_new_tokens, no_repeat_ngram_size: None or an int >= 0.
        repetition_penalty: None or a finite float > 0.
        suppress_unknown: bool.

    Raises:
        TypeError, ValueError: naming the argument and its range.
    """
    check_int_in(min_new_tokens, "min_new_tokens", 0, max_new_tokens, "max_new_tokens")
    check_int_in(no_repeat_ngram_size, "no_repeat_ngram_size", 0)
    if repetition_penalty is not None:
        check_finite(repetition_penalty, "repetition_penalty", above_zero=True)
    check_bool(suppress_unknown, "suppress_unknown")


def check_target_prefix(target_prefix, count):
    """Each text's forced start, as a list of `count` str (None: none).

    The one check of prefixes given as text (`target_prefix` of
    `TrainedModel.translate`, the command line and the CTranslate2 paths);
    `check_prefix_ids` then checks the ids they tokenize to.

    Args:
        target_prefix: None, one str (the start of every text's
            translation) or a list of str, one per text ("" forces
            nothing).
        count: int, the number of texts.

    Returns:
        None for None, else a list of `count` str.

    Raises:
        TypeError: when `target_prefix` is neither a str nor a list of str.
        ValueError: when the list does not hold one str per text.
    """
    if target_prefix is None:
        return None
    if isinstance(target_prefix, str):
        return [target_prefix] * count
    if isinstance(target_prefix, bytes) or not hasattr(target_prefix, "__iter__"):
        raise TypeError(
            "`target_prefix` must be a str or a list of str; received "
            f"{type(target_prefix).__name__}."
        )
    prefixes = list(target_prefix)
    for item in prefixes:
        if not isinstance(item, str):
            raise TypeError(
                "`target_prefix` must hold str; received "
                f"{type(item).__name__} ({item!r})."
            )
    if len(prefixes) != count:
        raise ValueError(
            f"`target_prefix` must hold one str per text ({count}); "
            f"received {len(prefixes)}."
        )
    return prefixes


def check_token_names(tokens, name, vocabulary):
    """The ids of the tokens `tokens` names in `vocabulary` (None: none).

    The one check of tokens given as text (`suppress` of
    `TrainedModel.translate`, the command line and the CTranslate2 paths).

    Args:
        tokens: None, or a list of str.
        name: str, the argument's name for the message.
        vocabulary: the list of str tokens, by id.

    Returns:
        A list of int ids, in the given order (None for None).

    Raises:
        TypeError: when `tokens` is a str or holds a non-str.
        ValueError: naming the first token `vocabulary` lacks.
    """
    if tokens is None:
        return None
    if isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__iter__"):
        raise TypeError(
            f"`{name}` must be a list of str; received {type(tokens).__name__}."
        )
    ids = {token: i for i, token in enumerate(vocabulary)}
    found = []
    for token in tokens:
        if not isinstance(token, str):
            raise TypeError(
                f"`{name}` must be a list of str; received an item of type "
                f"{type(token).__name__}."
            )
        if token not in ids:
            raise ValueError(
                f"`{name}` names {token!r}, which is no token of the output "
                f"vocabulary ({len(vocabulary)} tokens)."
            )
        found.append(ids[token])
    return found
