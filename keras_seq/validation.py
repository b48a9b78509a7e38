"""Argument checks shared by the layers, the builders and the pipelines.

Each check raises a `ValueError` that names the argument, says what was
expected and shows what was received, so that a bad hyperparameter fails
when the object is made, not deep inside a traced graph.
"""

import numbers

import keras


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
