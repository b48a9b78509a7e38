"""Safe loading: every layer and builder comes back from `.keras` in safe mode.

Each public layer (inside a small functional model) and each builder, with
its main variants, is saved here and loaded in a fresh Python process that
imports only `keras`, `keras_seq` and `zoo` and calls
`keras.saving.load_model(path, safe_mode=True)` with no `custom_objects`.
That is what a user does, and it catches a class that only loads because a
test module happened to import it. The saved configs are also read back:
no `Lambda` layer, and every keras-seq class under its registered name. A
`.keras` file that does hold a `Lambda` is refused, without running it.

Loading a model directory whose vocabulary or SavedModel does not match the
model is part of the bad-input table in `test_bad_inputs.py`.
"""

import json
import os
import subprocess
import sys
import zipfile

import keras
import numpy as np
import pytest

import zoo
from keras_seq import layers
from keras_seq.losses import MaskedSparseCategoricalCrossentropy
from keras_seq.metrics import MaskedAccuracy, perplexity
from keras_seq.schedules import InverseSquareRootWarmup
from keras_seq.testing import assert_all_close
from zoo.recipes import model_dir

RNG = np.random.default_rng(0)


def _ids(batch, length, vocabulary_size=100, pad=1):
    ids = RNG.integers(1, vocabulary_size, size=(batch, length)).astype("int32")
    ids[:, length - pad :] = 0
    return ids


def _floats(*shape):
    return RNG.normal(size=shape).astype("float32")


def _wrap(layer, inputs, call=None):
    """A functional model around `layer`, named inputs taken from `inputs`."""
    if isinstance(inputs, dict):
        symbolic = {
            name: keras.Input(value.shape[1:], dtype=value.dtype.name, name=name)
            for name, value in inputs.items()
        }
        outputs = call(layer, symbolic) if call else layer(**symbolic)
    else:
        symbolic = keras.Input(inputs.shape[1:], dtype=inputs.dtype.name)
        outputs = call(layer, symbolic) if call else layer(symbolic)
    return keras.Model(symbolic, outputs), inputs


def _attention_pair():
    return {"query": _floats(2, 5, 8), "value": _floats(2, 6, 8)}


# Every public layer of `keras_seq.layers`, in a model a user could save.
LAYER_CASES = {
    "HashedDropout": lambda: _wrap(layers.HashedDropout(0.1, seed=2), _floats(2, 5, 8)),
    "MultiHeadAttention": lambda: _wrap(
        layers.MultiHeadAttention(num_heads=2, key_dim=4), _attention_pair()
    ),
    "ScoreAttention": lambda: _wrap(
        layers.ScoreAttention(score="concat", units=6),
        _attention_pair(),
        call=lambda layer, x: layer(x["query"], x["value"]),
    ),
    "SinusoidalPositionalEncoding": lambda: _wrap(
        layers.SinusoidalPositionalEncoding(), _floats(2, 5, 8)
    ),
    "LearnedPositionalEmbedding": lambda: _wrap(
        layers.LearnedPositionalEmbedding(max_length=8), _floats(2, 5, 8)
    ),
    "TokenAndPositionEmbedding": lambda: _wrap(
        layers.TokenAndPositionEmbedding(100, 8, 8, positional="sinusoidal"),
        _ids(2, 5),
    ),
    "PositionwiseFeedForward": lambda: _wrap(
        layers.PositionwiseFeedForward(ff_dim=16), _floats(2, 5, 8)
    ),
    "TransformerEncoderBlock": lambda: _wrap(
        layers.TransformerEncoderBlock(num_heads=2, ff_dim=16, norm_first=True),
        _floats(2, 5, 8),
    ),
    "TransformerDecoderBlock": lambda: _wrap(
        layers.TransformerDecoderBlock(num_heads=2, ff_dim=16),
        {"decoder_sequence": _floats(2, 5, 8), "encoder_sequence": _floats(2, 6, 8)},
    ),
    "MaskedMeanPooling": lambda: _wrap(layers.MaskedMeanPooling(), _floats(2, 5, 8)),
    "AttentionDecoder": lambda: _wrap(
        layers.AttentionDecoder(units=6, cell="lstm", score="general"),
        {
            "inputs": _floats(2, 5, 8),
            "encoder_outputs": _floats(2, 6, 8),
            "initial_state": _floats(2, 6),
        },
        call=lambda layer, x: layer(
            x["inputs"], x["encoder_outputs"], [x["initial_state"]] * 2
        ),
    ),
}


def _pair():
    return {"encoder_token_ids": _ids(2, 6), "decoder_token_ids": _ids(2, 5)}


# Every builder of `zoo`, with the variants that change its saved graph.
BUILDER_CASES = {
    "translator": lambda: zoo.build_translator("tiny"),
    "translator-tied-learned-prenorm": lambda: zoo.build_translator(
        "tiny",
        tie_embeddings=True,
        positional="learned",
        norm_first=True,
        attention_bias=False,
    ),
    "classifier": lambda: zoo.build_classifier("tiny", num_classes=3),
    "masked_language_model": lambda: zoo.build_masked_language_model("tiny"),
    "language_model": lambda: zoo.build_language_model("tiny"),
    "rnn_translator-additive": lambda: zoo.build_rnn_translator("tiny"),
    "rnn_translator-lstm-general": lambda: zoo.build_rnn_translator(
        "tiny", cell="lstm", score="general"
    ),
    "rnn_seq2seq-fig-7.9b": lambda: zoo.build_rnn_seq2seq(
        "tiny", feed_context=True, reverse_source=True, cell="lstm"
    ),
    "rnn_language_model": lambda: zoo.build_rnn_language_model("tiny"),
    "rnn_language_model-simple-bidirectional": lambda: zoo.build_rnn_language_model(
        "tiny", cell="simple", bidirectional=True, num_layers=1
    ),
}


def _builder_inputs(model):
    names = sorted(t.name for t in model.inputs)
    return (
        _pair() if names == ["decoder_token_ids", "encoder_token_ids"] else _ids(2, 6)
    )


def _compiled_translator():
    """A translator compiled with every keras-seq training object."""
    model = zoo.build_translator("tiny")
    model.compile(
        optimizer=keras.optimizers.Adam(
            InverseSquareRootWarmup(16, warmup_steps=10), 0.9, 0.98, 1e-9
        ),
        loss=MaskedSparseCategoricalCrossentropy(label_smoothing=0.1),
        metrics=[MaskedAccuracy(), perplexity()],
    )
    x = _pair()
    y = _ids(2, 5)
    model.fit(x, y, epochs=1, verbose=0)  # Optimizer variables get saved too.
    return model, x, y


_FRESH_LOAD = r"""
import json, sys
import numpy as np
import keras
import keras_seq, zoo  # noqa: F401  registration only; no custom_objects below

results = {}
for entry in json.loads(sys.argv[1]):
    model = keras.saving.load_model(entry["path"], safe_mode=True)
    data = np.load(entry["inputs"])
    inputs = {k: data[k] for k in data.files} if entry["dict"] else data["x"]
    outputs = keras.tree.flatten(model(inputs, training=False))
    np.savez(entry["outputs"], *[keras.ops.convert_to_numpy(o) for o in outputs])
    result = {"class": type(model).__name__}
    if entry.get("labels"):
        labels = np.load(entry["labels"])["y"]
        result["evaluate"] = model.evaluate(
            inputs, labels, verbose=0, return_dict=True
        )
        result["loss"] = type(model.loss).__name__
        result["schedule"] = model.optimizer.get_config()["learning_rate"]
    results[entry["name"]] = result
print(json.dumps(results))
"""


def _save_case(name, model, inputs, root, labels=None):
    path = root / f"{name}.keras"
    model.save(path)
    is_dict = isinstance(inputs, dict)
    np.savez(root / f"{name}.in.npz", **(inputs if is_dict else {"x": inputs}))
    entry = {
        "name": name,
        "path": str(path),
        "inputs": str(root / f"{name}.in.npz"),
        "outputs": str(root / f"{name}.out.npz"),
        "dict": is_dict,
    }
    if labels is not None:
        np.savez(root / f"{name}.labels.npz", y=labels)
        entry["labels"] = str(root / f"{name}.labels.npz")
    return entry


@pytest.fixture(scope="module")
def fresh_loads(tmp_path_factory):
    """Save every case here, load all of them in one fresh process.

    Returns:
        `{name: (model, inputs, expected outputs, entry, result)}`.
    """
    root = tmp_path_factory.mktemp("safe_loading")
    cases, entries = {}, []
    factories = {f"layer:{k}": v for k, v in LAYER_CASES.items()}
    factories.update({f"builder:{k}": v for k, v in BUILDER_CASES.items()})
    for name, factory in factories.items():
        keras.utils.set_random_seed(0)
        built = factory()
        model, inputs = built if isinstance(built, tuple) else (built, None)
        if inputs is None:
            inputs = _builder_inputs(model)
        file_name = name.replace(":", "-")
        entry = _save_case(file_name, model, inputs, root)
        cases[name] = (model, inputs, entry)
        entries.append(entry)
    model, x, y = _compiled_translator()
    entry = _save_case("compiled-translator", model, x, root, labels=y)
    cases["compiled:translator"] = (model, (x, y), entry)
    entries.append(entry)

    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    process = subprocess.run(
        [sys.executable, "-c", _FRESH_LOAD, json.dumps(entries)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert process.returncode == 0, process.stderr[-3000:]
    results = json.loads(process.stdout.strip().splitlines()[-1])
    return {name: (*case, results[case[2]["name"]]) for name, case in cases.items()}


def _loaded_outputs(entry):
    with np.load(entry["outputs"]) as data:
        return [data[f"arr_{i}"] for i in range(len(data.files))]


def test_every_public_layer_and_builder_is_covered():
    """A new layer or builder must join the tables above."""
    assert sorted(LAYER_CASES) == sorted(layers.__all__)
    builders = {name[len("build_") :] for name in zoo.__all__ if name[:6] == "build_"}
    covered = {name.split("-")[0] for name in BUILDER_CASES}
    assert covered == builders


@pytest.mark.parametrize(
    "name",
    [f"layer:{k}" for k in LAYER_CASES] + [f"builder:{k}" for k in BUILDER_CASES],
)
def test_loads_in_safe_mode_in_a_fresh_process(fresh_loads, name):
    model, inputs, entry, result = fresh_loads[name]
    assert result["class"] == type(model).__name__
    expected = keras.tree.flatten(model(inputs, training=False))
    assert_all_close(_loaded_outputs(entry), expected, atol=1e-6, msg=name)


def test_compiled_model_keeps_its_loss_metrics_and_schedule(fresh_loads):
    """Loss, metrics and the warm-up schedule come back after `import keras_seq`."""
    model, (x, y), entry, result = fresh_loads["compiled:translator"]
    assert result["loss"] == "MaskedSparseCategoricalCrossentropy"
    assert result["schedule"]["class_name"] == "InverseSquareRootWarmup"
    expected = model.evaluate(x, y, verbose=0, return_dict=True)
    assert sorted(result["evaluate"]) == sorted(expected)
    for key, value in expected.items():
        assert result["evaluate"][key] == pytest.approx(value, rel=1e-5), key


def _config_objects(config):
    """Every serialized object (a dict with `class_name`) in a config."""
    if isinstance(config, dict):
        if "class_name" in config:
            yield config
        for value in config.values():
            yield from _config_objects(value)
    elif isinstance(config, list):
        for value in config:
            yield from _config_objects(value)


@pytest.mark.parametrize(
    "name",
    [f"layer:{k}" for k in LAYER_CASES]
    + [f"builder:{k}" for k in BUILDER_CASES]
    + ["compiled:translator"],
)
def test_saved_config_holds_no_code_and_only_registered_classes(fresh_loads, name):
    entry = fresh_loads[name][2]
    with zipfile.ZipFile(entry["path"]) as archive:
        config = json.loads(archive.read("config.json"))
    objects = list(_config_objects(config))
    assert objects
    for obj in objects:
        assert obj["class_name"] != "Lambda", f"{name} saved a Lambda layer"
        module = obj.get("module") or ""
        if module.split(".")[0] in ("keras_seq", "zoo"):
            # Registered names are what a loader looks up; a bare class name
            # would only resolve through `custom_objects`.
            assert obj.get("registered_name", "").split(">")[0] in (
                "keras_seq",
                "zoo",
            ), f"{obj['class_name']} is not registered: {obj.get('registered_name')}"
        else:
            assert module.split(".")[0] in ("keras", "keras_hub", ""), module


def test_a_lambda_layer_is_refused_before_it_runs(tmp_path):
    """Safe mode refuses Python bytecode; the function never runs on load."""
    marker = tmp_path / "ran"
    inputs = keras.Input((3,))

    def touch_marker(x):
        marker.touch()
        return x

    outputs = keras.layers.Lambda(lambda x: touch_marker(x) * 2)(inputs)
    path = tmp_path / "lambda.keras"
    keras.Model(inputs, outputs).save(path)
    marker.unlink(missing_ok=True)  # Building the model may have run it.
    for load in (
        lambda: keras.saving.load_model(path),
        lambda: keras.saving.load_model(path, safe_mode=True),
    ):
        with pytest.raises(ValueError, match=r"`Lambda` layer.*safe_mode=False"):
            load()
    assert not marker.exists()


def test_a_model_directory_holding_a_lambda_is_refused(
    translator_dir, lambda_model_file, tmp_path
):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(translator_dir, copy)
    shutil.copy(lambda_model_file, copy / "model.keras")
    with pytest.raises(ValueError, match=r"`Lambda` layer.*arbitrary code execution"):
        model_dir.load_model_dir(str(copy))
