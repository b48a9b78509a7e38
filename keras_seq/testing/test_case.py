"""A shared harness that every layer and builder test goes through.

`run_layer_test` checks what a Keras user relies on: the config round trip,
exact weight and parameter counts, symbolic and eager calls with the same
shapes, a training step, mixed precision, and a `.keras` save and load.
`run_model_saving_test` saves a model, loads it back in safe mode with no
`custom_objects`, and compares outputs.
"""

import os
import tempfile

import keras
import numpy as np
from keras import ops

PRECISION_POLICIES = ("mixed_float16", "mixed_bfloat16")


def _as_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


def _flatten(outputs):
    if isinstance(outputs, dict):
        return [outputs[k] for k in sorted(outputs)]
    if isinstance(outputs, (list, tuple)):
        flat = []
        for item in outputs:
            flat.extend(_flatten(item))
        return flat
    return [outputs]


def assert_all_close(actual, expected, atol=1e-6, rtol=0.0, msg=""):
    """Compare (nested) outputs numerically, with the max difference shown."""
    actual, expected = _flatten(actual), _flatten(expected)
    assert len(actual) == len(expected), f"{msg} output count differs"
    for a, e in zip(actual, expected):
        a = _as_numpy(a).astype("float64")
        e = _as_numpy(e).astype("float64")
        assert a.shape == e.shape, f"{msg} shape {a.shape} != {e.shape}"
        diff = float(np.max(np.abs(a - e))) if a.size else 0.0
        np.testing.assert_allclose(
            a, e, atol=atol, rtol=rtol, err_msg=f"{msg} max |diff|={diff:.3g}"
        )


def _symbolic_inputs(input_data):
    """keras.Input placeholders matching `input_data` (batch dim left free)."""
    if isinstance(input_data, dict):
        return {
            name: keras.Input(
                shape=tuple(value.shape[1:]),
                dtype=keras.backend.standardize_dtype(value.dtype),
                name=name,
            )
            for name, value in input_data.items()
        }
    return keras.Input(
        shape=tuple(input_data.shape[1:]),
        dtype=keras.backend.standardize_dtype(input_data.dtype),
    )


def _call(layer, inputs, call_kwargs):
    if isinstance(inputs, dict):
        return layer(**inputs, **call_kwargs)
    return layer(inputs, **call_kwargs)


def _check_config_round_trip(layer_cls, init_kwargs):
    layer = layer_cls(**init_kwargs)
    config = layer.get_config()
    for name, value in init_kwargs.items():
        assert name in config, f"get_config() lacks the argument `{name}`"
        if isinstance(value, (int, float, str, bool, type(None), tuple, list)):
            assert config[name] == value or (
                isinstance(value, tuple) and list(value) == config[name]
            ), f"get_config()[{name!r}] = {config[name]!r}, expected {value!r}"
    revived = layer_cls.from_config(config)
    assert revived.get_config() == config, "from_config(get_config()) differs"
    serialized = keras.saving.serialize_keras_object(layer)
    revived = keras.saving.deserialize_keras_object(serialized)
    assert type(revived) is layer_cls
    assert revived.get_config() == config


def _check_shapes(outputs, expected_output_shape, symbolic):
    flat = _flatten(outputs)
    expected = (
        list(expected_output_shape)
        if isinstance(expected_output_shape, list)
        else [expected_output_shape]
    )
    assert len(flat) == len(expected), (
        f"{len(flat)} outputs, expected {len(expected)} shapes"
    )
    for out, shape in zip(flat, expected):
        got = tuple(out.shape)
        if symbolic:
            shape = (None,) + tuple(shape[1:])
        assert got == tuple(shape), f"output shape {got}, expected {shape}"


def _check_weights(layer, trainable, non_trainable, params):
    if trainable is not None:
        got = len(layer.trainable_weights)
        assert got == trainable, f"{got} trainable weights, expected {trainable}"
    if non_trainable is not None:
        got = len(layer.non_trainable_weights)
        assert got == non_trainable, (
            f"{got} non-trainable weights, expected {non_trainable}"
        )
    if params is not None:
        got = layer.count_params()
        assert got == params, f"{got} parameters, expected {params}"


def _functional_model(layer, input_data, call_kwargs):
    inputs = _symbolic_inputs(input_data)
    outputs = _call(layer, inputs, call_kwargs)
    return keras.Model(inputs, outputs)


def _check_fit_step(layer_cls, init_kwargs, input_data, call_kwargs):
    layer = layer_cls(**init_kwargs)
    inputs = _symbolic_inputs(input_data)
    outputs = _flatten(_call(layer, inputs, call_kwargs))
    float_outputs = [o for o in outputs if "float" in str(o.dtype)]
    if not float_outputs or not layer.trainable_weights:
        return
    model = keras.Model(inputs, float_outputs[0])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    y = np.ones(tuple(float_outputs[0].shape[1:]), dtype="float32")
    x = input_data
    batch = int(_flatten(input_data)[0].shape[0])
    y = np.broadcast_to(y, (batch,) + y.shape).copy()
    before = [_as_numpy(w).copy() for w in layer.trainable_weights]
    history = model.fit(x, y, batch_size=batch, epochs=1, verbose=0)
    loss = history.history["loss"][0]
    assert np.isfinite(loss), f"fit produced a non-finite loss {loss}"
    after = [_as_numpy(w) for w in layer.trainable_weights]
    changed = sum(not np.array_equal(b, a) for b, a in zip(before, after))
    assert changed > 0, "one fit step changed no trainable weight"


def _check_mixed_precision(layer_cls, init_kwargs, input_data, call_kwargs):
    for policy in PRECISION_POLICIES:
        layer = layer_cls(**init_kwargs, dtype=policy)
        outputs = _flatten(_call(layer, input_data, call_kwargs))
        compute = keras.dtype_policies.get(policy).compute_dtype
        for weight in layer.weights:
            if "float" in str(weight.dtype):
                assert keras.backend.standardize_dtype(weight.dtype) == ("float32"), (
                    f"{policy}: weight {weight.path} is {weight.dtype}"
                )
        for out in outputs:
            dtype = keras.backend.standardize_dtype(out.dtype)
            if dtype.startswith("float"):
                assert dtype == compute, f"{policy}: output dtype {dtype}"
                values = _as_numpy(ops.cast(out, "float32"))
                assert np.all(np.isfinite(values)), f"{policy}: non-finite"


def run_layer_test(
    layer_cls,
    init_kwargs,
    input_data,
    expected_output_shape,
    expected_num_trainable_weights=None,
    expected_num_non_trainable_weights=0,
    expected_num_params=None,
    call_kwargs=None,
    run_training_check=True,
    run_precision_checks=True,
    run_saving_check=True,
):
    """Run the standard checks on a layer.

    Args:
        layer_cls: the layer class.
        init_kwargs: dict of constructor arguments.
        input_data: a tensor (the first call argument) or a dict of named
            tensor call arguments.
        expected_output_shape: a shape tuple, or a list of them for layers
            with several outputs (in output order).
        expected_num_trainable_weights: number of trainable variables.
        expected_num_non_trainable_weights: number of non-trainable ones.
        expected_num_params: exact `count_params()` after building.
        call_kwargs: non-tensor call arguments (flags).
        run_training_check: fit one step and check that weights moved.
        run_precision_checks: run under mixed_float16 and mixed_bfloat16.
        run_saving_check: `.keras` save and load of a model around the layer.
    """
    call_kwargs = dict(call_kwargs or {})
    _check_config_round_trip(layer_cls, init_kwargs)

    # Symbolic call.
    layer = layer_cls(**init_kwargs)
    symbolic = _call(layer, _symbolic_inputs(input_data), call_kwargs)
    _check_shapes(symbolic, expected_output_shape, symbolic=True)
    _check_weights(
        layer,
        expected_num_trainable_weights,
        expected_num_non_trainable_weights,
        expected_num_params,
    )

    # Eager call, on a fresh layer so that building happens eagerly too.
    layer = layer_cls(**init_kwargs)
    eager = _call(layer, input_data, call_kwargs)
    _check_shapes(eager, expected_output_shape, symbolic=False)
    _check_weights(
        layer,
        expected_num_trainable_weights,
        expected_num_non_trainable_weights,
        expected_num_params,
    )
    for out in _flatten(eager):
        if "float" in str(out.dtype):
            assert np.all(np.isfinite(_as_numpy(out))), "non-finite output"

    if run_training_check:
        _check_fit_step(layer_cls, init_kwargs, input_data, call_kwargs)
    if run_precision_checks:
        _check_mixed_precision(layer_cls, init_kwargs, input_data, call_kwargs)
    if run_saving_check:
        model = _functional_model(layer_cls(**init_kwargs), input_data, call_kwargs)
        run_model_saving_test(model, input_data)


def run_model_saving_test(model, input_data, atol=1e-6):
    """Save `model` to `.keras`, load it in safe mode, compare outputs.

    Loading passes no `custom_objects`: every keras-seq object must be
    registered under the `keras_seq` package so that a user can load a file
    by importing the package.

    Returns:
        The restored model.
    """
    expected = model(input_data, training=False)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.keras")
        model.save(path)
        restored = keras.saving.load_model(path, safe_mode=True)
    actual = restored(input_data, training=False)
    assert_all_close(actual, expected, atol=atol, msg="after .keras reload:")
    return restored


def input_gradient(fn, x):
    """Gradient of `sum(fn(x))` with respect to `x`, on the active backend.

    Used by tests of masked rows (zero gradients) and of invariances.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf  # Backend-specific: only with TensorFlow.

        x = tf.convert_to_tensor(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.cast(fn(x), "float32"))
        return np.asarray(tape.gradient(y, x)).astype("float32")
    if backend == "jax":
        import jax  # Backend-specific: only with JAX.
        import jax.numpy as jnp

        grad = jax.grad(lambda v: jnp.sum(fn(v).astype("float32")))
        return np.asarray(grad(jnp.asarray(x))).astype("float32")
    if backend == "torch":
        import torch  # Backend-specific: only with PyTorch.

        x = ops.convert_to_tensor(x).detach().requires_grad_(True)
        y = torch.sum(fn(x).to(torch.float32))
        (grad,) = torch.autograd.grad(y, x)
        return grad.detach().float().cpu().numpy()
    raise NotImplementedError(f"no gradient helper for backend {backend}")
