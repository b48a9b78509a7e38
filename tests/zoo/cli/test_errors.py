"""`zoo.cli.errors`: the flag checks and how API errors name flags."""

import pytest

from zoo.cli.errors import (
    UsageError,
    check_above_zero,
    check_at_least,
    check_preset,
    named_as_flags,
)


def test_numeric_flags():
    check_at_least(None, "--epochs")
    check_at_least(0, "--seed", minimum=0)
    with pytest.raises(UsageError, match=r"^--epochs must be at least 1; received 0$"):
        check_at_least(0, "--epochs")
    check_above_zero(0.5, "--minutes")
    for value in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(UsageError, match="^--minutes must be a finite number"):
            check_above_zero(value, "--minutes")


def test_presets_and_api_names_become_flags():
    with pytest.raises(UsageError, match=r"^--preset must be one of \['a', 'b'\]"):
        check_preset("c", {"b": 1, "a": 2})
    with pytest.raises(UsageError, match=r"^--beam-width must be at most 3; got 4$"):
        with named_as_flags(beam_width="--beam-width"):
            raise ValueError("`beam_width` must be at most 3; got 4")
