"""`.keras` files saved before the zoo's redesign still load and agree.

`tests/fixtures/legacy/` holds one tiny model per family, saved by
`make_legacy.py` together with its outputs on a fixed batch. Keras finds a
class by its registered name, rebuilds it from the stored config and
matches weights by path, so a renamed class, config key or layer breaks
these files; this test is what tells.
"""

import os

import keras
import numpy as np
import pytest

import zoo
from keras_seq.testing import assert_all_close

LEGACY = os.path.join(os.path.dirname(__file__), "..", "fixtures", "legacy")
FAMILIES = {
    "translator": (zoo.Translator, True),
    "language_model": (zoo.LanguageModel, False),
    "classifier": (zoo.Classifier, False),
    "masked_language_model": (zoo.MaskedLanguageModel, False),
    "rnn_translator": (zoo.RNNTranslator, True),
    "rnn_seq2seq": (zoo.RNNSeq2Seq, True),
    "rnn_language_model": (zoo.RNNLanguageModel, False),
}


@pytest.fixture(scope="module")
def reference():
    with np.load(os.path.join(LEGACY, "outputs.npz")) as data:
        return {name: data[name] for name in data.files}


@pytest.mark.parametrize("family", FAMILIES)
def test_legacy_file_loads_with_the_same_outputs(family, reference):
    model_cls, two_inputs = FAMILIES[family]
    model = keras.saving.load_model(os.path.join(LEGACY, f"{family}.keras"))
    assert type(model) is model_cls
    if two_inputs:
        inputs = {
            "encoder_token_ids": reference["source"],
            "decoder_token_ids": reference["target"],
        }
    else:
        inputs = reference["source"]
    outputs = model(inputs, training=False)
    assert_all_close(outputs, reference[family], atol=1e-6, msg=family)
