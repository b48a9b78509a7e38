"""`zoo.recipes.trained`: the trained model imports no training code; it
learns, fits and refuses bad data as each family."""

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


def _learn_and_fit(family, data, epochs=4, **options):
    """`TrainedModel.learn` on `data` at the tiny preset, then `fit`; the
    object and its per-epoch losses."""
    import keras

    import zoo

    keras.utils.set_random_seed(1)
    trained = zoo.TrainedModel.learn(
        family, data, preset="tiny", vocabulary_size=60, **options
    )
    history = trained.fit(data, epochs=epochs, verbose=0).history
    return trained, history["loss"]


def test_learn_builds_a_classifier_that_fits_on_labelled_texts():
    from keras_seq.text import ClassificationPreprocessor
    from tests.zoo.recipes.test_classifier import _sentences

    pairs = _sentences(48, 0)
    trained, losses = _learn_and_fit("classifier", pairs)
    config = trained.model.get_config()
    assert isinstance(trained.preprocessor, ClassificationPreprocessor)
    assert config["num_classes"] == 2
    assert config["vocabulary_size"] == trained.preprocessor.tokenizer.vocabulary_size()
    assert losses[-1] < losses[0]
    classified = trained.classify([text for text, _ in pairs[:3]])
    assert [c.label for c in classified] == trained.label([t for t, _ in pairs[:3]])
    for c in classified:
        assert sum(c.probabilities.values()) == pytest.approx(1.0, abs=1e-5)
        assert c.probability == max(c.probabilities.values())


def test_learn_builds_a_language_model_that_fits_on_texts(tmp_path):
    from keras_seq.text import LanguageModelPreprocessor
    from tests.zoo.conftest import write_lines

    texts = write_lines(tmp_path / "lines.txt").read_text().splitlines()
    trained, losses = _learn_and_fit("language-model", texts)
    assert isinstance(trained.preprocessor, LanguageModelPreprocessor)
    config = trained.model.get_config()
    # The window is the model's whole length (the recipe's 128 cut to 32).
    assert trained.preprocessor.sequence_length == config["max_length"] == 32
    assert config["vocabulary_size"] == trained.preprocessor.tokenizer.vocabulary_size()
    assert losses[-1] < losses[0]
    line = trained.generate("you he", max_new_tokens=4, seed=3)
    assert line.startswith("you he") and line == trained.generate(
        "you he", max_new_tokens=4, seed=3
    )


class _Model:
    """What `fit` reads of a model before its checks pass."""

    compiled = False

    def __init__(self, num_classes=None):
        self.config = {} if num_classes is None else {"num_classes": num_classes}

    def get_config(self):
        return self.config


def _unfitted(family):
    import types

    from zoo.recipes.families import FAMILIES
    from zoo.recipes.trained import TrainedModel

    classifies = FAMILIES[family].supports("classify")
    preprocessor = types.SimpleNamespace(tokenizer=None)
    model = _Model(2 if classifies else None)
    return TrainedModel(None, family, model, {}, preprocessor=preprocessor)


def _fit_cases():
    from zoo.recipes.families import FAMILIES

    for name, family in FAMILIES.items():
        if family.translates:
            kind, good = "(source, target) pair", ("Ich.", "I.")
        elif family.supports("classify"):
            kind, good = "(text, label) pair", ("good.", 1)
        else:
            kind, good = "str", "you he"
        many = "a list of " + (kind + "s" if kind != "str" else kind)
        cases = [
            ({"a": 1}, TypeError, f"`data` must be {many}; received dict."),
            (7, TypeError, f"`data` must be {many}; received int."),
            ([], ValueError, "`data` must hold at least one item; received []."),
        ]
        if kind == "str":
            cases += [
                ("you he", TypeError, "`data` must be a list of str; received a "
                 "str (pass ['you he'] for one text)."),
                ([good, 3], TypeError, "`data[1]` must be a str; received int."),
            ]  # fmt: skip
        else:
            second = "label" if family.supports("classify") else "target"
            cases += [
                ("Ich.", TypeError, f"`data` must be {many}; received str."),
                ([good, "Ich."], TypeError,
                 f"`data[1]` must be a {kind}; received str."),
                ([good, (*good, "x")], ValueError,
                 f"`data[1]` must be a {kind}; received 3 items."),
                ([(3, good[1])], TypeError,
                 f"`data[0][0]` ({kind[1:].split(',')[0]}) must be a str; "
                 "received int."),
            ]  # fmt: skip
            if second == "target":
                cases.append(
                    ([("Ich.", None)], TypeError,
                     "`data[0][1]` (target) must be a str; received NoneType.")
                )  # fmt: skip
            else:
                cases += [
                    ([("good.", "pos")], TypeError,
                     "`data[0][1]` must be an int; received 'pos'."),
                    ([("good.", 2)], ValueError, "`data[0][1]` must be at most 1 "
                     "(the last class id); received 2."),
                ]  # fmt: skip
        for index, (data, error, message) in enumerate(cases):
            yield pytest.param(name, data, error, message, id=f"{name}-{index}")


@pytest.mark.parametrize("family, data, error, message", list(_fit_cases()))
def test_fit_refuses_what_its_family_does_not_train_on_in_one_line(
    family, data, error, message
):
    trained = _unfitted(family)
    with pytest.raises(error) as info:
        trained.fit(data)
    assert str(info.value) == message
    # `validation_data` is checked alike, and named.
    with pytest.raises(error) as info:
        trained.fit(_good_data(family), validation_data=data)
    assert str(info.value) == message.replace("`data", "`validation_data")


def _good_data(family):
    from zoo.recipes.families import FAMILIES

    recipe = FAMILIES[family]
    if recipe.translates:
        return [("Ich.", "I.")]
    return [("good.", 1)] if recipe.supports("classify") else ["you he"]
