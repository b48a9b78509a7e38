"""The README's speed table is what its one results file gives."""

import json
import pathlib

import pytest

from benchmarks import readme_tables

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCE = "benchmarks/results/benchmarks.json"


def _results():
    return json.loads((ROOT / SOURCE).read_text(encoding="utf-8"))


def test_the_readme_speed_table_is_generated_from_its_results_file():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    expected = readme_tables.replace_between_markers(
        readme, readme_tables.render(_results(), SOURCE)
    )
    assert readme == expected, (
        "README.md's speed table differs from its results file; run "
        f"`python -m benchmarks.readme_tables {SOURCE} --readme README.md`"
    )


def test_the_table_names_its_run_and_changes_with_the_results():
    results = _results()
    table = readme_tables.render(results, SOURCE)
    assert results["started"][:10] in table and SOURCE in table
    decoding = results["backends"]["tensorflow"]["decoding"]["1"]
    hub = decoding["keras-hub | cached greedy"]["ms"]
    ours = decoding["keras-seq | cached greedy"]["ms"]
    assert f"{hub / ours:.2f}x" in table
    decoding["keras-seq | cached greedy"]["ms"] = ours / 2  # a newer, faster run
    assert f"{2 * hub / ours:.2f}x" in readme_tables.render(results, SOURCE)


def test_a_readme_without_markers_is_refused():
    with pytest.raises(ValueError, match="speed:start"):
        readme_tables.replace_between_markers("# README\n", "table")
