"""`zoo.recipes.families`: the one family table, read by every command."""

import pathlib
import re

import pytest

from keras_seq.text import RESERVED_TOKENS
from zoo.recipes import families, model_dir, run_dir, settings
from zoo.recipes.families import FAMILIES

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_the_table_is_the_only_list_of_families():
    tables = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "zoo").rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.match(r"\s*(FAMILIES|TRANSLATORS|BUILDERS|PRESETS|SERVED)\s*=", line)
        or re.search(r"\(\s*\"translator\",\s*\"rnn-translator\"", line)
    ]
    assert tables == [
        "zoo/recipes/families.py:" + str(n)
        for n in _lines("FAMILIES", "TRANSLATORS", "SERVED")
    ], tables


def _lines(*names):
    text = (ROOT / "zoo/recipes/families.py").read_text().splitlines()
    return [
        n
        for n, line in enumerate(text, 1)
        for name in names
        if line.startswith(name + " =")
    ]


def test_translators_and_served_families_follow_from_the_table():
    assert families.TRANSLATORS == ("translator", "rnn-translator")
    assert families.SERVED == (
        "translator", "classifier", "language-model", "rnn-translator"
    )  # fmt: skip
    for name, family in FAMILIES.items():
        assert family.translates == (name in families.TRANSLATORS)
        assert issubclass(family.settings, settings.TrainingSettings)
        files = model_dir.vocabulary_files(name)
        assert files == tuple(map(run_dir.vocabulary_file, family.vocabularies))
    assert model_dir.vocabulary_files("classifier") == ("vocabulary.txt",)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_family_builds_its_tiny_preset_at_the_smallest_vocabulary(name):
    family = FAMILIES[name]
    config = family.presets["tiny"]["config"]
    sizes = {
        k: len(RESERVED_TOKENS) + 1 for k in config if k.endswith("vocabulary_size")
    }
    model = family.builder("tiny", **sizes)
    assert model.count_params() > 0
    assert bool(sizes.get("source_vocabulary_size")) == family.translates


def test_export_refuses_a_family_without_a_signature():
    trained = model_dir.TrainedModel("runs/x", "masked-language-model", None, {}, {})
    with pytest.raises(ValueError, match=r"^`export` serves translator, classifier"):
        families.export(trained, "/nowhere", 1)


def test_a_translator_exports_with_the_preprocessor_of_its_run(monkeypatch):
    """The served graph gets the run's `TranslationPreprocessor` itself (its
    saved buckets and `max_length`), not one rebuilt from the tokenizers."""
    import types

    from keras_seq import export as exporter

    exported = {}

    def export_translator(model, preprocessor, export_dir, version):
        exported.update(model=model, preprocessor=preprocessor, version=version)
        return f"{export_dir}/{version}"

    monkeypatch.setattr(exporter, "export_translator", export_translator)
    trained = types.SimpleNamespace(
        family="translator", model=object(), preprocessor=object(), run={}
    )
    assert families.export(trained, "served", 3) == "served/3"
    assert exported == {
        "model": trained.model,
        "preprocessor": trained.preprocessor,
        "version": 3,
    }
