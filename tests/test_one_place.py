"""The ideas written once: what `docs/architecture.md` calls "the one
place" of each, held by a search of the code."""

import ast
import pathlib
import re

from tests.test_imports import _imported, _modules

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _python(*folders):
    for folder in folders:
        yield from sorted((ROOT / folder).rglob("*.py"))


def _matches(pattern, *folders, skip=()):
    return [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _python(*folders)
        if path.relative_to(ROOT).as_posix() not in skip
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(pattern, line)
    ]


def test_padding_masks_come_from_the_one_helper():
    """`keras_seq.masks.padding_mask` builds every padding mask."""
    found = _matches(r"not_equal\(", "keras_seq", "zoo", skip={"keras_seq/masks.py"})
    assert found == []


def _zoo_imports(name, path):
    """What module `name` of `keras_seq` loads from `zoo`: its import
    statements anywhere in the file (the import graph of `test_imports`) and
    the names it hands to `importlib.import_module` or `__import__`."""
    found = {
        imported
        for imported in _imported(name, path, path.name == "__init__.py", _modules())
        if imported.split(".")[0] == "zoo"
    }
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args:
            function = node.func
            called = getattr(function, "attr", getattr(function, "id", ""))
            first = node.args[0]
            if (
                called in ("import_module", "__import__")
                and isinstance(first, ast.Constant)
                and str(first.value).split(".")[0] == "zoo"
            ):
                found.add(first.value)
    return found


def test_the_library_never_imports_the_zoo():
    found = {
        name: sorted(imported)
        for name, (path, _) in _modules().items()
        if name.split(".")[0] == "keras_seq"
        for imported in [_zoo_imports(name, path)]
        if imported
    }
    assert found == {}, f"keras_seq modules that load zoo: {found}"


def test_the_zoo_import_finder_sees_every_form(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text(
        "import importlib\n"
        "def late():\n"
        "    from zoo.recipes import families\n"
        "    return importlib.import_module('zoo.cli'), __import__('zoo')\n"
    )
    assert _zoo_imports("keras_seq.probe", path) == {
        "zoo.recipes.families",
        "zoo.cli",
        "zoo",
    }


def test_decoding_defaults_are_written_once():
    """`keras_seq.defaults` holds the beam width (4) and the length penalty
    (0.6); no signature or setting restates them as numbers."""
    found = _matches(
        r"^\s*(def .*)?(beam_width|length_penalty)(: \w+)?\s*=\s*(4|0\.6)\b",
        "keras_seq",
        "zoo",
    )
    assert found == []


def _tf_function_uses(*folders):
    """Each use of `tf.function` in the code (a call, or a bare decorator,
    which takes no options), by file and line: the call node, or None."""
    for path in _python(*folders):
        tree = ast.parse(path.read_text())
        called = {
            id(node.func): node for node in ast.walk(tree) if isinstance(node, ast.Call)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "function"
                and getattr(node.value, "id", None) == "tf"
            ):
                yield f"{path.relative_to(ROOT)}:{node.lineno}", called.get(id(node))


def test_every_traced_function_skips_autograph():
    """The decoding loops and the tokenizers are traced without autograph
    (`strings_graph`, `_shape_free_xla_function`): they are written in
    loop ops, and converting the source of each function they call is
    most of a first call's tracing."""
    uses = dict(_tf_function_uses("keras_seq", "zoo"))
    assert len(uses) >= 2, uses
    for place, call in uses.items():
        assert call is not None, f"{place}: a bare tf.function traces with autograph"
        options = {k.arg: k.value for k in call.keywords}
        assert "autograph" in options, f"{place}: tf.function without autograph=False"
        assert getattr(options["autograph"], "value", None) is False, place
