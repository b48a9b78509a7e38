"""Helpers shared by the builders: argument checks and preset resolution."""

import keras


def check_positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"`{name}` must be a positive integer; received {value!r}.")


def final_norm(norm_first, epsilon, name):
    """A closing layer norm for pre-norm stacks, identity for post-norm ones.

    Post-norm blocks already end with a normalization; pre-norm blocks leave
    their residual stream unnormalized, so the stack needs one more.
    """
    if norm_first:
        return keras.layers.LayerNormalization(epsilon=epsilon, name=name)
    return keras.layers.Identity(name=name)


def resolve_config(defaults, presets, preset, overrides, family):
    """defaults <- preset config <- user overrides, with clear errors."""
    config = dict(defaults)
    if preset is not None:
        if preset not in presets:
            raise ValueError(
                f"Unknown {family} `preset` {preset!r}; expected one of "
                f"{sorted(presets)}."
            )
        config.update(presets[preset]["config"])
    allowed = set(defaults) | {"vocabulary_size", "name"}
    unknown = sorted(set(overrides) - allowed)
    if unknown:
        raise TypeError(
            f"Unknown {family} arguments {unknown}; expected some of {sorted(allowed)}."
        )
    config.update(overrides)
    return config
