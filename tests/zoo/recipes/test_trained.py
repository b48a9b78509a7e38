"""`zoo.recipes.trained`: the trained model imports no training code."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_the_trained_model_imports_no_training_code_or_keras():
    code = (
        "import sys, zoo.recipes.trained; print(sorted(m for m in sys.modules if m in "
        "{'keras', 'tensorflow', 'zoo.recipes.families', 'zoo.recipes.translator', "
        "'zoo.recipes.classifier', 'zoo.recipes.language_model', "
        "'zoo.recipes.workflow'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def _notebook_block():
    """The README's Python block of the notebook path."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    after = readme.split("in a notebook, one object holds a model", 1)[1]
    return after.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readmes_notebook_path_runs_as_written(tmp_path, monkeypatch, capsys):
    """Build, fit on pairs, generate from a string, save, reload and export
    in at most 15 lines; the reloaded model and the SavedModel answer as
    the object that was fitted."""
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "tensorflow":
        pytest.skip("the SavedModel export is TensorFlow's")
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    import zoo

    block = _notebook_block()
    assert len(block.strip().splitlines()) <= 15
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(compile(block, "README.md", "exec"), scope)  # noqa: S102
    # The block's last print: its line ends the output.
    fitted_says = capsys.readouterr().out.rsplit("\n", 2)[-2]
    translator = scope["translator"]
    assert isinstance(translator, zoo.TrainedModel)
    assert os.path.samefile(translator.path, tmp_path / "runs" / "notebook")
    sentences = ["Ich habe keine Zeit.", "Wo ist der Bahnhof?"]
    assert translator.generate(sentences[0]) == fitted_says
    served = tf.saved_model.load(str(tmp_path / "served" / "notebook" / "1"))
    greedy = served.signatures["serving_default"](sentences=tf.constant(sentences))
    assert [t.decode() for t in greedy["translations"].numpy()] == (
        translator.translate(sentences, beam_width=1)
    )


def test_a_model_built_in_python_compiles_fits_and_saves_as_its_family(tmp_path):
    """`TrainedModel.of` a builder's model and a preprocessor: compiled with
    the family's optimizer and masked loss, fitted on pairs (the loss
    falls), saved as a run directory that loads with the same outputs."""
    import keras
    import numpy as np

    import zoo
    from keras_seq import text
    from keras_seq.losses import MaskedSparseCategoricalCrossentropy
    from tests.zoo.conftest import write_pairs

    write_pairs(tmp_path / "pairs.tsv")
    pairs = [
        tuple(line.split("\t"))
        for line in (tmp_path / "pairs.tsv").read_text().splitlines()
    ]
    vocabularies = [
        text.train_wordpiece_vocabulary([p[side] for p in pairs], 200, min_frequency=1)
        for side in (0, 1)
    ]
    preprocessor = text.TranslationPreprocessor(
        *map(text.make_tokenizer, vocabularies), max_length=16
    )
    model = zoo.build_translator(
        "tiny",
        source_vocabulary_size=len(vocabularies[0]),
        target_vocabulary_size=len(vocabularies[1]),
        max_length=16,
    )
    translator = zoo.TrainedModel.of("translator", model, preprocessor)
    translator.compile()
    assert isinstance(model.loss, MaskedSparseCategoricalCrossentropy)
    assert isinstance(model.optimizer, keras.optimizers.Adam)
    history = translator.fit(pairs, epochs=3).history
    assert history["loss"][-1] < history["loss"][0]
    with pytest.raises(ValueError, match="this model is a translator; classify"):
        translator.classify(["Ich"])
    path = translator.save(tmp_path / "run")
    loaded = zoo.load_model_dir(path)
    ids = np.asarray([[5, 6, 7, 0]], "int32")
    inputs = {"encoder_token_ids": ids, "decoder_token_ids": ids}
    np.testing.assert_allclose(loaded.model(inputs), model(inputs), atol=1e-5)
    sentences = [s for s, _ in pairs[:4]]
    assert loaded.generate(sentences) == translator.generate(sentences)
    with pytest.raises(ValueError, match="takes no top_p for it"):
        translator.generate(sentences, top_p=0.9)
