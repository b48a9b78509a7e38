"""Helpers shared by the builders: argument checks and preset resolution."""

import contextlib
import gc
import inspect
import re

import keras

from keras_seq.masks import (
    assert_id_range,
    check_id_range,
    check_token_ids,
    unread_ids,
)


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


# The hyperparameter that bounds the ids of each input, by input name.
INPUT_VOCABULARIES = {
    "token_ids": "vocabulary_size",
    "encoder_token_ids": "source_vocabulary_size",
    "decoder_token_ids": "target_vocabulary_size",
}


# `keras.Model.fit`'s signature, read once, before anything wraps `fit`.
_FIT_SIGNATURE = inspect.signature(keras.Model.fit)
_FIT_PARAMETERS = tuple(_FIT_SIGNATURE.parameters)[1:]  # after `self`


class TokenIdsModel(keras.Model):
    """A functional model whose every input is a batch of token ids.

    Keras converts the inputs of a functional model to the dtype of its
    `keras.Input`s, which would truncate float ids (5.7 becomes 5) without a
    word; `call` refuses them first, naming the input.

    An id past the vocabulary does not fail alike on every path: inside a
    compiled step TensorFlow's gather raises `InvalidArgumentError` and
    JAX's reads NaN. So ids that can be read are checked before any graph
    runs, with the `ValueError` of `keras_seq.masks.check_id_range` that
    names the input and the range: in an eager `call`, and in `fit`,
    `evaluate`, `predict` and the `*_on_batch` methods for arrays and
    tensors (`x`, integer `y` and `validation_data`). A `tf.data.Dataset`
    is read batch by batch, so its batches are checked in the pipeline
    itself, on the host and on every backend: a batch with an id out of
    range stops the pipeline with an `InvalidArgumentError` whose message
    names the input and the range, before any step sees it (inside the step
    the ids are not read: PyTorch's eager steps would stall on the host,
    see `unread_ids`). A Python generator is not checked.

    Subclasses name the hyperparameter that bounds integer targets in
    `label_bound` (`None`: targets are not checked).

    Its config is its constructor's arguments (`hyperparameters`), each
    stored by the subclass under its own name (or the one
    `renamed_hyperparameters` gives), plus `name` and `trainable`.
    """

    label_bound = None
    # Hyperparameters kept under another attribute, by config name: one whose
    # name is a method of the model (the RNN translator's attention `score`
    # against `GenerativeModel.score`) must not hide it.
    renamed_hyperparameters = {}

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable}
        for name in hyperparameters(type(self)):
            config[name] = getattr(self, self.renamed_hyperparameters.get(name, name))
        quantized = quantized_layers(self)
        if quantized:
            config["quantization"] = quantized
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        quantized = config.pop("quantization", None)
        model = cls(**config)
        if quantized:
            requantize(model, quantized)
        return model

    def quantize(self, mode=None, config=None, filters=None, **kwargs):
        """`keras.Model.quantize`, skipping the layers Keras cannot quantize.

        Keras' int8 `EinsumDense` cannot rescale an equation whose output
        keeps no axis of the kernel (the score vector v of additive
        attention, `"btsu,u->bts"`); such a vector is also too small to gain
        anything from int8, so it stays in float. See `keras.Model.quantize`
        for the arguments.
        """

        def chosen(layer):
            return quantizable(layer) and _matches(layer, filters)

        with one_garbage_collection():
            super().quantize(mode, config=config, filters=chosen, **kwargs)

    def call(self, inputs, training=None, mask=None, **kwargs):
        for name, value in self._named_inputs(inputs):
            if hasattr(value, "shape") and hasattr(value, "dtype"):
                check_token_ids(value, name, self._vocabulary_of(name))
        return super().call(inputs, training=training, mask=mask, **kwargs)

    @property
    def jit_compile(self):
        return keras.Model.jit_compile.fget(self)

    @jit_compile.setter
    def jit_compile(self, value):
        # Keras would hand the step to `torch.compile`, which recompiles it
        # for every new batch shape (each length bucket: minutes on a CPU
        # for the tiny translator) and breaks its graph at Keras' layer
        # hooks, after which the steps run no faster than eager ones.
        if value is True and keras.backend.backend() == "torch":
            raise ValueError(
                "`jit_compile=True` is refused on the PyTorch backend: "
                "torch.compile recompiles the training step for every batch "
                "shape and breaks its graph at Keras' layer hooks, so it trains "
                'no faster than eager; use jit_compile=False or "auto" (eager), '
                "or XLA with KERAS_BACKEND=tensorflow or jax."
            )
        keras.Model.jit_compile.fset(self, value)

    def compile_from_config(self, config):
        # A saved `jit_compile` is what "auto" resolved to on the backend
        # that trained (True under XLA); PyTorch resolves it anew.
        if keras.backend.backend() == "torch" and config.get("jit_compile") is True:
            config = {**config, "jit_compile": "auto"}
        return super().compile_from_config(config)

    # PyTorch runs `fit`'s steps eagerly, on concrete ids: reading them on
    # the host would stall every step (see `unread_ids`). TensorFlow and JAX
    # trace the steps, where ids are never read.
    def train_step(self, *args, **kwargs):
        with unread_ids():
            return super().train_step(*args, **kwargs)

    def test_step(self, *args, **kwargs):
        with unread_ids():
            return super().test_step(*args, **kwargs)

    def predict_step(self, *args, **kwargs):
        with unread_ids():
            return super().predict_step(*args, **kwargs)

    def label_size(self):
        """`(size, size_name)` bounding integer targets, or `None`."""
        if self.label_bound is None:
            return None
        return getattr(self, self.label_bound), self.label_bound

    def fit(self, x=None, y=None, *args, **kwargs):
        arguments = _FIT_SIGNATURE.bind(None, x, y, *args, **kwargs).arguments
        self._check_data(x, y)
        validation = arguments.get("validation_data")
        if isinstance(validation, (list, tuple)) and 2 <= len(validation) <= 3:
            self._check_data(validation[0], validation[1], "validation_data")
        elif _is_dataset(validation):
            checked = self._checked_dataset(validation, "validation_data")
            if "validation_data" in kwargs:
                kwargs["validation_data"] = checked
            else:  # given by position, after x and y
                args = list(args)
                args[_FIT_PARAMETERS.index("validation_data") - 2] = checked
        with _kept_when_refused(self):
            return super().fit(self._checked_dataset(x), y, *args, **kwargs)

    def evaluate(self, x=None, y=None, *args, **kwargs):
        self._check_data(x, y)
        with _kept_when_refused(self):
            return super().evaluate(self._checked_dataset(x), y, *args, **kwargs)

    def predict(self, x, *args, **kwargs):
        self._check_data(x)
        with _kept_when_refused(self):
            return super().predict(self._checked_dataset(x), *args, **kwargs)

    def train_on_batch(self, x, y=None, *args, **kwargs):
        self._check_data(x, y)
        return super().train_on_batch(x, y, *args, **kwargs)

    def test_on_batch(self, x, y=None, *args, **kwargs):
        self._check_data(x, y)
        return super().test_on_batch(x, y, *args, **kwargs)

    def predict_on_batch(self, x):
        self._check_data(x)
        return super().predict_on_batch(x)

    def _named_inputs(self, inputs):
        """`(input name, value)` pairs of a dict, a list or a single input."""
        if isinstance(inputs, dict):
            return list(inputs.items())
        if isinstance(inputs, (list, tuple)) and len(inputs) == len(self.inputs) > 1:
            return [(spec.name, value) for spec, value in zip(self.inputs, inputs)]
        return [(self.inputs[0].name, inputs)]

    def _vocabulary_of(self, input_name):
        return getattr(self, INPUT_VOCABULARIES.get(input_name, ""), None)

    def _check_data(self, x, y=None, prefix=None):
        """Refuses ids and integer targets out of range in arrays and tensors.

        Datasets, generators and anything else without a shape and dtype
        pass unread, to be read batch by batch by Keras. Inputs are named
        as `call` names them; inside `validation_data`, by their place in
        it (`validation_data[0]['encoder_token_ids']`).
        """
        for input_name, value in self._named_inputs(x):
            if not _is_array(value):
                continue
            name = input_name
            if prefix is not None:
                name = f"{prefix}[0]"
                if value is not x:
                    name += f"[{input_name!r}]"
            check_token_ids(value, name, self._vocabulary_of(input_name))
        label_size = self.label_size()
        if label_size is not None and _is_array(y) and _is_integer(y.dtype):
            check_id_range(y, "y" if prefix is None else f"{prefix}[1]", *label_size)

    def _checked_dataset(self, data, prefix="x"):
        """`data`, a `tf.data.Dataset`, with each batch's ids checked as it
        is read; anything else as it is.

        The check runs in the pipeline, in TensorFlow on the host, so a
        step never reads ids for it on any backend.
        """
        if not _is_dataset(data):
            return data
        import tensorflow as tf

        def checked(*element):
            inputs = element[0]  # (x, y, ...) or x alone
            where = f" in the `{prefix}` dataset"
            checks = []
            for input_name, ids in self._named_inputs(inputs):
                size = self._vocabulary_of(input_name)
                if size is not None and ids.dtype.is_integer:
                    size_name = INPUT_VOCABULARIES[input_name]
                    checks.append(
                        assert_id_range(ids, input_name, size, size_name, where)
                    )
            label_size = self.label_size()
            labels = element[1] if len(element) > 1 else None
            if label_size is not None and _is_tensor_of_ints(labels):
                checks.append(assert_id_range(labels, "y", *label_size, where))
            with tf.control_dependencies(checks):
                element = tf.nest.map_structure(tf.identity, element)
            return element if len(element) > 1 else element[0]

        return data.map(checked)


@contextlib.contextmanager
def _kept_when_refused(model):
    """Within this context, a failure leaves the model's variables as they were.

    Keras' JAX trainer detaches every variable's value (model, optimizer,
    metrics) at the start of an epoch to save memory, and attaches the
    values back from the state of the last step run. When the first batch
    of a `fit`, `evaluate` or `predict` fails (a `tf.data` batch refused by
    the pipeline's id check), no step has run and the variables are left
    without values: every later `get_weights`, `fit` or `save` fails. The
    values held on entry are attached back to those variables. JAX arrays
    are immutable, so holding them copies nothing; after a step has run the
    trainer attaches its own state, and nothing here is needed. Other
    backends keep their values in place.
    """
    if keras.backend.backend() != "jax":
        yield
        return
    variables = {}
    for variable in _trainer_variables(model):
        variables[id(variable)] = (variable, variable.value)
    try:
        yield
    except BaseException:
        for variable, value in variables.values():
            if _detached(variable):
                variable.assign(value)
        raise


def _trainer_variables(model):
    optimizer = getattr(model, "optimizer", None)
    return (
        list(model.trainable_variables)
        + list(model.non_trainable_variables)
        + list(optimizer.variables if optimizer is not None else [])
        + list(model.metrics_variables)
    )


def _detached(variable):
    # The JAX trainer detaches a value by setting it to None.
    return getattr(variable, "_value", True) is None


def quantizable(layer):
    """Whether `TokenIdsModel.quantize` may quantize this (leaf) layer.

    Layers without a quantization of their own (norms, dropout, recurrent
    cells) are left out quietly rather than each warned about by Keras.
    """
    if type(layer).quantize is keras.layers.Layer.quantize:
        return False
    if isinstance(layer, keras.layers.EinsumDense):
        return len(layer.kernel.shape) > 1
    return True


def _matches(layer, filters):
    # `keras.Model.quantize`'s reading of its `filters`: a regex or a list
    # of them searched in the layer's name, or a predicate.
    if filters is None:
        return True
    if isinstance(filters, str):
        filters = [filters]
    if isinstance(filters, (list, tuple)):
        return any(re.search(pattern, layer.name) for pattern in filters)
    return bool(filters(layer))


def quantized_layers(model):
    """`{layer path: dtype policy name}` of the model's quantized layers.

    A zoo model's config is its hyperparameters, so the layers it builds
    from them are float when a `.keras` file is read; this record, kept in
    the config, lets `requantize` give them the quantized variables the file
    holds before Keras loads them.
    """
    # Private, and kept: Keras 3 has no public walk of a model's nested
    # layers (`Model.layers` lists the direct children only, and a layer
    # tracks its sublayers in `_layers`), while `keras.Model.quantize`
    # walks `_flatten_layers` itself; the variables' public paths would not
    # say which layer is quantized, nor by which policy (int4's block size).
    return {
        layer.path: layer.dtype_policy.name
        for layer in model._flatten_layers()
        if getattr(layer, "quantization_mode", None) is not None
    }


@contextlib.contextmanager
def one_garbage_collection():
    """Runs a block with one garbage collection at its end instead of many.

    Keras' `Layer.__delattr__` runs a full `gc.collect()` for each variable
    a layer drops, as quantizing does with every float kernel, so that
    device buffers are freed at once; in a process holding many objects
    each collection takes a good part of a second. One collection after the
    whole model frees the same buffers.
    """
    collect = gc.collect
    gc.collect = lambda generation=2: 0
    try:
        yield
    finally:
        gc.collect = collect
        collect()


def requantize(model, quantized):
    """Quantize `model`'s layers as `quantized_layers` recorded them.

    Args:
        model: a zoo model just built from its config.
        quantized: `{layer path: dtype policy name}`, e.g.
            `{"logits": "int8_from_float32"}`.
    """
    by_policy = {}
    for path, policy_name in quantized.items():
        by_policy.setdefault(policy_name, set()).add(path)
    for policy_name, paths in by_policy.items():
        policy = keras.dtype_policies.get(policy_name)
        config = None
        if policy.quantization_mode == "int4":
            # The block size is the one setting of a mode its name carries.
            config = keras.quantizers.Int4QuantizationConfig(
                block_size=policy.block_size
            )
        with one_garbage_collection():
            keras.Model.quantize(
                model,
                policy.quantization_mode,
                config=config,
                filters=lambda layer, paths=paths: layer.path in paths,
            )
    missing = set(quantized) - set(quantized_layers(model))
    if missing:
        raise ValueError(
            f"The config records quantized layers {sorted(missing)} that the "
            "model built from it does not quantize."
        )


def _is_dataset(data):
    # Without importing TensorFlow, which a PyTorch or JAX machine may lack.
    return any(
        cls.__module__.startswith("tensorflow") and cls.__name__ == "DatasetV2"
        for cls in type(data).__mro__
    )


def _is_tensor_of_ints(value):
    return _is_array(value) and value.dtype.is_integer


def _is_array(value):
    return hasattr(value, "shape") and hasattr(value, "dtype")


def _is_integer(dtype):
    dtype = keras.backend.standardize_dtype(dtype)
    return dtype.startswith("int") or dtype.startswith("uint")


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
