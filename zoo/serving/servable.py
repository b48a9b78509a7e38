"""One loaded SavedModel version, served through `zoo.serving.rest`.

Everything here needs only TensorFlow and TensorFlow Text, never
`keras_seq`; the JSON of the REST API (`zoo.serving.rest`) needs neither.
"""

import json
import os

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the WordPiece tokenizer's ops)
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from tensorflow.core.protobuf import saved_model_pb2

from zoo.serving.rest import (  # noqa: F401  (the names servers import from here)
    DEFAULT_SIGNATURE,
    LoadError,
    RequestError,
    ServableBase,
    format_outputs,
    parse_predict,
    to_array,
)


def _signature_defs(path):
    """The SignatureDef map of `<path>/saved_model.pb`, as TF Serving sends it."""
    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as file:
        proto.ParseFromString(file.read())
    return {
        name: json_format.MessageToDict(definition, preserving_proto_field_name=True)
        for name, definition in sorted(proto.meta_graphs[0].signature_def.items())
    }


def _signature_defaults(path):
    """signature -> input -> the value a request may leave out, as
    `keras_seq.export` writes them beside the graph (none for an export
    without the file). TF Serving reads no such file: its clients send
    every input."""
    try:
        with open(
            os.path.join(path, "signature_defaults.json"), encoding="utf-8"
        ) as file:
            defaults = json.load(file)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise LoadError(
            f"{path}/signature_defaults.json does not read ({error})"
        ) from None
    return defaults if isinstance(defaults, dict) else {}


class Signature:
    """A signature's inputs (name -> TensorSpec), outputs and function, and
    the values of the inputs a request may leave out (`defaults`)."""

    def __init__(self, name, function, defaults=None):
        self.name = name
        self.function = function
        _, inputs = function.structured_input_signature
        self.inputs = dict(sorted(inputs.items()))
        self.outputs = sorted(function.structured_outputs)
        self.defaults = dict(defaults or {})

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
        """One example of every input: its default, a word, or token id 1
        (a reserved id)."""
        arrays = {}
        for name, spec in self.inputs.items():
            shape = [1] + [d if d is not None else 1 for d in spec.shape[1:]]
            if name in self.defaults:
                arrays[name] = np.array(
                    [self.defaults[name]], spec.dtype.as_numpy_dtype
                )
            elif spec.dtype == tf.string:
                arrays[name] = np.full(shape, b"warm up", dtype=object)
            else:
                arrays[name] = np.ones(shape, spec.dtype.as_numpy_dtype)
        return arrays


class Servable(ServableBase):
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
        defaults = _signature_defaults(path)
        self.signatures = {
            name: Signature(name, function, defaults.get(name))
            for name, function in sorted(loaded.signatures.items())
        }
        if not self.signatures:
            raise LoadError(f"{path} has no signature to serve.")
