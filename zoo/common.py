"""Helpers shared by the builders: argument checks and preset resolution."""

import inspect

import keras

from keras_seq.masks import check_token_ids


def hyperparameters(model_cls):
    """The names of `model_cls.__init__`'s arguments, in signature order.

    Every zoo model stores each argument under its own name, so its config
    is read off its signature: each hyperparameter is written once.
    """
    parameters = inspect.signature(model_cls.__init__).parameters.values()
    return tuple(
        parameter.name
        for parameter in parameters
        if parameter.name != "self"
        and parameter.kind is not inspect.Parameter.VAR_KEYWORD
    )


class TokenIdsModel(keras.Model):
    """A functional model whose every input is a batch of token ids.

    Keras converts the inputs of a functional model to the dtype of its
    `keras.Input`s, which would truncate float ids (5.7 becomes 5) without a
    word; `call` refuses them first, naming the input.

    Its config is its constructor's arguments (`hyperparameters`), each
    stored by the subclass under its own name, plus `name` and `trainable`.
    """

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable}
        for name in hyperparameters(type(self)):
            config[name] = getattr(self, name)
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def call(self, inputs, training=None, mask=None, **kwargs):
        if isinstance(inputs, dict):
            named = list(inputs.items())
        elif isinstance(inputs, (list, tuple)) and len(inputs) == len(self.inputs) > 1:
            named = [(spec.name, value) for spec, value in zip(self.inputs, inputs)]
        else:
            named = [(self.inputs[0].name, inputs)]
        for name, value in named:
            if hasattr(value, "shape") and hasattr(value, "dtype"):
                check_token_ids(value, name)
        return super().call(inputs, training=training, mask=mask, **kwargs)


def final_norm(norm_first, epsilon, name):
    """A closing layer norm for pre-norm stacks, identity for post-norm ones.

    Post-norm blocks already end with a normalization; pre-norm blocks leave
    their residual stream unnormalized, so the stack needs one more.
    """
    if norm_first:
        return keras.layers.LayerNormalization(epsilon=epsilon, name=name)
    return keras.layers.Identity(name=name)


# What a zoo model passes on to `keras.Model`; the rest are hyperparameters.
MODEL_KWARGS = ("name", "trainable")


def init_defaults(model_cls):
    """The hyperparameters of `model_cls.__init__` with their defaults.

    Builders merge a preset and the user's overrides onto these, so each
    default is written once, in the model's signature.

    Returns:
        A dict from argument name to default value.
    """
    parameters = inspect.signature(model_cls.__init__).parameters.values()
    return {
        parameter.name: parameter.default
        for parameter in parameters
        if parameter.default is not inspect.Parameter.empty
    }


def check_model_kwargs(kwargs, model_cls, family):
    """Raise a `TypeError` for keyword arguments a zoo model does not take.

    A zoo model's `**kwargs` go to `keras.Model`, which accepts only
    `name` and `trainable` here; anything else is a misspelled
    hyperparameter and must fail loudly rather than deep in Keras.

    Args:
        kwargs: the `**kwargs` the model's `__init__` received.
        model_cls: the model class, whose signature lists the valid names.
        family: the family's name in the message, e.g. `"RNN seq2seq"`.
    """
    unknown = sorted(set(kwargs) - set(MODEL_KWARGS))
    if unknown:
        raise TypeError(
            f"Unknown {family} arguments {unknown}; expected some of "
            f"{sorted(init_defaults(model_cls))}."
        )


def resolve_config(defaults, presets, preset, overrides, family):
    """defaults <- preset config <- user overrides, with clear errors.

    Args:
        defaults: the family's defaults, usually `init_defaults(ModelClass)`.
        presets: the family's presets, a dict of name -> preset dict.
        preset: a preset name, or None.
        overrides: the builder's keyword arguments.
        family: the family's name in error messages.

    Returns:
        The merged config dict.
    """
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
