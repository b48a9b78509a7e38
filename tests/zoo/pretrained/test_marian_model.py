"""A Marian checkpoint in the zoo's layers equals transformers' `MarianMTModel`.

Each checkpoint is made here: a tiny `MarianConfig` (2 + 2 layers, width
32, 4 heads), `MarianMTModel(config)` with random but non-trivial weights
(token tables of scale 0.5 with `<pad>`'s row zero, as transformers
initializes it; layer norms away from 1 and 0; a non-zero
`final_logits_bias`), `save_pretrained` and a `vocab.json` written beside
it. `zoo.pretrained.marian.load_marian` then reads the directory; the
zoo's logits on a padded batch are Marian's columns `marian_ids` (1e-4),
and greedy and 4-beam decoding give transformers' `generate` ids mapped
to zoo ids. Shared and separate vocabularies, each activation, both
weights files; and each kind of checkpoint the zoo cannot take is refused
in one line before anything is built.
"""

import json
import os
import shutil

import keras
import numpy as np
import pytest

from keras_seq.testing import assert_all_close
from keras_seq.text import END_ID, PAD_ID, START_ID

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytest.importorskip("sentencepiece")
marian = pytest.importorskip("zoo.pretrained.marian")
from tests.zoo.pretrained.marian_checkpoints import (  # noqa: E402
    PAD,
    SOURCE_SIZE,
    TARGET_SIZE,
    make_checkpoint,
    write_json,
)

CHECKPOINTS = {
    # name: shared vocabulary, activation, weights file, tied lm_head
    "shared, swish, safetensors": (True, "swish", "safetensors", True),
    "separate, gelu, pytorch_model.bin": (False, "gelu", "bin", True),
    "shared, relu, untied lm_head": (True, "relu", "safetensors", False),
}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """name -> (directory, MarianMTModel, MarianCheckpoint), made once."""
    made = {}
    for seed, (name, options) in enumerate(CHECKPOINTS.items()):
        directory = str(tmp_path_factory.mktemp("marian"))
        reference = make_checkpoint(directory, *options, seed=seed)
        made[name] = (directory, reference, marian.load_marian(directory))
    return made


def _sources(loaded, seed=0):
    """(3, 9) zoo source ids: real pieces (5..), row 1 and 2 padded."""
    rng = np.random.default_rng(seed)
    size = len(loaded.source_vocabulary.tokens)
    ids = rng.integers(5, size, (3, 9)).astype("int32")
    ids[1, 6:] = PAD_ID
    ids[2, 3:] = PAD_ID
    return ids


def _to_marian(vocabulary, ids):
    return np.asarray(vocabulary.marian_ids, "int64")[ids]


def _marian_generate(reference, loaded, source, **options):
    """transformers' `generate` on the same sources, in zoo ids, each row
    up to and with its end token."""
    input_ids = torch.as_tensor(_to_marian(loaded.source_vocabulary, source))
    mask = torch.as_tensor(source != PAD_ID, dtype=torch.long)
    with torch.no_grad():
        output = reference.generate(
            input_ids=input_ids,
            attention_mask=mask,
            do_sample=False,
            bad_words_ids=[[PAD]],
            **options,
        ).numpy()
    rows = []
    for row in output[:, 1:]:  # After the decoder start, <pad>.
        ids = [loaded.target_vocabulary.zoo_id(int(i)) for i in row]
        rows.append(ids[: ids.index(END_ID) + 1] if END_ID in ids else ids)
    return rows


def _zoo_rows(ids):
    rows = []
    for row in keras.ops.convert_to_numpy(ids).tolist():
        rows.append(row[: row.index(END_ID) + 1] if END_ID in row else row)
    return rows


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_logits_equal_marians(checkpoints, name):
    directory, reference, loaded = checkpoints[name]
    source = _sources(loaded)
    rng = np.random.default_rng(1)
    target_size = len(loaded.target_vocabulary.tokens)
    target = rng.integers(5, target_size, (3, 7)).astype("int32")
    target[:, 0] = START_ID
    logits = loaded.model(
        {"encoder_token_ids": source, "decoder_token_ids": target}
    )  # (B, T, V)
    with torch.no_grad():
        expected = reference(
            input_ids=torch.as_tensor(_to_marian(loaded.source_vocabulary, source)),
            attention_mask=torch.as_tensor(source != PAD_ID, dtype=torch.long),
            decoder_input_ids=torch.as_tensor(
                _to_marian(loaded.target_vocabulary, target)
            ),
        ).logits.numpy()
    columns = list(loaded.target_vocabulary.marian_ids)
    assert np.ptp(expected) > 5.0  # Not degenerate.
    assert_all_close(logits, expected[..., columns], atol=1e-4)


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_greedy_ids_equal_generate(checkpoints, name):
    _, reference, loaded = checkpoints[name]
    source = _sources(loaded, seed=2)
    expected = _marian_generate(
        reference, loaded, source, num_beams=1, max_new_tokens=12
    )
    got = _zoo_rows(loaded.model.generate(source, max_new_tokens=12))
    assert got == expected
    assert max(len(row) for row in got) > 3  # Not all ending at once.


@pytest.mark.parametrize("name", list(CHECKPOINTS)[:2])
def test_four_beams_best_equals_generate_at_length_penalty_zero(checkpoints, name):
    # At length penalty 0 both rank hypotheses by their summed
    # log-probabilities, and transformers' stopping test (no running beam
    # can beat the worst kept hypothesis) is exact, since sums only fall.
    _, reference, loaded = checkpoints[name]
    source = _sources(loaded, seed=3)
    expected = _marian_generate(
        reference,
        loaded,
        source,
        num_beams=4,
        length_penalty=0.0,
        max_new_tokens=10,
    )
    ids, _ = loaded.model.beam_search(
        source, max_new_tokens=10, beam_width=4, length_penalty=0.0
    )
    assert _zoo_rows(keras.ops.convert_to_numpy(ids)[:, 0]) == expected


def test_the_loaded_translator_has_marians_options(checkpoints):
    _, _, shared = checkpoints["shared, swish, safetensors"]
    config = shared.model.get_config()
    assert config["activation"] == "swish"
    assert config["sinusoidal_layout"] == "concatenated"
    assert config["tie_embeddings"] and config["logits_bias"]
    assert config["max_length"] == 64 and config["dropout"] == 0.1
    assert shared.source_vocabulary is shared.target_vocabulary
    assert shared.weights_file.endswith("model.safetensors")
    _, _, separate = checkpoints["separate, gelu, pytorch_model.bin"]
    config = separate.model.get_config()
    assert not config["tie_embeddings"] and config["tie_output_embedding"]
    assert config["source_vocabulary_size"] == SOURCE_SIZE + 2
    assert config["target_vocabulary_size"] == TARGET_SIZE + 2
    assert separate.weights_file.endswith("pytorch_model.bin")
    _, _, untied = checkpoints["shared, relu, untied lm_head"]
    assert untied.model.output_dense is not None
    assert untied.model.default_start_token_id == START_ID


# Refusals, each one line, before anything is built.


def _variant(checkpoints, tmp_path, name="shared, swish, safetensors"):
    directory = str(tmp_path / "variant")
    shutil.copytree(checkpoints[name][0], directory)
    return directory


def _edit_config(directory, **fields):
    path = os.path.join(directory, "config.json")
    with open(path, encoding="utf-8") as file:
        config = json.load(file)
    config.update(fields)
    write_json(directory, "config.json", config)


def _refused(directory, pattern):
    with pytest.raises(ValueError, match=pattern) as error:
        marian.load_marian(directory)
    assert "\n" not in str(error.value)
    return str(error.value)


@pytest.mark.parametrize(
    "fields, pattern",
    [
        ({"model_type": "bart"}, r"`model_type` is 'bart'"),
        ({"normalize_before": True}, r"`normalize_before` is True"),
        ({"normalize_embedding": True}, r"`normalize_embedding` is True"),
        ({"static_position_embeddings": False}, r"`static_position_embeddings`"),
        ({"activation_function": "gelu_new"}, r"`activation_function` is 'gelu_new'"),
        ({"decoder_start_token_id": 0}, r"`decoder_start_token_id` is 0"),
        ({"vocab_size": 61}, r"`vocab_size` is 61; .*vocab.json holds 60"),
        ({"decoder_ffn_dim": 32}, r"`decoder_ffn_dim` is 32"),
        ({"pad_token_id": 3}, r"`pad_token_id` is 3"),
    ],
)
def test_fields_the_zoo_cannot_map_are_refused(checkpoints, tmp_path, fields, pattern):
    directory = _variant(checkpoints, tmp_path)
    _edit_config(directory, **fields)
    _refused(directory, r"^config.json: " + pattern)


def test_missing_and_truncated_weights_are_refused(checkpoints, tmp_path):
    directory = _variant(checkpoints, tmp_path)
    path = os.path.join(directory, "model.safetensors")
    data = open(path, "rb").read()
    with open(path, "wb") as file:
        file.write(data[: len(data) // 2])
    _refused(directory, r"model.safetensors is not a readable safetensors file")
    os.remove(path)
    _refused(directory, r"holds no weights: expected model.safetensors")
    binary = _variant(
        checkpoints, tmp_path / "bin", "separate, gelu, pytorch_model.bin"
    )
    path = os.path.join(binary, "pytorch_model.bin")
    data = open(path, "rb").read()
    with open(path, "wb") as file:
        file.write(data[: len(data) // 2])
    _refused(binary, r"pytorch_model.bin is not a readable PyTorch checkpoint")


def test_missing_or_misshapen_tensors_are_refused(checkpoints, tmp_path):
    from safetensors.numpy import load_file, save_file

    directory = _variant(checkpoints, tmp_path)
    path = os.path.join(directory, "model.safetensors")
    tensors = load_file(path)
    name = "model.decoder.layers.1.encoder_attn.k_proj.weight"
    save_file({k: v for k, v in tensors.items() if k != name}, path)
    _refused(directory, rf"model.safetensors has no tensor '{name}'")
    tensors[name] = tensors[name][:, :16]
    save_file(tensors, path)
    _refused(directory, rf"tensor '{name}' has shape \(32, 16\); .* \(32, 32\)")


def test_missing_vocabulary_is_refused(checkpoints, tmp_path):
    directory = _variant(checkpoints, tmp_path, "separate, gelu, pytorch_model.bin")
    os.remove(os.path.join(directory, "target_vocab.json"))
    _refused(directory, r"target_vocab.json is missing")


@pytest.mark.skipif(keras.backend.backend() != "torch", reason="PyTorch's step")
def test_pytorch_decodes_an_imported_model_through_its_fast_step(checkpoints):
    # So the greedy and beam tests above held PyTorch's fast step to
    # transformers' ids on this backend.
    for _, _, loaded in checkpoints.values():
        with torch.no_grad():
            assert loaded.model.fast_decoding_step() is not None
            assert loaded.model.fast_start_decoding() is not None


def _logits(model, source):
    target = np.full((source.shape[0], 4), 7, "int32")
    target[:, 0] = START_ID
    inputs = {"encoder_token_ids": source, "decoder_token_ids": target}
    return keras.ops.convert_to_numpy(model(inputs))


def test_sharded_and_bfloat16_safetensors_load_alike(checkpoints, tmp_path):
    from safetensors.numpy import load_file, save_file

    name = "shared, swish, safetensors"
    loaded = checkpoints[name][2]
    source = _sources(loaded)
    directory = _variant(checkpoints, tmp_path)
    path = os.path.join(directory, "model.safetensors")
    tensors = load_file(path)
    os.remove(path)
    names = sorted(tensors)
    shards = {"a.safetensors": names[::2], "b.safetensors": names[1::2]}
    for shard, keys in shards.items():
        save_file({k: tensors[k] for k in keys}, os.path.join(directory, shard))
    weight_map = {k: shard for shard, keys in shards.items() for k in keys}
    write_json(directory, "model.safetensors.index.json", {"weight_map": weight_map})
    sharded = marian.load_marian(directory)
    np.testing.assert_array_equal(
        _logits(sharded.model, source), _logits(loaded.model, source)
    )
    # bfloat16, which NumPy cannot hold, through PyTorch's reader.
    from safetensors.torch import save_file as save_torch

    halves = {k: torch.as_tensor(v).to(torch.bfloat16) for k, v in tensors.items()}
    bfloat16 = str(tmp_path / "bfloat16")
    shutil.copytree(directory, bfloat16)
    for shard in [*shards, "model.safetensors.index.json"]:
        os.remove(os.path.join(bfloat16, shard))
    save_torch(halves, os.path.join(bfloat16, "model.safetensors"))
    rounded = marian.load_marian(bfloat16)
    # bfloat16 keeps 8 bits of mantissa: the logits move, a little.
    difference = _logits(rounded.model, source) - _logits(loaded.model, source)
    assert 0 < np.abs(difference).max() < 1.0


def test_the_imported_model_round_trips_a_keras_file(checkpoints):
    from keras_seq.testing import run_model_saving_test

    loaded = checkpoints["separate, gelu, pytorch_model.bin"][2]
    source = _sources(loaded)
    target = np.full((source.shape[0], 4), 7, "int32")
    target[:, 0] = START_ID
    restored = run_model_saving_test(
        loaded.model, {"encoder_token_ids": source, "decoder_token_ids": target}
    )
    assert restored.get_config() == loaded.model.get_config()


def test_the_imported_model_fine_tunes_with_fit(checkpoints, tmp_path):
    from keras_seq.losses import MaskedSparseCategoricalCrossentropy

    # A fresh import: fitting changes the weights the other tests read.
    directory = _variant(checkpoints, tmp_path, "separate, gelu, pytorch_model.bin")
    model = marian.load_marian(directory).model
    source = _sources(checkpoints["separate, gelu, pytorch_model.bin"][2])
    target = np.random.default_rng(4).integers(5, model.target_vocabulary_size, (3, 6))
    target[:, 0] = START_ID
    target[:, -1] = END_ID
    x = {"encoder_token_ids": source, "decoder_token_ids": target[:, :-1]}
    model.compile(keras.optimizers.Adam(1e-3), MaskedSparseCategoricalCrossentropy())
    first = model.evaluate(x, target[:, 1:], verbose=0)
    model.fit(x, target[:, 1:], epochs=5, batch_size=3, verbose=0)
    assert model.evaluate(x, target[:, 1:], verbose=0) < first
