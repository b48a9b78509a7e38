"""Case is kept by default on every path: each function of `keras_seq` and
`zoo` with a `lowercase` argument defaults it to False, as `keras-seq train`
does, so a notebook user's tokenizer reads text as the command line's does."""

import ast
import pathlib

import pytest

from keras_seq.text import make_tokenizer, train_wordpiece_vocabulary

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _lowercase_defaults():
    """(where, default source) of every `lowercase=` parameter default."""
    found = []
    for package in ("keras_seq", "zoo"):
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                arguments = node.args
                positional = arguments.posonlyargs + arguments.args
                pairs = list(
                    zip(
                        positional[len(positional) - len(arguments.defaults) :],
                        arguments.defaults,
                    )
                ) + [
                    (a, d)
                    for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults)
                    if d is not None
                ]
                for argument, default in pairs:
                    if argument.arg == "lowercase":
                        where = f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"
                        found.append((where, ast.unparse(default)))
    return found


def test_every_lowercase_argument_defaults_to_false():
    found = _lowercase_defaults()
    assert len(found) >= 4, found  # the tokenizers, the learner, the portable one
    assert [where for where, default in found if default != "False"] == []


def test_the_default_tokenizer_and_vocabulary_keep_case():
    pytest.importorskip("tensorflow")
    vocabulary = train_wordpiece_vocabulary(["The cat saw the Cat."] * 20, 60)
    assert {"The", "the", "Cat", "cat"} <= set(vocabulary)
    tokenizer = make_tokenizer(vocabulary)
    ids = list(tokenizer.tokenize(["The cat"])[0])
    assert ids == [vocabulary.index("The"), vocabulary.index("cat")]
