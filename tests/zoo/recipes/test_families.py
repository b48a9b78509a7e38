"""`zoo.recipes.families`: the one table of recipes, read by every command."""

import ast
import pathlib
import re
import subprocess
import sys
import types

import pytest

from keras_seq.text import RESERVED_TOKENS
from zoo.recipes import families, model_dir, recipe, run_dir, settings, workflow
from zoo.recipes.families import FAMILIES, supporting

ROOT = pathlib.Path(__file__).resolve().parents[3]
NAMES = tuple(FAMILIES)


def test_the_table_is_the_only_list_of_families():
    tables = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "zoo").rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.match(r"\s*(FAMILIES|TRANSLATORS|BUILDERS|PRESETS|SERVED)\s*=", line)
    ]
    text = (ROOT / "zoo/recipes/families.py").read_text().splitlines()
    assert tables == [
        f"zoo/recipes/families.py:{n}"
        for n, line in enumerate(text, 1)
        if line.startswith("FAMILIES =")
    ], tables


@pytest.mark.parametrize("folder", ["zoo/cli", "zoo/recipes/model_dir.py"])
def test_no_command_or_loader_names_a_family(folder):
    """They ask the table for a capability (`supporting`, `Recipe.supports`)."""
    spelled = re.compile("|".join(rf"[\"']{re.escape(n)}[\"']" for n in NAMES))
    root = ROOT / folder
    paths = sorted(root.rglob("*.py")) if root.is_dir() else [root]
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in paths
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if spelled.search(line)
    ]
    assert found == []


def test_each_family_is_one_recipe_module():
    for name, family in FAMILIES.items():
        assert isinstance(family, recipe.Recipe)
        assert family.name == name
        module = sys.modules[type(family).__module__]
        assert module.RECIPE is family
        assert module.__name__ == "zoo.recipes." + name.replace("-", "_")


def _tests_of(module_name, family_name, tree):
    """Whether a test module's syntax tree imports `module_name` or asks the
    table for `family_name`."""
    package, _, short = module_name.rpartition(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(alias.name == module_name for alias in node.names):
                return True
        elif isinstance(node, ast.ImportFrom):
            if node.module == module_name:
                return True
            if node.module == package and short in {a.name for a in node.names}:
                return True
        elif isinstance(node, ast.Constant) and node.value == family_name:
            return True
    return False


def test_every_family_module_has_its_test_module_at_the_mirrored_path():
    """`zoo/recipes/<module>.py` of each family of the table is tested by
    `tests/zoo/recipes/test_<module>.py`, which imports it (or asks the
    table for the family by name)."""
    missing = []
    for name, family in FAMILIES.items():
        module_name = type(family).__module__
        short = module_name.rpartition(".")[2]
        path = ROOT / "tests/zoo/recipes" / f"test_{short}.py"
        if not path.is_file():
            missing.append(f"{path.relative_to(ROOT)} (none)")
        elif not _tests_of(module_name, name, ast.parse(path.read_text())):
            missing.append(f"{path.relative_to(ROOT)} (does not import {module_name})")
    assert missing == []


def test_the_mirror_check_reads_the_imports():
    assert _tests_of("zoo.recipes.a", "a", ast.parse("from zoo.recipes import a"))
    assert _tests_of("zoo.recipes.a", "a", ast.parse("import zoo.recipes.a"))
    assert _tests_of("zoo.recipes.a", "a", ast.parse("FAMILIES['a']"))
    assert not _tests_of("zoo.recipes.a", "a", ast.parse("from zoo.recipes import b"))
    assert not _tests_of("zoo.recipes.a", "a", ast.parse("# zoo.recipes.a"))


def test_capabilities_follow_from_the_recipes():
    assert supporting("translate") == ("translator", "rnn-translator", "rnn-seq2seq")
    assert supporting("export") == (
        "translator", "classifier", "language-model", "rnn-translator",
    )  # fmt: skip
    assert supporting("classify") == ("classifier",)
    assert supporting("generate") == ("language-model", "rnn-language-model")
    assert supporting("train") == supporting("evaluate") == NAMES
    for name, family in FAMILIES.items():
        assert family.translates == (name in supporting("translate"))
        assert issubclass(family.settings, settings.TrainingSettings)
        files = model_dir.vocabulary_files(name)
        assert files == tuple(map(run_dir.vocabulary_file, family.vocabularies))
    assert model_dir.vocabulary_files("classifier") == ("vocabulary.txt",)


def test_the_families_a_command_takes_are_named_as_an_english_list():
    assert families.listed("translate") == "translator, rnn-translator and rnn-seq2seq"
    assert families.listed("generate", "or") == "language-model or rnn-language-model"
    assert families.listed("classify", "or") == "classifier"
    assert families.listed("no-such-command") == ""


def _joins_of_supporting(tree):
    """The lines of `tree` where a `join` is given `supporting(...)`."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "join":
            continue
        for argument in ast.walk(ast.Module(body=[ast.Expr(a) for a in node.args])):
            if isinstance(argument, ast.Call) and (
                getattr(argument.func, "id", None) == "supporting"
                or getattr(argument.func, "attr", None) == "supporting"
            ):
                yield node.lineno


def test_every_message_names_the_families_through_listed():
    """No message joins `supporting(...)` by itself: `listed` is the one form."""
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "zoo").rglob("*.py"))
        for line in _joins_of_supporting(ast.parse(path.read_text()))
    ]
    assert found == [], found
    joined = ast.parse("m = f\"takes {', '.join(families.supporting('x'))}\"")
    assert list(_joins_of_supporting(joined)) == [1]


@pytest.mark.parametrize("name", NAMES)
def test_every_family_builds_its_tiny_preset_at_the_smallest_vocabulary(name):
    family = FAMILIES[name]
    config = family.presets["tiny"]["config"]
    sizes = {
        k: len(RESERVED_TOKENS) + 1 for k in config if k.endswith("vocabulary_size")
    }
    model = family.builder("tiny", **sizes)
    assert model.count_params() > 0
    assert bool(sizes.get("source_vocabulary_size")) == family.translates


def test_the_table_imports_no_keras_or_tensorflow():
    code = (
        "import sys; from zoo.recipes.families import FAMILIES; "
        "[(r.presets, r.settings()) for r in FAMILIES.values()]; "
        "print(sorted({'keras', 'tensorflow', 'keras_seq.layers'} & set(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_export_refuses_a_family_without_a_signature():
    trained = model_dir.TrainedModel("runs/x", "masked-language-model", None, {}, {})
    with pytest.raises(ValueError, match=r"^`export` serves translator, classifier"):
        workflow.export(trained, "/nowhere", 1)


def test_a_translator_exports_with_the_preprocessor_of_its_run(monkeypatch):
    """The served graph gets the run's `TranslationPreprocessor` itself (its
    saved buckets and `max_length`), not one rebuilt from the tokenizers."""
    from keras_seq import export as exporter

    exported = {}

    def export_translator(model, preprocessor, export_dir, version):
        exported.update(model=model, preprocessor=preprocessor, version=version)
        return f"{export_dir}/{version}"

    monkeypatch.setattr(exporter, "export_translator", export_translator)
    trained = types.SimpleNamespace(
        family="translator", model=object(), preprocessor=object(), run={}
    )
    assert workflow.export(trained, "served", 3) == "served/3"
    assert exported == {
        "model": trained.model,
        "preprocessor": trained.preprocessor,
        "version": 3,
    }
