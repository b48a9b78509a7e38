"""`zoo.recipes.model_dir`: a run directory loaded as a `TrainedModel`.

The refusals of bad directories are in tests/reliability (test_bad_inputs,
test_safe_loading, test_new_user_path); old directories in
tests/zoo/test_legacy_files.py."""

import json

import keras
import numpy as np
import pytest

import zoo
from keras_seq import text
from zoo.recipes import model_dir, run_dir

VOCABULARY = list(text.RESERVED_TOKENS) + ["good", "bad", "film", "."]


@pytest.fixture(scope="module")
def classifier_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("classifier")
    keras.utils.set_random_seed(0)
    model = zoo.build_classifier("tiny", vocabulary_size=len(VOCABULARY))
    run_dir.RunDir(str(root)).write_vocabularies({"text": VOCABULARY})
    run_dir.RunDir(str(root)).save("classifier", model, {"max_length": 8}, ("text",))
    return root, model


def test_save_then_load_gives_the_same_model_and_vocabulary(classifier_dir):
    root, model = classifier_dir
    run = json.loads((root / run_dir.RUN_FILE).read_text())
    assert run["family"] == "classifier" and run["max_length"] == 8
    assert run["vocabulary_sha256"] == {
        "vocabulary.txt": run_dir.fingerprint(root / "vocabulary.txt")
    }
    trained = model_dir.load_model_dir(str(root))
    assert trained.family == "classifier" and trained.run == run
    assert trained.tokenizers["text"].get_vocabulary() == VOCABULARY
    ids = np.asarray([[5, 6, 7, 0]], "int32")
    np.testing.assert_allclose(trained.model(ids), model(ids), atol=1e-6)
    row = trained.probabilities("good film.")
    assert row.shape == (2,) and abs(float(row.sum()) - 1) < 1e-5


def test_a_family_the_model_is_not_is_refused(classifier_dir, tmp_path):
    root, _ = classifier_dir
    run = json.loads((root / run_dir.RUN_FILE).read_text())
    for name in ("model.keras", "vocabulary.txt"):
        (tmp_path / name).write_bytes((root / name).read_bytes())
    run_dir.write_json(tmp_path / run_dir.RUN_FILE, {**run, "family": "translator"})
    with pytest.raises(ValueError, match=r"names the family 'translator', but"):
        model_dir.load_model_dir(str(tmp_path))
    run_dir.write_json(tmp_path / run_dir.RUN_FILE, {**run, "family": "poet"})
    with pytest.raises(ValueError, match=r"`family` must be one of \('translator'"):
        model_dir.load_model_dir(str(tmp_path))
