"""The fast paths read the layers through their public specs, and the
decoding loops ask one policy how to run: both held by the syntax trees
of the code, not by a search of its text."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
# Attributes with a leading underscore that are no layer's private parts:
# PyTorch's count of in-place writes to a tensor (`WeightsVersion`).
NOT_A_LAYER = {"_version"}
# The application's calls of Keras' private model methods, which Keras 3
# offers no public form of (each says why where it is made): the walk of
# nested layers of the quantization record, and the strategy's build. They
# read no layer of this library; any other private read in these modules
# fails the test as it would elsewhere.
APPLICATION_EXCEPTIONS = {
    ("zoo/common.py", "model._flatten_layers"),
    ("zoo/recipes/runtime.py", "model._symbolic_build"),
    ("zoo/recipes/runtime.py", "model._maybe_symbolic_build"),
}
POLICY_MODULES = {
    "keras_seq/generation/loop_policy.py",
    # Where it is defined and picks the attention kernels by it.
    "keras_seq/layers/attention_kernels.py",
}


def _modules(*folders):
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text())


def _imported_names(tree):
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {alias.asname or alias.name for alias in node.names}
    return names


def private_reads(tree):
    """`x._name` reads on anything but `self`, `cls`, `super()` or an
    imported module, as (line, source)."""
    modules = _imported_names(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        if not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        if node.attr in NOT_A_LAYER:
            continue
        base = node.value
        if isinstance(base, ast.Name) and base.id in {"self", "cls", *modules}:
            continue
        if isinstance(base, ast.Call) and ast.unparse(base.func) == "super":
            continue
        found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_private_read_finder_finds_them():
    tree = ast.parse(
        "import keras_seq\n"
        "def f(self, block):\n"
        "    self._own\n"
        "    keras_seq._module_private\n"
        "    super()._parent\n"
        "    block._self_attention._query_dense\n"
    )
    assert private_reads(tree) == [
        (6, "block._self_attention._query_dense"),
        (6, "block._self_attention"),
    ]


def test_no_module_outside_the_layers_reads_a_layers_private_parts():
    """The layers hand out what a fast path needs (`spec()`,
    `keras_seq.layers.layer_spec`); nothing else reaches into them."""
    found = [
        f"{name}:{line}: {source}"
        for name, tree in _modules("keras_seq", "zoo")
        if not name.startswith("keras_seq/layers/")
        for line, source in private_reads(tree)
        if (name, source) not in APPLICATION_EXCEPTIONS
    ]
    assert found == []


def test_every_application_exception_is_still_made():
    """An exception whose call went (replaced by public API) leaves the
    list too."""
    made = {
        (name, source)
        for name, tree in _modules("zoo")
        for _, source in private_reads(tree)
    }
    assert APPLICATION_EXCEPTIONS <= made


def _calls_or_imports(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else None
            if isinstance(func, ast.Name):
                called = func.id
            if called == name:
                yield node.lineno
        elif isinstance(node, ast.ImportFrom):
            if any(alias.name == name for alias in node.names):
                yield node.lineno


def test_only_the_loop_policy_asks_whether_the_backend_compiles():
    """`keras_seq.generation.loop_policy` decides compiled loop or eager
    fast step, the argmax, the masker, top-k and the gather."""
    found = [
        f"{name}:{line}"
        for name, tree in _modules("keras_seq", "zoo", "benchmarks")
        if name not in POLICY_MODULES
        for line in _calls_or_imports(tree, "compiles_with_xla")
    ]
    assert found == []
