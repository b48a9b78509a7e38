"""Every docstring example in `keras_seq` and `zoo` runs and prints what it says.

The examples are the first code a reader copies, so each one runs here with
`doctest`, in the module's own namespace. An example marked `# doctest:
+SKIP` (one that needs a corpus or a trained run) is not run and not
counted. The printed values do not depend on the backend, but a few
examples print TensorFlow tensors, so this file runs in the TensorFlow
stage.
"""

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

import keras_seq
import zoo

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

# The examples that run; fewer means examples were lost or marked to skip.
MIN_EXAMPLES = 127


def _modules_with_examples():
    """Names of the modules whose source holds a `>>>` prompt."""
    names = []
    for package in (keras_seq, zoo):
        prefix = package.__name__ + "."
        for info in pkgutil.walk_packages(package.__path__, prefix):
            if info.name.endswith(".__main__"):  # Running it is the CLI.
                continue
            origin = importlib.util.find_spec(info.name).origin
            with open(origin, encoding="utf-8") as source:
                if ">>>" in source.read():
                    names.append(info.name)
    return sorted(names)


MODULES = _modules_with_examples()


def _runnable_examples(module):
    tests = doctest.DocTestFinder().find(module)
    return [
        example
        for test in tests
        for example in test.examples
        if not example.options.get(doctest.SKIP)
    ]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_pass(name):
    module = importlib.import_module(name)
    # doctest prints each failing example, its expected and its actual output.
    failed, attempted = doctest.testmod(module, optionflags=FLAGS, report=False)
    assert failed == 0, f"{failed} of {attempted} examples in {name} failed."
    assert attempted == len(_runnable_examples(module))


def test_the_examples_are_all_found():
    assert {"keras_seq.generation.generative_model", "zoo.translator"} <= set(MODULES)
    modules = [importlib.import_module(name) for name in MODULES]
    count = sum(len(_runnable_examples(module)) for module in modules)
    assert count >= MIN_EXAMPLES
