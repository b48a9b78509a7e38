"""The tutorials' jupytext sources and their notebooks hold the same code."""

import pathlib

import pytest

jupytext = pytest.importorskip("jupytext")

TUTORIALS = pathlib.Path(__file__).resolve().parent.parent / "tutorials"
SOURCES = sorted(TUTORIALS.glob("[0-9][0-9]_*.py"))


def _cells(notebook):
    return [(c.cell_type, c.source.strip()) for c in notebook.cells]


@pytest.mark.parametrize("source", SOURCES, ids=[s.stem for s in SOURCES])
def test_notebook_is_paired_with_its_source(source):
    paired = source.with_suffix(".ipynb")
    assert paired.exists(), f"run `python scripts/run_tutorials.py {source.name[:2]}`"
    assert _cells(jupytext.read(paired)) == _cells(jupytext.read(source)), (
        f"{paired.name} is out of date with {source.name}; "
        f"run `python scripts/run_tutorials.py {source.name[:2]}`"
    )
