"""`translate --ctranslate2` and `serve --ctranslate2` on a damaged
export: one line naming the file and what is wrong, exit status 1, no
traceback. In this process: what is tested is the message, not the
start-up of a fresh one (tests/export/test_ctranslate2.py runs those)."""

import json
import shutil

import pytest

from tests.zoo.conftest import run_cli

pytest.importorskip("ctranslate2")


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    from tests.zoo.serving import exports

    return exports.export_translator_ctranslate2(tmp_path_factory.mktemp("ct2"))


def _cut(path):
    path.write_bytes(path.read_bytes()[:-100])


def _other_vocabulary(path):
    tokens = path.read_text().splitlines()
    path.write_text("\n".join(tokens + ["other", "words"]) + "\n")


DAMAGES = {
    "empty model.bin": ("model.bin", lambda p: p.write_bytes(b""), "is empty"),
    "truncated model.bin": ("model.bin", _cut, "does not load"),
    "no model.bin": ("model.bin", lambda p: p.unlink(), "No such file"),
    "no config.json": ("config.json", lambda p: p.unlink(), "No such file"),
    "no vocabulary": ("target_vocabulary.txt", lambda p: p.unlink(), "No such file"),
    "another vocabulary": (
        "source_vocabulary.txt",
        _other_vocabulary,
        "a vocabulary of another model",
    ),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_directory_is_one_line(export_dir, tmp_path, damage):
    name, spoil, words = DAMAGES[damage]
    directory = tmp_path / "ct2"
    shutil.copytree(export_dir, directory)
    spoil(directory / name)
    for command in (
        ("translate", "--ctranslate2", directory, "w1 w2."),
        ("serve", "--ctranslate2", directory, "--port", "0"),
    ):
        result = run_cli(*command, in_process=True)
        assert result.returncode == 1, (command, result.stdout, result.stderr)
        lines = (result.stdout + result.stderr).splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"keras-seq: --ctranslate2 {directory}: ")
        assert f"{directory / name}" in lines[0] and words in lines[0], lines[0]


def test_the_vocabulary_sizes_are_named(export_dir, tmp_path):
    directory = tmp_path / "ct2"
    shutil.copytree(export_dir, directory)
    path = directory / "target_vocabulary.txt"
    size = len(json.loads((directory / "shared_vocabulary.json").read_text()))
    path.write_text("\n".join(path.read_text().splitlines()[:-3]) + "\n")
    result = run_cli("translate", "--ctranslate2", directory, "w1.", in_process=True)
    assert result.returncode == 1
    assert f"holds {size - 3} tokens, but model.bin was exported with {size}" in (
        result.stderr
    )
