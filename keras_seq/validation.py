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
