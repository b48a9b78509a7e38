"""The zoo's CTranslate2 export of an imported Marian checkpoint decodes as
CTranslate2's own converter of the same directory.

`keras_seq.export.ctranslate2.export_ctranslate2` writes the imported
translator (its Swish activation, its concatenated position table, its
tied output with `final_logits_bias`, its scaled embeddings) from the
layers' spec; `ctranslate2.converters.TransformersConverter` converts the
checkpoint directory itself. The two differ in their vocabularies (the
zoo's reserved tokens and Marian's pieces; Marian's pieces without
`<pad>`) and in how the decoder starts (the zoo's `[START]` row, a copy
of `<pad>`'s zero row; CTranslate2's zero embedding for Marian): the same
numbers. Their greedy and 4-beam outputs, in Marian ids, are equal, in
float32 and in int8 (the same weights quantized row by row alike).
"""

import os

import keras
import numpy as np
import pytest

from keras_seq.text import PAD_ID

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
ctranslate2 = pytest.importorskip("ctranslate2")
pytest.importorskip("sentencepiece")
marian = pytest.importorskip("zoo.pretrained.marian")
from keras_seq.export.ctranslate2 import (  # noqa: E402
    PREPROCESSOR_FILES,
    export_ctranslate2,
)
from tests.zoo.pretrained.marian_checkpoints import (  # noqa: E402
    make_checkpoint,
    pieces,
    write_sentencepiece,
)

QUANTIZATIONS = ("float32", "int8")


def _write_vocabularies(loaded, directory):
    """The zoo's token lists, one per line, as the export reads them from a
    run's preprocessor (`source_vocabulary.txt`, `target_vocabulary.txt`)."""
    os.makedirs(directory)
    sides = (loaded.source_vocabulary, loaded.target_vocabulary)
    for name, vocabulary in zip(PREPROCESSOR_FILES[:2], sides, strict=True):
        with open(os.path.join(directory, name), "w", encoding="utf-8") as file:
            file.write("".join(f"{token}\n" for token in vocabulary.tokens))


@pytest.fixture(scope="module")
def translators(tmp_path_factory):
    """quantization -> (the zoo's export, CTranslate2's conversion), and the
    loaded checkpoint, made once."""
    checkpoint = str(tmp_path_factory.mktemp("marian"))
    # CTranslate2's converter shares one vocabulary between the sides.
    make_checkpoint(checkpoint, True, "swish", "safetensors", True, seed=4)
    write_sentencepiece(checkpoint)
    loaded = marian.load_marian(checkpoint)
    vocabularies = str(tmp_path_factory.mktemp("run") / "preprocessor")
    _write_vocabularies(loaded, vocabularies)
    made = {}
    for quantization in QUANTIZATIONS:
        ours = str(tmp_path_factory.mktemp("zoo") / quantization)
        export_ctranslate2(loaded.model, vocabularies, ours, quantization)
        theirs = str(tmp_path_factory.mktemp("ct2") / quantization)
        converter = ctranslate2.converters.TransformersConverter(checkpoint)
        converter.convert(theirs, quantization=quantization)
        made[quantization] = tuple(
            ctranslate2.Translator(path, device="cpu", intra_threads=1)
            for path in (ours, theirs)
        )
    return made, loaded


def _sources(loaded):
    """Zoo source ids ending in [END] (Marian's tokenizer ends a source with
    </s>), as the zoo's tokens and as Marian's pieces."""
    rng = np.random.default_rng(5)
    size = len(loaded.source_vocabulary.tokens)
    rows = [list(rng.integers(5, size, length)) + [3] for length in (7, 4, 9, 2)]
    marian_pieces = {
        v: k for k, v in pieces(loaded.source_vocabulary.marian_size, "s").items()
    }
    tokens = loaded.source_vocabulary.tokens
    marian_ids = loaded.source_vocabulary.marian_ids
    ours = [[tokens[i] for i in row] for row in rows]
    theirs = [[marian_pieces[marian_ids[i]] for i in row] for row in rows]
    return rows, ours, theirs


def _marian_ids(loaded, hypotheses, zoo_tokens):
    vocabulary = loaded.target_vocabulary
    if zoo_tokens:
        index = {token: i for i, token in enumerate(vocabulary.tokens)}
        return [[vocabulary.marian_ids[index[t]] for t in row] for row in hypotheses]
    marian_pieces = pieces(vocabulary.marian_size, "s")
    return [[marian_pieces[t] for t in row] for row in hypotheses]


def _decode(translator, tokens, beam_size):
    results = translator.translate_batch(
        tokens,
        beam_size=beam_size,
        length_penalty=0.0,
        max_decoding_length=12,
        min_decoding_length=0,
    )
    return [result.hypotheses[0] for result in results]


@pytest.mark.parametrize("quantization", QUANTIZATIONS)
@pytest.mark.parametrize("beam_size", [1, 4])
def test_export_decodes_as_ctranslate2s_converter(translators, quantization, beam_size):
    made, loaded = translators
    ours, theirs = made[quantization]
    _, our_tokens, their_tokens = _sources(loaded)
    got = _marian_ids(loaded, _decode(ours, our_tokens, beam_size), True)
    expected = _marian_ids(loaded, _decode(theirs, their_tokens, beam_size), False)
    assert got == expected
    assert max(len(row) for row in got) > 3  # Not all ending at once.


def test_float32_export_greedy_equals_the_imported_model(translators):
    made, loaded = translators
    rows, our_tokens, _ = _sources(loaded)
    width = max(len(row) for row in rows)
    source = np.array([row + [PAD_ID] * (width - len(row)) for row in rows], "int32")
    generated = loaded.model.generate(source, max_new_tokens=12)
    generated = keras.ops.convert_to_numpy(generated).tolist()
    expected = [row[: row.index(3)] if 3 in row else row for row in generated]
    tokens = _decode(made["float32"][0], our_tokens, 1)
    index = {t: i for i, t in enumerate(loaded.target_vocabulary.tokens)}
    assert [[index[t] for t in row] for row in tokens] == expected
