"""A transformers checkpoint directory (what `save_pretrained` writes), read
whole and checked before anything is built from it.

`read_config` reads `config.json`; `read_weights` reads every tensor of
`model.safetensors` (the `safetensors` extra, as NumPy arrays),
`model.safetensors.index.json` with its shards, or `pytorch_model.bin`
(`torch.load(weights_only=True)`, which runs no pickled code). A missing,
truncated or unreadable file is refused in one line that names it, and
`Weights.get` refuses a missing tensor or one of the wrong shape naming
the file and the tensor, so an importer fails before it returns anything.
"""

import dataclasses
import json
import os

import numpy as np

CONFIG_FILE = "config.json"
SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX_FILE = "model.safetensors.index.json"
PYTORCH_FILE = "pytorch_model.bin"


def read_json(directory, name, what="a JSON object"):
    """The JSON object in `directory/name`, or one line naming the file."""
    path = os.path.join(os.fspath(directory), name)
    if not os.path.isfile(path):
        raise ValueError(f"{path} is missing; a checkpoint directory holds {name}.")
    try:
        with open(path, encoding="utf-8") as file:
            value = json.load(file)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not readable JSON ({_one_line(error)}).") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path} must hold {what}; it holds a {type(value).__name__}.")
    return value


def read_config(directory):
    """`config.json` of a checkpoint directory, as a dict."""
    return read_json(directory, CONFIG_FILE, "the model's configuration object")


@dataclasses.dataclass(frozen=True)
class Weights:
    """The tensors of one checkpoint, by name, as float32 NumPy arrays.

    Attributes:
        tensors: dict from the checkpoint's tensor name to its array.
        path: the file (or index file) they were read from, named in errors.
    """

    tensors: dict
    path: str

    def __contains__(self, name):
        return name in self.tensors

    def get(self, name, shape):
        """The tensor `name`, refused in one line unless it has `shape`."""
        if name not in self.tensors:
            raise ValueError(f"{self.path} has no tensor {name!r}.")
        array = self.tensors[name]
        if tuple(array.shape) != tuple(shape):
            raise ValueError(
                f"{self.path}: tensor {name!r} has shape {tuple(array.shape)}; "
                f"the configuration gives {tuple(shape)}."
            )
        return array

    def first(self, names, shape):
        """The first of `names` the checkpoint holds (tied tensors may be
        stored under any one of their names), checked as `get`."""
        for name in names:
            if name in self.tensors:
                return self.get(name, shape)
        return self.get(names[0], shape)


def read_weights(directory):
    """Every tensor of a checkpoint directory, as a `Weights`.

    Prefers `model.safetensors` (or its sharded index) over
    `pytorch_model.bin`, as transformers does.

    Raises:
        ValueError: no weights file, or one that is truncated or not a
            checkpoint, in one line naming the file.
        ImportError: the `safetensors` package (or, for
            `pytorch_model.bin`, `torch`) is not installed, naming it.
    """
    directory = os.fspath(directory)
    single = os.path.join(directory, SAFETENSORS_FILE)
    index = os.path.join(directory, SAFETENSORS_INDEX_FILE)
    pickled = os.path.join(directory, PYTORCH_FILE)
    if os.path.isfile(single):
        return Weights(_read_safetensors(single), single)
    if os.path.isfile(index):
        return Weights(_read_sharded(directory, index), index)
    if os.path.isfile(pickled):
        return Weights(_read_pytorch(pickled), pickled)
    raise ValueError(
        f"{directory} holds no weights: expected {SAFETENSORS_FILE} or {PYTORCH_FILE}."
    )


def _one_line(error):
    return " ".join(str(error).split()) or type(error).__name__


def _read_safetensors(path):
    try:
        from safetensors.numpy import load_file
    except ImportError:
        raise ImportError(
            'Reading safetensors checkpoints needs the "pretrained" extra: '
            'pip install "keras-seq[pretrained]".'
        ) from None
    try:
        tensors = load_file(path)
    except Exception as error:  # safetensors raises its own error types.
        tensors = _read_safetensors_through_torch(path)
        if tensors is None:
            raise ValueError(
                f"{path} is not a readable safetensors file ({_one_line(error)})."
            ) from None
    return {name: _float32(array) for name, array in tensors.items()}


def _read_safetensors_through_torch(path):
    """NumPy has no bfloat16, in which some checkpoints are stored; PyTorch
    reads them (where it is installed) and widens them to float32."""
    try:
        import torch
        from safetensors.torch import load_file
    except ImportError:
        return None
    try:
        tensors = load_file(path)
    except Exception:  # The file itself is damaged: the NumPy error says so.
        return None
    return {name: t.to(torch.float32).numpy() for name, t in tensors.items()}


def _read_sharded(directory, index_path):
    index = read_json(directory, SAFETENSORS_INDEX_FILE)
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise ValueError(f"{index_path} has no `weight_map` of tensor: shard file.")
    tensors = {}
    for shard in sorted(set(weight_map.values())):
        path = os.path.join(directory, str(shard))
        if not os.path.isfile(path):
            raise ValueError(f"{path} is missing; {index_path} names it.")
        tensors.update(_read_safetensors(path))
    return tensors


def _read_pytorch(path):
    try:
        import torch
    except ImportError:
        raise ImportError(
            f"Reading {PYTORCH_FILE} needs PyTorch (pip install torch); or save the "
            "checkpoint as model.safetensors."
        ) from None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # A truncated zip, an unpickling error, ...
        raise ValueError(
            f"{path} is not a readable PyTorch checkpoint ({_one_line(error)})."
        ) from None
    if not isinstance(state, dict):
        raise ValueError(f"{path} must hold a state dict of tensors.")
    return {
        name: _float32(tensor.detach().to(torch.float32).numpy())
        for name, tensor in state.items()
        if isinstance(tensor, torch.Tensor)
    }


def _float32(array):
    return np.asarray(array, dtype="float32")
