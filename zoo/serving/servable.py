"""One loaded SavedModel version and the JSON of TF Serving's REST API.

The request and response shapes follow TensorFlow Serving's `api_rest.md`:
the row format (`instances`: one entry per example, an object of named
inputs when the signature takes several) answered with `predictions`, and
the columnar format (`inputs`: one value, or an object of named inputs)
answered with `outputs`; a signature of one output answers with its values,
one of several with an object of named values. Strings travel as UTF-8
text, or as `{"b64": ...}` objects for bytes. Everything here needs only
TensorFlow and TensorFlow Text, never `keras_seq`.
"""

import base64
import binascii
import os

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the WordPiece tokenizer's ops)
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from tensorflow.core.protobuf import saved_model_pb2

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


def _signature_defs(path):
    """The SignatureDef map of `<path>/saved_model.pb`, as TF Serving sends it."""
    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as file:
        proto.ParseFromString(file.read())
    return {
        name: json_format.MessageToDict(definition, preserving_proto_field_name=True)
        for name, definition in sorted(proto.meta_graphs[0].signature_def.items())
    }


class Signature:
    """A signature's inputs (name -> TensorSpec), outputs and function."""

    def __init__(self, name, function):
        self.name = name
        self.function = function
        _, inputs = function.structured_input_signature
        self.inputs = dict(sorted(inputs.items()))
        self.outputs = sorted(function.structured_outputs)

    @property
    def takes_text(self):
        """True for a signature of one string input (the page uses these)."""
        specs = list(self.inputs.values())
        return len(specs) == 1 and specs[0].dtype == tf.string

    def __call__(self, arrays):
        """dict name -> (B, ...) array -> dict name -> (B, ...) array."""
        tensors = {
            name: tf.constant(arrays[name], dtype=spec.dtype)
            for name, spec in self.inputs.items()
        }
        return {name: value.numpy() for name, value in self.function(**tensors).items()}

    def warm_up_arrays(self):
        """One example of every input: a word, or token id 1 (a reserved id)."""
        arrays = {}
        for name, spec in self.inputs.items():
            shape = [1] + [d if d is not None else 1 for d in spec.shape[1:]]
            if spec.dtype == tf.string:
                arrays[name] = np.full(shape, b"warm up", dtype=object)
            else:
                arrays[name] = np.ones(shape, spec.dtype.as_numpy_dtype)
        return arrays


class Servable:
    """An exported SavedModel version, loaded, with its signatures.

    Args:
        path: str, the version directory (holds `saved_model.pb`).
        version: int, the version number it is served as.

    Raises:
        LoadError: when the directory does not load.
    """

    def __init__(self, path, version):
        self.path = path
        self.version = version
        try:
            self.signature_defs = _signature_defs(path)
            loaded = tf.saved_model.load(path)
        except (OSError, ValueError, DecodeError, tf.errors.OpError) as error:
            lines = str(error).strip().splitlines() or [""]
            raise LoadError(
                f"{path} does not load as a SavedModel "
                f"({type(error).__name__}: {lines[0]})"
            ) from None
        # The loaded object owns the variables the signatures read.
        self._loaded = loaded
        self.signatures = {
            name: Signature(name, function)
            for name, function in sorted(loaded.signatures.items())
        }
        if not self.signatures:
            raise LoadError(f"{path} has no signature to serve.")

    def signature(self, name):
        if name not in self.signatures:
            raise RequestError(
                400,
                f'Serving signature name: "{name}" not found in signature def '
                f"(it has {', '.join(self.signatures)})",
            )
        return self.signatures[name]

    def metadata(self, model_name):
        """The body of GET .../metadata, as TF Serving's GetModelMetadata."""
        return {
            "model_spec": {
                "name": model_name,
                "signature_name": "",
                "version": str(self.version),
            },
            "metadata": {
                "signature_def": {
                    "@type": "type.googleapis.com/tensorflow.serving.SignatureDefMap",
                    "signature_def": self.signature_defs,
                }
            },
        }


def _string(value, where):
    if isinstance(value, str):
        # A lone surrogate (JSON "\udc80") passes as the bytes it names; the
        # exported graph replaces invalid UTF-8 by U+FFFD.
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, dict) and set(value) == {"b64"}:
        try:
            return base64.b64decode(value["b64"], validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise RequestError(400, f"{where}: invalid base64 in 'b64'") from None
    raise RequestError(
        400, f"{where}: expected a string or a {{'b64': ...}} object; received "
        f"{_describe(value)}"
    )  # fmt: skip


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
        if spec.dtype == tf.string:
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
    dtype = object if spec.dtype == tf.string else spec.dtype.as_numpy_dtype
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


def _named(value, names):
    return isinstance(value, dict) and set(value) == names


def _rows(instances, signature):
    if not isinstance(instances, list):
        raise RequestError(400, "'instances' must be a list of examples")
    if not instances:
        raise RequestError(
            400, "'instances' is an empty list; send one example or more"
        )
    names = set(signature.inputs)
    columns = {name: [] for name in names}
    for i, instance in enumerate(instances):
        if _named(instance, names):
            for name in names:
                columns[name].append(instance[name])
        elif len(names) == 1:
            columns[next(iter(names))].append(instance)
        else:
            raise RequestError(
                400,
                f"instances[{i}]: expected an object with the inputs "
                f"{sorted(names)}; received {_describe(instance)}",
            )
    return {
        name: to_array(values, signature.inputs[name], f"instances ({name})")
        for name, values in columns.items()
    }


def _columns(inputs, signature):
    names = set(signature.inputs)
    if not _named(inputs, names):
        if len(names) != 1 or isinstance(inputs, dict):
            raise RequestError(
                400,
                f"'inputs' must be an object with the inputs {sorted(names)}"
                + (" or the one input's value" if len(names) == 1 else ""),
            )
        inputs = {next(iter(names)): inputs}
    arrays = {
        name: to_array(inputs[name], signature.inputs[name], f"inputs ({name})")
        for name in names
    }
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
