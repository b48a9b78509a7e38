"""The README's speed table is what its one results file gives."""

import json
import pathlib
import sys

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


def test_the_readme_results_table_is_generated_from_its_records():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    records = readme_tables.read_results(ROOT)
    expected = readme_tables.replace_between_markers(
        readme, readme_tables.render_results(records), "results"
    )
    assert readme == expected, (
        "README.md's results table differs from docs/results; run "
        f"`python -m benchmarks.readme_tables {SOURCE} --readme README.md`"
    )


def test_each_result_names_its_run_and_changes_with_it():
    records = readme_tables.read_results(ROOT)
    table = readme_tables.render_results(records)
    for path, record in records.items():
        assert f"[{record['started'][:10]}]({path})" in table
        low, high = record["load"]["min"], record["load"]["max"]
        assert f"load {low:.1f}-{high:.1f}" in table
        assert min(record["load"]["samples"]) == low
    sentiment = records["docs/results/sentiment.json"]["run"]
    sentiment["test_accuracy"] = 0.5  # a newer run
    assert "test accuracy 50.0%" in readme_tables.render_results(records)
    demo = records["docs/results/demo.json"]["run"]
    assert f"cased BLEU {demo['bleu_beam4']:.2f} with 4 beams" in table


def test_a_record_is_what_the_command_wrote(tmp_path):
    from scripts import record_run

    run = tmp_path / "run"
    command = [
        sys.executable, "-c",
        "import json, os, sys; os.makedirs(sys.argv[1]);"
        "json.dump({'test_accuracy': 0.75}, open(sys.argv[1] + '/run.json', 'w'))",
        str(run),
    ]  # fmt: skip
    record = record_run.record(command, str(run), every=0.05)
    assert record["run"] == {"test_accuracy": 0.75}
    assert record["command"] == " ".join(command)
    assert record["load"]["min"] <= record["load"]["max"]
    assert record["wall_s"] >= 0 and record["processor_s"] >= 0
