"""The JSON of TF Serving's REST API, for any servable, without TensorFlow.

The request and response shapes follow TensorFlow Serving's `api_rest.md`:
the row format (`instances`: one entry per example, an object of named
inputs when the signature takes several) answered with `predictions`, and
the columnar format (`inputs`: one value, or an object of named inputs)
answered with `outputs`; a signature of one output answers with its values,
one of several with an object of named values. Strings travel as UTF-8
text, or as `{"b64": ...}` objects for bytes.

A servable has `signature(name)` and `signatures`; a signature has `name`,
`inputs` (name -> spec with `shape` and a `dtype` that has `name`,
`is_integer` and `as_numpy_dtype`, as `tf.TensorSpec`), `outputs`, and is
called with a dict of arrays; it may have `defaults` (name -> the value
of an input a request may leave out, each example alike). The
SavedModel's servable
(`zoo.serving.servable`) and the CTranslate2 one
(`zoo.serving.ctranslate2_model`) both are; only the first needs
TensorFlow.
"""

import base64
import binascii

import numpy as np

DEFAULT_SIGNATURE = "serving_default"


class RequestError(Exception):
    """A request the server refuses, with the HTTP status it answers.

    The statuses are those TensorFlow Serving gives the matching gRPC codes:
    INVALID_ARGUMENT 400, NOT_FOUND 404, UNAVAILABLE 503, UNIMPLEMENTED 501.
    """

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


class LoadError(Exception):
    """A directory that does not load as an exported SavedModel."""


class ServableBase:
    """What every servable shares: its signatures by name, and the model
    metadata TF Serving's GetModelMetadata answers.

    A servable sets `version`, `signatures` (name -> an object with
    `signature_def()`) and may set `signature_defs` (the SignatureDefMap as
    JSON; by default built from the signatures).
    """

    signature_defs = None

    def signature(self, name):
        """The signature called `name`; a 400 for another."""
        if name not in self.signatures:
            raise RequestError(
                400,
                f'Serving signature name: "{name}" not found in signature def '
                f"(it has {', '.join(self.signatures)})",
            )
        return self.signatures[name]

    def metadata(self, model_name):
        """The body of GET .../metadata, as TF Serving's GetModelMetadata."""
        signature_defs = self.signature_defs or {
            name: s.signature_def() for name, s in self.signatures.items()
        }
        return {
            "model_spec": {
                "name": model_name,
                "signature_name": "",
                "version": str(self.version),
            },
            "metadata": {
                "signature_def": {
                    "@type": "type.googleapis.com/tensorflow.serving.SignatureDefMap",
                    "signature_def": signature_defs,
                }
            },
        }


def is_string(spec):
    """Whether a signature input or output holds strings."""
    return spec.dtype.name == "string"


def _string(value, where):
    if isinstance(value, str):
        # A lone surrogate (JSON "\udc80") passes as the bytes it names; the
        # exported graph replaces invalid UTF-8 by U+FFFD.
        return value.encode("utf-8", "surrogatepass")
    if _is_b64(value):
        try:
            return base64.b64decode(value["b64"], validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise RequestError(400, f"{where}: invalid base64 in 'b64'") from None
    raise RequestError(
        400, f"{where}: expected a string or a {{'b64': ...}} object; received "
        f"{_describe(value)}"
    )  # fmt: skip


def _is_b64(value):
    """TF Serving's `{"b64": ...}` object: one value (bytes), not named inputs."""
    return isinstance(value, dict) and set(value) == {"b64"}


def _bare(value):
    """A value given without its input's name: anything but an object of
    named inputs (a `{"b64": ...}` object is a value)."""
    return not isinstance(value, dict) or _is_b64(value)


def _describe(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(value, spec, where):
    integer = spec.dtype.is_integer
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if not ok or isinstance(value, bool):
        kind = "an integer" if integer else "a number"
        raise RequestError(
            400,
            f"{where}: expected {kind} ({spec.dtype.name}); received "
            f"{_describe(value)}",
        )
    if integer:
        info = np.iinfo(spec.dtype.as_numpy_dtype)
        if not info.min <= value <= info.max:
            raise RequestError(
                400, f"{where}: {value} is out of the range of {spec.dtype.name}"
            )
    return value


def _leaves(value, spec, where, depth):
    """Checks a nested list's leaves in place of NumPy's silent coercion."""
    if depth == 0:
        if is_string(spec):
            return _string(value, where)
        return _number(value, spec, where)
    if not isinstance(value, list):
        raise RequestError(
            400,
            f"{where}: expected a list (rank {depth} more); received "
            f"{_describe(value)}",
        )
    return [_leaves(v, spec, f"{where}[{i}]", depth - 1) for i, v in enumerate(value)]


def to_array(values, spec, where):
    """A JSON batch (list of examples) -> a (B, ...) array of `spec`'s dtype.

    Raises:
        RequestError: 400, naming `where`, for a wrong type, rank or shape.
    """
    rank = len(spec.shape)
    checked = _leaves(values, spec, where, rank)
    dtype = object if is_string(spec) else spec.dtype.as_numpy_dtype
    try:
        array = np.array(checked, dtype=dtype)
    except ValueError:
        array = None
    if array is None or array.ndim != rank:
        raise RequestError(
            400, f"{where}: the lists are ragged; expected a rectangular tensor "
            f"of rank {rank}"
        )  # fmt: skip
    for axis, (want, got) in enumerate(zip(spec.shape, array.shape)):
        if want is not None and want != got:
            raise RequestError(
                400,
                f"{where}: dimension {axis} is {got}; the signature expects {want}",
            )
    if array.size == 0 and rank > 1:
        raise RequestError(400, f"{where}: an empty tensor {list(array.shape)}")
    return array


def parse_predict(body, servable):
    """A :predict body -> (signature, dict name -> array, "row"|"columnar").

    Raises:
        RequestError: 400 for every malformed request.
    """
    if not isinstance(body, dict):
        raise RequestError(400, "the request body must be a JSON object")
    name = body.get("signature_name", DEFAULT_SIGNATURE)
    if not isinstance(name, str):
        raise RequestError(400, f"'signature_name' must be a string; received {name!r}")
    signature = servable.signature(name or DEFAULT_SIGNATURE)
    keys = [key for key in ("instances", "inputs") if key in body]
    if len(keys) != 1:
        raise RequestError(
            400,
            "the request must have exactly one of the keys 'instances' (row "
            f"format) and 'inputs' (columnar format); it has {keys or 'neither'}",
        )
    if keys == ["instances"]:
        return signature, _rows(body["instances"], signature), "row"
    return signature, _columns(body["inputs"], signature), "columnar"


def _defaults(signature):
    return getattr(signature, "defaults", None) or {}


def _named_with_defaults(value, names, required):
    """An object of named inputs: every required one, any with a default."""
    return isinstance(value, dict) and required <= set(value) <= names


def _expected(names, defaults):
    """The inputs a request names, those with a default marked optional."""
    return sorted(
        f"{name} (optional, default {defaults[name]!r})" if name in defaults else name
        for name in names
    )


def _rows(instances, signature):
    if not isinstance(instances, list):
        raise RequestError(400, "'instances' must be a list of examples")
    if not instances:
        raise RequestError(
            400, "'instances' is an empty list; send one example or more"
        )
    names = set(signature.inputs)
    defaults = _defaults(signature)
    required = names - set(defaults)
    columns = {name: [] for name in names}
    for i, instance in enumerate(instances):
        if _named_with_defaults(instance, names, required):
            for name in names:
                columns[name].append(instance.get(name, defaults.get(name)))
        elif len(required) == 1 and _bare(instance):
            # The one input a request must send, given bare.
            for name in names:
                columns[name].append(defaults[name] if name in defaults else instance)
        else:
            raise RequestError(
                400,
                f"instances[{i}]: expected an object with the inputs "
                f"{_expected(names, defaults)}; received {_describe(instance)}",
            )
    return {
        name: to_array(values, signature.inputs[name], f"instances ({name})")
        for name, values in columns.items()
    }


def _columns(inputs, signature):
    names = set(signature.inputs)
    defaults = _defaults(signature)
    required = names - set(defaults)
    if not _named_with_defaults(inputs, names, required):
        if len(required) != 1 or not _bare(inputs):
            raise RequestError(
                400,
                f"'inputs' must be an object with the inputs "
                f"{_expected(names, defaults)}"
                + (" or the one input's value" if len(required) == 1 else ""),
            )
        inputs = {next(iter(required)): inputs}
    given = sorted(name for name in names if name in inputs)
    arrays = {
        name: to_array(inputs[name], signature.inputs[name], f"inputs ({name})")
        for name in given
    }
    first = arrays[given[0]]
    batch = first.shape[0] if first.ndim else 1
    for name in sorted(names - set(given)):
        arrays[name] = to_array(
            [defaults[name]] * batch, signature.inputs[name], f"inputs ({name})"
        )
    sizes = {array.shape[0] if array.ndim else 1 for array in arrays.values()}
    if any(array.ndim == 0 for array in arrays.values()) or 0 in sizes:
        raise RequestError(400, "'inputs' must hold a batch of one example or more")
    if len(sizes) != 1:
        raise RequestError(400, "the inputs of 'inputs' differ in their batch size")
    return arrays


def _json_values(array):
    if array.dtype == object:
        decode = np.vectorize(lambda b: b.decode("utf-8", "replace"), otypes=[object])
        return decode(array).tolist() if array.size else array.tolist()
    return array.tolist()


def format_outputs(outputs, form):
    """Model outputs -> the response body TF Serving gives for `form`."""
    names = sorted(outputs)
    values = {name: _json_values(outputs[name]) for name in names}
    if form == "columnar":
        return {"outputs": values[names[0]] if len(names) == 1 else values}
    if len(names) == 1:
        return {"predictions": values[names[0]]}
    rows = len(values[names[0]])
    return {
        "predictions": [{name: values[name][i] for name in names} for i in range(rows)]
    }
