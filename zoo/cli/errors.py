"""What the user can fix: `UsageError`, and the checks that raise it.

`keras-seq` prints a `UsageError` as one line, `keras-seq: <message>`, and
exits with status 1; any other exception is a bug and keeps its traceback.
"""

import contextlib
import math

from zoo.recipes.inputs import UsageError, reported_as_usage  # noqa: F401


def check_at_least(value, flag, minimum=1):
    """Refuses a numeric flag below `minimum`.

    Args:
        value: the flag's value; None (left out) passes.
        flag: str, the flag as typed, e.g. `"--epochs"`.
        minimum: the smallest value allowed.

    Raises:
        UsageError: when `value < minimum`.
    """
    if value is not None and value < minimum:
        raise UsageError(f"{flag} must be at least {minimum}; received {value}")


def check_above_zero(value, flag):
    """Refuses a time or size flag that is not a positive number (None passes).

    Raises:
        UsageError: when `value <= 0`, or is nan or infinite.
    """
    if value is not None and not (math.isfinite(value) and value > 0):
        raise UsageError(f"{flag} must be a finite number above 0; received {value}")


def check_preset(preset, presets, flag="--preset"):
    """Refuses a preset name the family's builder does not know.

    Raises:
        UsageError: when `preset` is not a key of `presets`.
    """
    if preset not in presets:
        raise UsageError(
            f"{flag} must be one of {sorted(presets)}; received {preset!r}"
        )


@contextlib.contextmanager
def named_as_flags(**flags):
    """Turns an API check's `ValueError`/`TypeError` into a `UsageError`.

    The API names its arguments in backquotes (`beam_width`); the message
    the user sees names the flag they typed (--beam-width) instead, so each
    bound is checked once, by the API, for both.

    Args:
        **flags: the API's argument name -> the flag, e.g.
            `beam_width="--beam-width"`.
    """
    try:
        yield
    except (ValueError, TypeError) as error:
        message = str(error)
        for name, flag in flags.items():
            message = message.replace(f"`{name}`", flag)
        raise UsageError(message) from None
