"""`keras-seq presets`: one line a preset, every family's table."""

from zoo.cli.main import main
from zoo.recipes.families import FAMILIES


def test_every_preset_of_a_family_is_one_line(capsys):
    assert main(["presets", "rnn-translator"]) == 0
    lines = capsys.readouterr().out.splitlines()
    presets = FAMILIES["rnn-translator"].presets
    assert lines[0] == "rnn-translator:" and len(lines) == len(presets) + 2
    for line, (name, entry) in zip(lines[1:], presets.items()):
        assert line.split()[0] == name
        assert f"{entry['params']:,} parameters" in line


def test_without_a_family_every_family_is_listed(capsys):
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    assert [line[:-1] for line in out.splitlines() if not line.startswith(" ")][
        : len(FAMILIES)
    ] == list(FAMILIES)
    assert "small       4,005,696 parameters with vocabularies of 8,000 / 8,000" in out
